package wrangler_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cf "github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/cloudflare/cloudflare-go/v4/zones"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// platformProject writes a wrangler project with a custom domain, a zone
// route, [observability], [placement] and [limits].
func platformProject(t *testing.T, name string) string {
	t.Helper()
	project := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(project, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, "src", "index.js"),
		[]byte("export default { fetch() { return new Response('platform'); } };\n"), 0o644))
	config := fmt.Sprintf(`{"name": %q, "main": "src/index.js", "compatibility_date": "2025-08-15",
  "routes": [
    {"pattern": "app.example.com", "custom_domain": true},
    {"pattern": "example.com/api/*", "zone_name": "example.com"}
  ],
  "observability": {"enabled": true, "head_sampling_rate": 1, "logs": {"enabled": true, "invocation_logs": true}},
  "placement": {"mode": "smart"},
  "limits": {"cpu_ms": 50}}`, name)
	require.NoError(t, os.WriteFile(filepath.Join(project, "wrangler.json"), []byte(config), 0o644))
	return project
}

// TestWranglerDomainsAndSettings: wrangler deploy attaches a custom domain
// and a route and stores [observability], [placement] and [limits]; the
// provider's client reads each back as wrangler set it, and `pulumi import`
// of the worker yields those settings as inputs. Then the provider deploys
// a worker with its own domain, route and settings, and wrangler's view of
// it (versions view) agrees; a wrangler redeploy that dropped the domain
// detaches it.
func TestWranglerDomainsAndSettings(t *testing.T) {
	emu := startEmulator(t)
	server := providerOn(t, emu)
	e := newEnv(t, emu)
	ctx := t.Context()
	project := platformProject(t, "oi-wr-platform")

	out := e.must(t, project, "", []string{"deploy"}, "Current Version ID: ")
	assert.Contains(t, out, "app.example.com (custom domain)")
	assert.Contains(t, out, "example.com/api/*")

	// What wrangler deployed, read with the calls the provider makes
	// (cfapi: FindZone, DomainsOfScript, ListRoutes, GetWorkersDev).
	c := cfClient(emu)
	zs, err := c.Zones.List(ctx, zones.ZoneListParams{Name: cf.F("example.com"), Account: cf.F(zones.ZoneListParamsAccount{ID: cf.F(acct)})})
	require.NoError(t, err)
	require.Len(t, zs.Result, 1)
	zoneID := zs.Result[0].ID
	domains := func(script string) []string {
		page, err := c.Workers.Domains.List(ctx, workers.DomainListParams{AccountID: cf.F(acct), Service: cf.F(script)})
		require.NoError(t, err)
		var hosts []string
		for _, d := range page.Result {
			assert.Equal(t, zoneID, d.ZoneID)
			hosts = append(hosts, d.Hostname)
		}
		return hosts
	}
	assert.Equal(t, []string{"app.example.com"}, domains("oi-wr-platform"))
	routes, err := c.Workers.Routes.List(ctx, workers.RouteListParams{ZoneID: cf.F(zoneID)})
	require.NoError(t, err)
	require.Len(t, routes.Result, 1)
	assert.Equal(t, "example.com/api/*", routes.Result[0].Pattern)
	assert.Equal(t, "oi-wr-platform", routes.Result[0].Script)
	sub, err := c.Workers.Scripts.Subdomain.Get(ctx, "oi-wr-platform", workers.ScriptSubdomainGetParams{AccountID: cf.F(acct)})
	require.NoError(t, err)
	assert.False(t, sub.Enabled, "wrangler leaves workers.dev off for a worker with routes")

	// pulumi import of wrangler's worker: the provider reads wrangler's
	// settings (GET settings) into inputs, and they pass Check.
	u := resource.NewURN("test", "wrangler", "", cloudflare.WorkerToken, "imported")
	read, err := server.Read(p.ReadRequest{ID: "oi-wr-platform", Urn: u})
	require.NoError(t, err)
	assert.Equal(t, "smart", read.Inputs.Get("placement").AsMap().Get("mode").AsString())
	assert.Equal(t, 50.0, read.Inputs.Get("limits").AsMap().Get("cpuMs").AsNumber())
	obs := read.Inputs.Get("observability").AsMap()
	assert.True(t, obs.Get("enabled").AsBool())
	assert.True(t, obs.Get("logs").AsMap().Get("invocationLogs").AsBool())
	imported, err := server.Check(p.CheckRequest{Urn: u, Inputs: read.Inputs.Set("content", property.New("export default {}"))})
	require.NoError(t, err)
	assert.Empty(t, imported.Failures)

	// The provider's own worker: wrangler reads its settings back.
	pu := resource.NewURN("test", "wrangler", "", cloudflare.WorkerToken, "prov")
	inputs := property.NewMap(map[string]property.Value{
		"name":          property.New("oi-wr-prov"),
		"content":       property.New("export default { fetch() { return new Response('provider'); } };"),
		"workersDev":    property.New(false),
		"placement":     property.New(property.NewMap(map[string]property.Value{"mode": property.New("smart")})),
		"limits":        property.New(property.NewMap(map[string]property.Value{"cpuMs": property.New(75.0)})),
		"observability": property.New(property.NewMap(map[string]property.Value{"enabled": property.New(true)})),
		"domains": property.New([]property.Value{property.New(property.NewMap(map[string]property.Value{
			"hostname": property.New("prov.example.com"), "zoneName": property.New("example.com")}))}),
		"routes": property.New([]property.Value{property.New(property.NewMap(map[string]property.Value{
			"pattern": property.New("example.com/prov/*"), "zoneId": property.New(zoneID)}))}),
	})
	check, err := server.Check(p.CheckRequest{Urn: pu, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	created, err := server.Create(p.CreateRequest{Urn: pu, Properties: check.Inputs})
	require.NoError(t, err)
	status := e.must(t, project, "", []string{"deployments", "status", "--name", "oi-wr-prov"}, "Version(s):")
	versionID := versionIn(t, status)
	view := e.must(t, project, "", []string{"versions", "view", versionID, "--name", "oi-wr-prov", "--json"})
	var version struct {
		Resources struct {
			Script struct {
				PlacementMode string `json:"placement_mode"`
			} `json:"script"`
			ScriptRuntime struct {
				Limits map[string]int `json:"limits"`
			} `json:"script_runtime"`
		} `json:"resources"`
	}
	require.NoError(t, json.Unmarshal([]byte(view[strings.Index(view, "{"):]), &version), view)
	assert.Equal(t, "smart", version.Resources.Script.PlacementMode)
	assert.Equal(t, 75, version.Resources.ScriptRuntime.Limits["cpu_ms"])
	hosts := map[string]string{}
	for _, d := range emu.Inventory().Domains {
		hosts[d.Hostname] = d.Service
	}
	assert.Equal(t, map[string]string{"app.example.com": "oi-wr-platform", "prov.example.com": "oi-wr-prov"}, hosts)

	// wrangler redeploys without the custom domain: its scope replaces the script's domains.
	config, err := os.ReadFile(filepath.Join(project, "wrangler.json"))
	require.NoError(t, err)
	trimmed := strings.Replace(string(config), `{"pattern": "app.example.com", "custom_domain": true},`, "", 1)
	require.NotEqual(t, string(config), trimmed)
	trimmed = strings.Replace(trimmed, `"routes": [`, `"routes": [{"pattern": "other.example.com", "custom_domain": true},`, 1)
	require.NoError(t, os.WriteFile(filepath.Join(project, "wrangler.json"), []byte(trimmed), 0o644))
	e.must(t, project, "", []string{"deploy"}, "other.example.com (custom domain)")
	assert.Equal(t, []string{"other.example.com"}, domains("oi-wr-platform"))

	// The provider's destroy detaches its domain and route and leaves wrangler's.
	require.NoError(t, server.Delete(p.DeleteRequest{ID: created.ID, Urn: pu, Properties: created.Properties}))
	inv := emu.Inventory()
	assert.False(t, slices.ContainsFunc(inv.Domains, func(d emulator.DomainEntry) bool { return d.Service == "oi-wr-prov" }))
	assert.False(t, slices.ContainsFunc(inv.Routes, func(r emulator.RouteEntry) bool { return r.Script == "oi-wr-prov" }))
	assert.Len(t, inv.Domains, 1)
	assert.Len(t, inv.Routes, 1)
	assert.Zero(t, e.sentinel.conns.Load(), "wrangler reached no host but the emulator")
}

// versionIn finds the first version ID in `wrangler deployments status`.
func versionIn(t *testing.T, out string) string {
	t.Helper()
	for _, f := range strings.Fields(out) {
		if len(f) == 36 && strings.Count(f, "-") == 4 {
			return f
		}
	}
	t.Fatalf("no version ID in:\n%s", out)
	return ""
}
