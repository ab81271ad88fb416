package modal

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSplitAndChain reads RUN steps as modal writes them (shlex-quoted
// words, && chains) and refuses what only a shell could run, saying why.
func TestSplitAndChain(t *testing.T) {
	chain, why := splitAndChain(`python -m pip install 'httpx==0.28.1' websockets==15.0.1`)
	assert.Empty(t, why)
	assert.Equal(t, [][]string{{"python", "-m", "pip", "install", "httpx==0.28.1", "websockets==15.0.1"}}, chain)

	chain, why = splitAndChain(`mkdir -p /app/opencode-deps && cd /app/opencode-deps && npm install --ignore-scripts "@opencode-ai/plugin@1.18.18"`)
	assert.Empty(t, why)
	assert.Equal(t, [][]string{{"mkdir", "-p", "/app/opencode-deps"}, {"cd", "/app/opencode-deps"},
		{"npm", "install", "--ignore-scripts", "@opencode-ai/plugin@1.18.18"}}, chain)

	for step, want := range map[string]string{
		"curl -fsSL https://deb.nodesource.com/setup_22.x | bash -":                      "downloads from outside the package registries",
		"echo 'debconf debconf/frontend select Noninteractive' | debconf-set-selections": "a shell pipeline",
		"rm -rf /var/lib/apt/lists/*":                                                    "a shell expansion",
		"echo $HOME":                                                                     "a shell expansion",
		"apt-get update; apt-get install -y git":                                         `the shell operator ";"`,
		"echo 'open":                                                                     "an unterminated quote",
		"&& ls":                                                                          "an empty command",
	} {
		chain, why := splitAndChain(step)
		assert.Nil(t, chain, step)
		assert.Contains(t, why, want, step)
	}

	assert.Equal(t, []string{"--upgrade", "pip"}, isPipInstall([]string{"pip", "install", "--upgrade", "pip"}))
	assert.Equal(t, []string{"x"}, isPipInstall([]string{"python3.12", "-m", "pip", "install", "x"}))
	assert.Nil(t, isPipInstall([]string{"uv", "pip", "install", "x"}))
	assert.Nil(t, isPipInstall([]string{"python", "-m", "venv", "x"}))
}
