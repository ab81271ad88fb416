package drift

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/config"
)

// fallsBack finds the environment variable a config key's description names.
var fallsBack = regexp.MustCompile(`Falls back to ([A-Z][A-Z0-9_]+)`)

// TestRegistryDocsListEveryConfigKey checks docs/installation-configuration.md
// has a table row for every config key in schema.json, with the environment
// variable its description names and whether it is secret, and that those
// variables are exactly the ones the provider reads.
func TestRegistryDocsListEveryConfigKey(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "schema.json"))
	require.NoError(t, err)
	var spec schema.PackageSpec
	require.NoError(t, json.Unmarshal(raw, &spec))
	doc, err := os.ReadFile(filepath.Join(root, "docs", "installation-configuration.md"))
	require.NoError(t, err)
	require.NotEmpty(t, spec.Config.Variables)

	var envs []string
	for key, v := range spec.Config.Variables {
		m := fallsBack.FindStringSubmatch(v.Description)
		require.NotNil(t, m, "the description of %s names no environment variable", key)
		envs = append(envs, m[1])
		secret := "no"
		if v.Secret {
			secret = "yes"
		}
		row := "| `openinspect:" + key + "` | `" + m[1] + "` | " + secret + " |"
		assert.Contains(t, string(doc), row, "docs/installation-configuration.md lacks the row of %s", key)
	}
	assert.ElementsMatch(t, config.EnvVars(), envs, "the descriptions name the variables the provider reads")

	for _, page := range []string{"_index.md", "installation-configuration.md"} {
		raw, err := os.ReadFile(filepath.Join(root, "docs", page))
		require.NoError(t, err)
		front, _, ok := strings.Cut(strings.TrimPrefix(string(raw), "---\n"), "\n---\n")
		require.True(t, ok && strings.HasPrefix(string(raw), "---\n"), "%s starts with registry front matter", page)
		for _, field := range []string{"title: ", "meta_desc: ", "layout: package"} {
			assert.Contains(t, front, field, "%s front matter", page)
		}
	}
}
