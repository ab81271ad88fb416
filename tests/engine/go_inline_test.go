package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pulumi/providertest/pulumitest/assertpreview"
	"github.com/pulumi/providertest/pulumitest/assertrefresh"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/sdk/go/openinspect"
)

// newInlineStack is a Go program run by the Automation API through the
// generated Go SDK: no language plugin is needed, the CLI and the provider
// binary are real, and the backend is a local directory.
func newInlineStack(t *testing.T, name string, program pulumi.RunFunc) auto.Stack {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"work", "backend"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
	}
	project := workspace.Project{
		Name:    tokens.PackageName("oi-engine-" + name),
		Runtime: workspace.NewProjectRuntimeInfo("go", nil),
		Plugins: &workspace.Plugins{Providers: []workspace.PluginOptions{{Name: "openinspect", Path: binDir}}},
	}
	stack, err := auto.UpsertStackInlineSource(t.Context(), "test", project.Name.String(), program,
		auto.Project(project),
		auto.WorkDir(filepath.Join(dir, "work")),
		auto.PulumiHome(filepath.Join(dir, "home")),
		auto.EnvVars(map[string]string{
			"PULUMI_BACKEND_URL":       "file://" + filepath.Join(dir, "backend"),
			"PULUMI_CONFIG_PASSPHRASE": "engine-test",
			"PULUMI_SKIP_UPDATE_CHECK": "true",
		}))
	require.NoError(t, err)
	return stack
}

func TestGoInlineD1Lifecycle(t *testing.T) {
	requirePulumi(t)
	emu := startEmulator(t)
	stack := newInlineStack(t, "go-d1", func(ctx *pulumi.Context) error {
		db, err := openinspect.NewD1Database(ctx, "db", &openinspect.D1DatabaseArgs{
			Name: pulumi.String("oi-engine-go-db"),
		})
		if err != nil {
			return err
		}
		ctx.Export("databaseId", db.DatabaseId)
		return nil
	})
	configureStack(t, &stack, emu)
	ctx := t.Context()

	up, err := stack.Up(ctx)
	require.NoError(t, err)
	dbID, _ := up.Outputs["databaseId"].Value.(string)
	require.NotEmpty(t, dbID)
	d1 := emu.inventory(t).D1
	require.Len(t, d1, 1)
	assert.Equal(t, dbID, d1[0].ID)

	emu.resetCounts(t)
	preview, err := stack.Preview(ctx)
	require.NoError(t, err)
	assertpreview.HasNoChanges(t, preview)
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "a no-op preview must not call Cloudflare: %v", counts)

	refresh, err := stack.Refresh(ctx)
	require.NoError(t, err)
	assertrefresh.HasNoChanges(t, refresh)

	requireNoPlaintext(t, &stack, emulatorToken)

	_, err = stack.Destroy(ctx)
	require.NoError(t, err)
	emu.requireEmpty(t)
}
