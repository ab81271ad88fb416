package wrangler_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider"
	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// providerOn is the provider configured for emu's Cloudflare account.
func providerOn(t testing.TB, emu *emulator.Server) integration.Server {
	t.Helper()
	prov, err := provider.New()
	require.NoError(t, err)
	server, err := integration.NewServer(t.Context(), provider.Name, semver.MustParse("1.0.0"), integration.WithProvider(prov))
	require.NoError(t, err)
	require.NoError(t, server.Configure(p.ConfigureRequest{Args: property.NewMap(map[string]property.Value{
		"cloudflareApiToken":   property.New(emulator.DefaultToken).WithSecret(true),
		"cloudflareAccountId":  property.New(emulator.DefaultAccountID),
		"cloudflareApiBaseUrl": property.New(emu.CloudflareBaseURL()),
	})}))
	return server
}

const (
	assetSessionKey = "POST /client/v4/accounts/{account_id}/workers/scripts/{script_name}/assets-upload-session"
	assetUploadKey  = "POST /client/v4/accounts/{account_id}/workers/assets/upload"
)

// assetsProject writes a wrangler project whose [assets] directory holds n
// generated files, and returns the project and the assets directory.
func assetsProject(t testing.TB, name string, n int) (string, string) {
	t.Helper()
	project := t.TempDir()
	public := filepath.Join(project, "public")
	require.NoError(t, os.MkdirAll(filepath.Join(project, "src"), 0o755))
	for i := range n {
		sub := filepath.Join(public, fmt.Sprintf("s%d", i%10))
		require.NoError(t, os.MkdirAll(sub, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.html", i)), fmt.Appendf(nil, "<p>%d</p>", i), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(project, "src", "index.js"),
		[]byte("export default { fetch(request, env) { return env.ASSETS.fetch(request); } };\n"), 0o644))
	config := fmt.Sprintf(`{"name": %q, "main": "src/index.js", "compatibility_date": "2025-08-15",
  "assets": {"directory": "./public", "binding": "ASSETS", "not_found_handling": "404-page"}}`, name)
	require.NoError(t, os.WriteFile(filepath.Join(project, "wrangler.json"), []byte(config), 0o644))
	return project, public
}

// TestWranglerAssets: wrangler deploy with [assets] goes through the
// emulator's session and bucket flow; a redeploy after one changed file
// uploads exactly that file; the provider's Worker over the same directory
// then uploads nothing new, and wrangler finds nothing new after the
// provider uploaded a file of its own.
func TestWranglerAssets(t *testing.T) {
	emu := startEmulator(t)
	server := providerOn(t, emu)
	e := newEnv(t, emu)
	project, public := assetsProject(t, "oi-wr-assets", 30)

	emu.ResetCounts()
	e.must(t, project, "", []string{"deploy"}, "Current Version ID: ")
	counts := emu.Counts()
	assert.Equal(t, 1, counts[assetSessionKey], "%v", counts)
	assert.Equal(t, 30, emu.Inventory().AssetFiles)
	entry := inventoryWorker(t, emu, "oi-wr-assets")
	require.NotNil(t, entry.Assets)
	assert.Equal(t, 30, entry.Assets.Files)
	assert.Contains(t, string(entry.Assets.Config), "404-page")

	require.NoError(t, os.WriteFile(filepath.Join(public, "s3", "f003.html"), []byte("<p>changed</p>"), 0o644))
	emu.ResetCounts()
	e.must(t, project, "", []string{"deploy"}, "Current Version ID: ")
	counts = emu.Counts()
	assert.Equal(t, 1, counts[assetUploadKey], "one changed file, one bucket: %v", counts)
	assert.Equal(t, 31, emu.Inventory().AssetFiles, "exactly one file was uploaded")

	// The provider over wrangler's directory: same content keys, so nothing is uploaded.
	u := resource.NewURN("test", "wrangler", "", cloudflare.WorkerToken, "site")
	check, err := server.Check(p.CheckRequest{Urn: u, Inputs: property.NewMap(map[string]property.Value{
		"name":    property.New("oi-wr-assets-provider"),
		"content": property.New("export default { fetch(r, env) { return env.ASSETS.fetch(r); } };"),
		"assets": property.New(property.NewMap(map[string]property.Value{
			"directory": property.New(public), "binding": property.New("ASSETS")})),
	})})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	emu.ResetCounts()
	created, err := server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	assert.Zero(t, emu.Counts()[assetUploadKey], "the provider recognises every file wrangler uploaded")
	assert.Equal(t, 30, inventoryWorker(t, emu, "oi-wr-assets-provider").Assets.Files)

	// A file the provider uploads first is one wrangler does not send again.
	require.NoError(t, os.WriteFile(filepath.Join(public, "new.html"), []byte("<p>new</p>"), 0o644))
	emu.ResetCounts()
	_, err = server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	assert.Equal(t, 1, emu.Counts()[assetUploadKey])
	emu.ResetCounts()
	e.must(t, project, "", []string{"deploy"}, "Current Version ID: ")
	assert.Zero(t, emu.Counts()[assetUploadKey], "wrangler recognises the provider's upload: %v", emu.Counts())
	assert.Equal(t, 31, inventoryWorker(t, emu, "oi-wr-assets").Assets.Files)
}

func inventoryWorker(t *testing.T, emu *emulator.Server, name string) emulator.WorkerEntry {
	t.Helper()
	for _, w := range emu.Inventory().Workers {
		if w.Name == name {
			return w
		}
	}
	t.Fatalf("no worker %s", name)
	return emulator.WorkerEntry{}
}
