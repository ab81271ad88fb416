package sandbox_test

import (
	"os"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// The live suite runs the same lifecycles against real accounts. It is
// opt-in and costs real resources:
//
//	OI_LIVE_MODAL=1 MODAL_TOKEN_ID=... MODAL_TOKEN_SECRET=... MODAL_ENVIRONMENT=oi-live \
//	  go test ./provider/sandbox/ -run Live -v
//	OI_LIVE_DAYTONA=1 DAYTONA_API_KEY=... [DAYTONA_API_URL=...] [DAYTONA_TARGET=...] \
//	  [OI_LIVE_UPSTREAM_CHECKOUT=/src/background-agents] go test ./provider/sandbox/ -run Live -v
//	OI_LIVE_E2B=1 E2B_API_KEY=e2b_... [E2B_API_URL=...] [OI_LIVE_UPSTREAM_CHECKOUT=/src/background-agents] \
//	  go test ./provider/sandbox/ -run Live -v
//	OI_LIVE_VERCEL=1 VERCEL_TOKEN=... VERCEL_PROJECT_ID=prj_... [VERCEL_TEAM_ID=...] [VERCEL_SANDBOX_API_BASE_URL=...] \
//	  [OI_LIVE_UPSTREAM_CHECKOUT=/src/background-agents] go test ./provider/sandbox/ -run Live -v
//	OI_LIVE_OPENCOMPUTER=1 OPENCOMPUTER_API_KEY=... [OPENCOMPUTER_API_URL=https://.../api] \
//	  [OI_LIVE_UPSTREAM_CHECKOUT=/src/background-agents] go test ./provider/sandbox/ -run Live -v
//
// Use a Modal environment of its own (the app name is upstream's, fixed),
// a Daytona organization where a test snapshot may be built, an E2B team
// where a test template may be built, a Vercel project where a test base
// snapshot may be built, and an OpenComputer org where a test
// snapshot may be built (from upstream's builders in
// OI_LIVE_UPSTREAM_CHECKOUT, else the fixtures').

// liveServer is a provider configured from the environment, as `pulumi`
// would configure it for a stack with credentials in env vars.
func liveServer(t *testing.T, flag string, required ...string) *providertest.Harness {
	t.Helper()
	if os.Getenv(flag) != "1" {
		t.Skipf("live test: set %s=1 and %v to run it against a real account", flag, required)
	}
	for _, k := range required {
		if os.Getenv(k) == "" {
			t.Fatalf("%s=1 needs %s", flag, k)
		}
	}
	return &providertest.Harness{Server: providertest.NewServer(t)}
}

// liveBuilder gives the provider a Python and the tools cache for an
// upstream builder, and returns the checkout it builds from
// (OI_LIVE_UPSTREAM_CHECKOUT, else the fixtures') and the API URL (urlEnv,
// else fallback).
func liveBuilder(t *testing.T, h *providertest.Harness, urlEnv, fallback string) (source, apiURL string) {
	t.Helper()
	require.NoError(t, h.Server.Configure(p.ConfigureRequest{Args: property.NewMap(map[string]property.Value{
		"pythonPath": property.New(toolchain.Python(t)),
		"cacheDir":   property.New(toolchain.CacheDir()),
	})}))
	return liveCheckout(t), envOr(urlEnv, fallback)
}

// liveNodeBuilder gives the provider the tools cache for an upstream
// builder run with Node, and returns the checkout it builds from.
func liveNodeBuilder(t *testing.T, h *providertest.Harness) string {
	t.Helper()
	require.NoError(t, h.Server.Configure(p.ConfigureRequest{Args: property.NewMap(map[string]property.Value{
		"cacheDir": property.New(toolchain.CacheDir()),
	})}))
	return liveCheckout(t)
}

// liveCheckout is OI_LIVE_UPSTREAM_CHECKOUT, else the fixtures' checkout.
func liveCheckout(t *testing.T) string {
	t.Helper()
	if source := os.Getenv("OI_LIVE_UPSTREAM_CHECKOUT"); source != "" {
		return source
	}
	return providertest.FixtureCheckout(t)
}

// envOr is the environment's key, else fallback.
func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

// liveImage checks and builds the image under u, deletes it when the test
// ends, and asserts its output key reads want and that an unchanged
// program then diffs clean.
func liveImage(t *testing.T, h *providertest.Harness, u resource.URN, inputs property.Map, key, want string) {
	t.Helper()
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}))
	})
	assert.Equal(t, want, created.Properties.Get(key).AsString())
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges)
}

