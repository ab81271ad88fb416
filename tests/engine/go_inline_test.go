package engine

import (
	"os"
	"path/filepath"
	"testing"

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
	t.Parallel()
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

	up, err := previewUpStack(ctx, t, stack)
	require.NoError(t, err)
	dbID, _ := up.Outputs["databaseId"].Value.(string)
	require.NotEmpty(t, dbID)
	d1 := emu.inventory(t).D1
	require.Len(t, d1, 1)
	assert.Equal(t, dbID, d1[0].ID)

	requireNoOpPreview(t, stack, emu)

	refresh, err := stack.Refresh(ctx)
	require.NoError(t, err)
	assertrefresh.HasNoChanges(t, refresh)

	requireNoPlaintext(t, &stack, emulatorToken)

	_, err = stack.Destroy(ctx)
	require.NoError(t, err)
	emu.requireEmpty(t)
}

// TestGoInlineWorkerPair drives the generated Go SDK's nested types (binding
// lists, a file asset, secrets) through the engine: two workers that bind each
// other plus a D1 binding, created in one up; an unchanged preview; destroy.
func TestGoInlineWorkerPair(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	script := filepath.Join(repoRoot(), "tests", "fixtures", "upstream", "packages", "control-plane", "dist", "index.js")
	stack := newInlineStack(t, "go-workers", func(ctx *pulumi.Context) error {
		db, err := openinspect.NewD1Database(ctx, "db", &openinspect.D1DatabaseArgs{Name: pulumi.String("oi-go-db")})
		if err != nil {
			return err
		}
		cp, err := openinspect.NewWorker(ctx, "controlPlane", &openinspect.WorkerArgs{
			Name:   pulumi.String("oi-go-control-plane"),
			Script: pulumi.NewFileAsset(script),
			D1Databases: openinspect.D1BindingArray{openinspect.D1BindingArgs{
				Binding: pulumi.String("DB"), DatabaseId: db.DatabaseId,
			}},
			DurableObjects: openinspect.DurableObjectBindingArray{openinspect.DurableObjectBindingArgs{
				Binding: pulumi.String("SESSION"), ClassName: pulumi.String("SessionDO"),
			}},
			Services: openinspect.ServiceBindingArray{openinspect.ServiceBindingArgs{
				Binding: pulumi.String("BOT"), Service: pulumi.String("oi-go-bot"),
			}},
			Secrets: pulumi.StringMap{"TOKEN_ENCRYPTION_KEY": pulumi.ToSecret(pulumi.String(anthropicKey)).(pulumi.StringOutput)},
		})
		if err != nil {
			return err
		}
		_, err = openinspect.NewWorker(ctx, "bot", &openinspect.WorkerArgs{
			Name:    pulumi.String("oi-go-bot"),
			Content: pulumi.String("export default { fetch(r, env) { return env.CONTROL_PLANE.fetch(r) } }"),
			Services: openinspect.ServiceBindingArray{openinspect.ServiceBindingArgs{
				Binding: pulumi.String("CONTROL_PLANE"), Service: pulumi.String("oi-go-control-plane"),
			}},
		})
		if err != nil {
			return err
		}
		ctx.Export("url", cp.Url)
		return nil
	})
	configureStack(t, &stack, emu)
	ctx := t.Context()

	up, err := previewUpStack(ctx, t, stack)
	require.NoError(t, err)
	assert.Equal(t, "https://oi-go-control-plane.openinspect-emulator.workers.dev", up.Outputs["url"].Value)
	inv := emu.inventory(t)
	require.Len(t, inv.Workers, 2)
	for _, w := range inv.Workers {
		want := map[string]int{"oi-go-control-plane": 4, "oi-go-bot": 1}[w.Name]
		assert.Equal(t, want, w.Bindings, "%s has all its bindings", w.Name)
	}
	requireNoPlaintext(t, &stack, anthropicKey)

	requireNoOpPreview(t, stack, emu)

	_, err = stack.Destroy(ctx)
	require.NoError(t, err)
	emu.requireEmpty(t)
}
