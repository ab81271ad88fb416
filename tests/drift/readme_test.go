package drift

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeResourcesTableNamesWorkerInputs: the Resources table's row for
// the Worker (docs/component.md, where the README's table moved) names every
// input schema.json gives it, in backticks, so an input added to the resource
// is also added to its one-line reference.
func TestReadmeResourcesTableNamesWorkerInputs(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "schema.json"))
	require.NoError(t, err)
	var spec schema.PackageSpec
	require.NoError(t, json.Unmarshal(raw, &spec))
	readme, err := os.ReadFile(filepath.Join(root, "docs", "component.md"))
	require.NoError(t, err)
	var row string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| `openinspect:index:Worker` |") {
			row = line
		}
	}
	require.NotEmpty(t, row, "docs/component.md has no Resources table row for openinspect:index:Worker")
	worker := spec.Resources["openinspect:index:Worker"]
	require.NotEmpty(t, worker.InputProperties)
	for name := range worker.InputProperties {
		assert.Contains(t, row, "`"+name+"`", "docs/component.md's Worker row does not name the input %s", name)
	}
}

// TestReadmeIsAGuide: the README stays a guide of at most 200 lines, and
// every docs/ page it links to exists.
func TestReadmeIsAGuide(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	readme := string(b)
	assert.LessOrEqual(t, strings.Count(readme, "\n"), 200, "README.md lines")
	for _, part := range strings.Split(readme, "](docs/")[1:] {
		page := strings.SplitN(strings.SplitN(part, ")", 2)[0], "#", 2)[0]
		assert.FileExists(t, filepath.Join(root, "docs", page), "README links docs/%s", page)
	}
}

// markdownLink is an inline link's target: [text](target).
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestMarkdownLinksResolve: every relative link in every Markdown file git
// tracks names a file or directory of the repository (its #fragment aside).
// docs/_index.md is a Pulumi Registry page and links its sibling
// registry-style, without the extension, which the registry serves.
func TestMarkdownLinksResolve(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	for _, doc := range trackedFiles(t, root, "*.md") {
		raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
		require.NoError(t, err)
		prose := fencedBlock.ReplaceAllString(string(raw), "")
		for _, m := range markdownLink.FindAllStringSubmatch(prose, -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, ":") {
				continue // a fragment of the page itself, or a URL
			}
			checked++
			file := filepath.Join(root, filepath.FromSlash(path.Dir(doc)), filepath.FromSlash(target))
			if _, err := os.Stat(file); err == nil {
				continue
			}
			if _, err := os.Stat(file + ".md"); err == nil && strings.HasSuffix(doc, "_index.md") {
				continue
			}
			t.Errorf("%s links %s, which does not exist", doc, m[1])
		}
	}
	assert.Greater(t, checked, 20, "the Markdown files' links were found")
}