func TestLiveModalApp(t *testing.T) {
	h := liveServer(t, "OI_LIVE_MODAL", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET")
	require.NoError(t, h.Server.Configure(p.ConfigureRequest{Args: property.NewMap(map[string]property.Value{
		"pythonPath": property.New(toolchain.Python(t)),
		"cacheDir":   property.New(toolchain.CacheDir()),
	})}))
	u := providertest.URN(sandbox.ModalAppToken, "live")
	inputs := modalInputs(t, checkoutCopy(t), "", "sk-live-placeholder")
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}))
	})
	assert.Contains(t, created.Properties.Get("health").AsString(), "healthy")
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges)
}

func TestLiveDaytonaSnapshot(t *testing.T) {
	h := liveServer(t, "OI_LIVE_DAYTONA", "DAYTONA_API_KEY")
	// Upstream's builder (python -m src.bootstrap) from the checkout, with
	// the credentials as the resource's own inputs, as the component passes them.
	source, apiURL := liveBuilder(t, h, "DAYTONA_API_URL", "https://app.daytona.io/api")
	u := providertest.URN(sandbox.DaytonaSnapshotToken, "live")
	inputs := providertest.Props(t, map[string]any{"source": source, "namePrefix": "openinspect-live-test",
		"apiUrl": apiURL, "apiKey": property.New(os.Getenv("DAYTONA_API_KEY")).WithSecret(true), "target": os.Getenv("DAYTONA_TARGET")})
	liveImage(t, h, u, inputs, "state", "active")
}

func TestLiveE2bTemplate(t *testing.T) {
	h := liveServer(t, "OI_LIVE_E2B", "E2B_API_KEY")
	source, apiURL := liveBuilder(t, h, "E2B_API_URL", "https://api.e2b.app")
	u := providertest.URN(sandbox.E2bTemplateToken, "live")
	inputs := providertest.Props(t, map[string]any{"source": source, "namePrefix": "openinspect-live-test",
		"apiUrl": apiURL, "apiKey": os.Getenv("E2B_API_KEY")})
	liveImage(t, h, u, inputs, "status", "ready")
}

func TestLiveOpenComputerSnapshot(t *testing.T) {
	h := liveServer(t, "OI_LIVE_OPENCOMPUTER", "OPENCOMPUTER_API_KEY")
	source := liveNodeBuilder(t, h)
	apiURL := envOr("OPENCOMPUTER_API_URL", "https://app.opencomputer.dev/api")
	u := providertest.URN(sandbox.OpenComputerSnapshotToken, "live")
	inputs := providertest.Props(t, map[string]any{"source": source, "namePrefix": "openinspect-live-test",
		"apiUrl": apiURL, "apiKey": os.Getenv("OPENCOMPUTER_API_KEY")})
	liveImage(t, h, u, inputs, "status", "ready")
}

func TestLiveVercelSnapshot(t *testing.T) {
	h := liveServer(t, "OI_LIVE_VERCEL", "VERCEL_TOKEN", "VERCEL_PROJECT_ID")
	source := liveNodeBuilder(t, h)
	u := providertest.URN(sandbox.VercelSnapshotToken, "live")
	inputs := providertest.Props(t, map[string]any{"source": source, "namePrefix": "openinspect-live-test",
		"apiUrl": os.Getenv("VERCEL_SANDBOX_API_BASE_URL"), "token": os.Getenv("VERCEL_TOKEN"),
		"projectId": os.Getenv("VERCEL_PROJECT_ID"), "teamId": os.Getenv("VERCEL_TEAM_ID")})
	liveImage(t, h, u, inputs, "status", "created")
}
