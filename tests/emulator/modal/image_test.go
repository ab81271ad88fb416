package modal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
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

// TestMaterialiseOncePerRecipe starts the same recipe's materialisation
// from several sandboxes at once: one makes the tree, the others wait and
// reuse it; a later emulator sharing the cache reuses it too, and another
// recipe gets its own. Steps that cannot be materialised are noted with
// the reason, and nothing of a half-built tree (no image.json) is reused.
func TestMaterialiseOncePerRecipe(t *testing.T) {
	cache := t.TempDir()
	var mu sync.Mutex
	var made []string
	newService := func() *Service {
		m, err := New(Options{Sandboxes: SandboxRuntime{ImageCache: cache}, Logf: func(format string, args ...any) {
			if strings.HasPrefix(format, "modal: materialising") {
				mu.Lock()
				made = append(made, fmt.Sprintf(format, args...))
				mu.Unlock()
			}
		}}, t.TempDir(), core.New())
		require.NoError(t, err)
		return m
	}
	recipe := []string{"apt-get update", "apt-get install -y git no-such-package-openinspect",
		"mkdir -p /app/staged && cd /app/staged", "curl -fsSL https://example.com/x.sh | bash -", "make all"}
	m := newService()
	trees := make([]imageTree, 4)
	var wg sync.WaitGroup
	for i := range trees {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tree, err := m.materialise(context.Background(), "", recipe)
			assert.NoError(t, err)
			trees[i] = tree
		}()
	}
	wg.Wait()
	require.Len(t, made, 1, "one materialisation for four sandboxes")
	for _, tree := range trees[1:] {
		assert.Equal(t, trees[0], tree)
	}
	assert.FileExists(t, filepath.Join(trees[0].Dir, "image.json"))
	assert.DirExists(t, filepath.Join(trees[0].Dir, "app", "staged"), "mkdir under /app followed")
	notes := strings.Join(trees[0].Notes, "\n")
	assert.Contains(t, notes, "not installed on the host, so not in the sandbox (it runs on the host's /usr): no-such-package-openinspect")
	assert.NotContains(t, notes, ": git\n", "git is on the host")
	assert.Contains(t, notes, "RUN curl -fsSL https://example.com/x.sh | bash -: not run: a pipeline that runs what it downloads")
	assert.Contains(t, notes, "RUN make all: not run: make is not a package install")

	// Another emulator, the same cache: reused.
	again, err := newService().materialise(context.Background(), "", recipe)
	require.NoError(t, err)
	assert.Equal(t, trees[0], again)
	assert.Len(t, made, 1)
	// A tree left half-built is made again; another recipe is another tree.
	require.NoError(t, os.Remove(filepath.Join(trees[0].Dir, "image.json")))
	_, err = m.materialise(context.Background(), "", recipe)
	require.NoError(t, err)
	assert.Len(t, made, 2)
	other, err := m.materialise(context.Background(), "", recipe[:2])
	require.NoError(t, err)
	assert.NotEqual(t, trees[0].Dir, other.Dir)
	// A pip step without the sandboxes' Python is noted, not run.
	pip, err := m.materialise(context.Background(), "", []string{"python -m pip install httpx==0.28.1"})
	require.NoError(t, err)
	assert.Empty(t, pip.VenvBin)
	assert.Contains(t, strings.Join(pip.Notes, "\n"), "a pip install needs the sandboxes' Python")
}

// TestMaterialiseWritesEchoedFiles lays out a RUN step writing echo's line
// into a file under /app (upstream's image writes /app/opencode-deps's
// package.json so before its npm install there), and notes the redirects
// it does not run: another command's output, an append, a file elsewhere,
// a directory the recipe did not make.
func TestMaterialiseWritesEchoedFiles(t *testing.T) {
	chain, why := splitAndChain(`echo '{"name":"opencode-tools","type":"module"}' > /app/opencode-deps/package.json`)
	require.Empty(t, why)
	text, file, ok := echoTo(chain[0])
	require.True(t, ok)
	assert.Equal(t, []string{`{"name":"opencode-tools","type":"module"}`}, text)
	assert.Equal(t, "/app/opencode-deps/package.json", file)
	_, _, ok = echoTo([]string{"echo", "'>'", "x"})
	assert.False(t, ok, "a quoted > is a word")

	m, err := New(Options{Sandboxes: SandboxRuntime{ImageCache: t.TempDir()}}, t.TempDir(), core.New())
	require.NoError(t, err)
	tree, err := m.materialise(context.Background(), "", []string{
		"mkdir -p /app/opencode-deps",
		`echo '{"name":"opencode-tools","type":"module"}' > /app/opencode-deps/package.json`,
		"cd /app && echo second line > opencode-deps/notes.txt",
		"echo 'cache: v61' > /dev/null",
		"printf x > /app/opencode-deps/printf.txt",
		"echo x >> /app/opencode-deps/appended.txt",
	})
	require.NoError(t, err)
	dir := tree.AppDirs["/app/opencode-deps"]
	require.NotEmpty(t, dir, "the directory is laid out into each sandbox: %+v", tree)
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	require.NoError(t, err)
	assert.Equal(t, "{\"name\":\"opencode-tools\",\"type\":\"module\"}\n", string(b))
	b, err = os.ReadFile(filepath.Join(dir, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "second line\n", string(b))
	for _, name := range []string{"printf.txt", "appended.txt"} {
		assert.NoFileExists(t, filepath.Join(dir, name))
	}
	notes := strings.Join(tree.Notes, "\n")
	assert.Contains(t, notes, "echo > /dev/null: only files under /app are laid out")
	assert.Contains(t, notes, `RUN printf x > /app/opencode-deps/printf.txt: not run: the shell operator ">"`)
	assert.Contains(t, notes, `RUN echo x >> /app/opencode-deps/appended.txt: not run: the shell operator ">"`)

	// Upstream's image writes /app/image-version.txt: /app itself is the
	// sandbox's own, so that is noted; so is a directory never made.
	other, err := m.materialise(context.Background(), "", []string{"echo x > /app/missing/file", "echo 'Image rebuilt' > /app/image-version.txt"})
	require.NoError(t, err)
	assert.Empty(t, other.AppDirs)
	notes = strings.Join(other.Notes, "\n")
	assert.Contains(t, notes, "echo > /app/missing/file: not run: the recipe made no directory /app/missing")
	assert.Contains(t, notes, "echo > /app/image-version.txt: not run: only files in a directory under /app are laid out")
}
