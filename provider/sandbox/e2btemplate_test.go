package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// e2bCheckout copies the fixture builder and runtime into a checkout.
func e2bCheckout(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	src := filepath.Join("..", "..", "tests", "fixtures", "upstream", "packages")
	for _, pkg := range []string{"e2b-infra", "sandbox-runtime"} {
		require.NoError(t, os.CopyFS(filepath.Join(root, "packages", pkg), os.DirFS(filepath.Join(src, pkg))))
	}
	return root
}

func TestE2bTemplateNameFollowsWhatTheBuildReads(t *testing.T) {
	root := e2bCheckout(t)
	args := E2bTemplateArgs{ImageInputs: ImageInputs{Source: root, NamePrefix: "oi-test"}, APIKey: "e2b_00"}
	first, err := planTemplate(args)
	require.NoError(t, err)
	assert.Regexp(t, `^oi-test-[0-9a-f]{12}$`, first.name)
	assert.False(t, first.override)

	// Caches, a local .venv and a staged runtime copy beside the builder do not count.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "packages/e2b-infra/.venv/lib"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "packages/e2b-infra/.venv/lib/x.py"), []byte("x"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "packages/e2b-infra/sandbox_runtime"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "packages/e2b-infra/sandbox_runtime/a.py"), []byte("x"), 0o644))
	same, err := planTemplate(args)
	require.NoError(t, err)
	assert.Equal(t, first.name, same.name)

	for _, change := range []func(){
		func() {
			require.NoError(t, os.WriteFile(filepath.Join(root, "packages/sandbox-runtime/src/sandbox_runtime/new.py"), []byte("\n"), 0o644))
		},
		func() {
			require.NoError(t, os.WriteFile(filepath.Join(root, "packages/e2b-infra/e2b.Dockerfile"), []byte("FROM python:3.13-slim\n"), 0o644))
		},
		func() { mem := 8192; args.MemoryMB = &mem },
	} {
		change()
		next, err := planTemplate(args)
		require.NoError(t, err)
		assert.NotEqual(t, first.name, next.name)
		first = next
	}

	id := "my-own-template"
	args.TemplateID = &id
	args.Source = ""
	over, err := planTemplate(args)
	require.NoError(t, err)
	assert.Equal(t, "my-own-template", over.name)
	assert.True(t, over.override)
	assert.Empty(t, over.digest)
}

func TestE2bTemplateBuilderMissing(t *testing.T) {
	root := e2bCheckout(t)
	require.NoError(t, os.Remove(filepath.Join(root, "packages/e2b-infra/uv.lock")))
	_, err := e2bBuilderRoot(root)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "packages/e2b-infra/uv.lock")
}
