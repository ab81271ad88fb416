package modalapi

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	modal "github.com/modal-labs/libmodal/modal-go"
	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emumodal "github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
)

func startEmulator(t *testing.T, opts emulator.Options) *emulator.Server {
	t.Helper()
	s, err := emulator.Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

func newClient(t *testing.T, s *emulator.Server, env string) *Client {
	t.Helper()
	c, err := New(Options{TokenID: emumodal.DefaultTokenID, TokenSecret: emumodal.DefaultTokenSecret, Environment: env, ServerURL: s.URL()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// deployApp publishes an app with web endpoints the way `modal deploy`
// does; the real CLI does the same in modaldeploy's end-to-end test.
func deployApp(t *testing.T, c *Client, name string, web ...string) string {
	t.Helper()
	ctx := context.Background()
	raw, _, err := c.connect(ctx)
	require.NoError(t, err)
	created, err := raw.AppCreate(ctx, pb.AppCreateRequest_builder{Description: name, EnvironmentName: c.opts.Environment, AppState: pb.AppState_APP_STATE_INITIALIZING}.Build())
	require.NoError(t, err)
	ids := map[string]string{}
	for _, fn := range web {
		wc := pb.WebhookConfig_builder{Type: pb.WebhookType_WEBHOOK_TYPE_FUNCTION, Method: "GET"}.Build()
		resp, err := raw.FunctionCreate(ctx, pb.FunctionCreateRequest_builder{
			AppId: created.GetAppId(), Function: pb.Function_builder{FunctionName: fn, WebhookConfig: wc}.Build(),
		}.Build())
		require.NoError(t, err)
		ids[fn] = resp.GetFunctionId()
	}
	_, err = raw.AppPublish(ctx, pb.AppPublishRequest_builder{AppId: created.GetAppId(), Name: name, AppState: pb.AppState_APP_STATE_DEPLOYED, FunctionIds: ids}.Build())
	require.NoError(t, err)
	return created.GetAppId()
}

func TestNewValidatesWithoutNetwork(t *testing.T) {
	for _, bad := range []Options{
		{TokenSecret: "s"},
		{TokenID: "i"},
		{TokenID: "i", TokenSecret: "s", ServerURL: "grpc://x"},
		{TokenID: "i", TokenSecret: "s", ServerURL: "https://api.modal.com/v1"},
	} {
		_, err := New(bad)
		assert.Error(t, err, "%+v", bad)
	}
	// Nothing listens here: New must not notice.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c, err := New(Options{TokenID: "i", TokenSecret: "s", ServerURL: "http://" + addr})
	require.NoError(t, err)
	assert.Equal(t, addr, c.target)
	d, err := New(Options{TokenID: "i", TokenSecret: "s"})
	require.NoError(t, err)
	assert.Equal(t, "api.modal.com:443", d.target)
	require.NoError(t, c.Close())
	_, err = c.Environment(context.Background())
	assert.ErrorContains(t, err, "closed")
}

func TestAuthFailure(t *testing.T) {
	s := startEmulator(t, emulator.Options{})
	c, err := New(Options{TokenID: emumodal.DefaultTokenID, TokenSecret: "as-not-the-secret", ServerURL: s.URL()})
	require.NoError(t, err)
	defer c.Close()
	err = c.UpsertSecret(context.Background(), "internal-api", map[string]string{"MODAL_API_SECRET": "value-that-must-not-leak"})
	require.Error(t, err)
	assert.True(t, Unauthenticated(err), "%v", err)
	assert.NotContains(t, err.Error(), "as-not-the-secret")
	assert.NotContains(t, err.Error(), "value-that-must-not-leak")
	assert.True(t, s.Inventory().Modal.Empty())
	// The failure is not cached: a second call asks again.
	before := s.Modal().Calls()
	_, err = c.Environment(context.Background())
	require.Error(t, err)
	assert.Greater(t, s.Modal().Calls(), before)
}

func TestEnvironmentAndSecrets(t *testing.T) {
	s := startEmulator(t, emulator.Options{})
	ctx := context.Background()
	main, staging := newClient(t, s, ""), newClient(t, s, "staging")

	info, err := main.Environment(ctx)
	require.NoError(t, err)
	assert.Equal(t, EnvironmentInfo{Name: "main", Workspace: emumodal.DefaultWorkspace}, info)
	info, err = staging.Environment(ctx)
	require.NoError(t, err)
	assert.Equal(t, EnvironmentInfo{Name: "staging", Workspace: emumodal.DefaultWorkspace, WebSuffix: "staging"}, info)

	keys := []string{"MODAL_API_SECRET", "ALLOWED_CONTROL_PLANE_HOSTS"}
	require.NoError(t, staging.UpsertSecret(ctx, "internal-api", map[string]string{"MODAL_API_SECRET": "s1", "STALE": "x"}))
	require.NoError(t, staging.UpsertSecret(ctx, "internal-api", map[string]string{"MODAL_API_SECRET": "s2", "ALLOWED_CONTROL_PLANE_HOSTS": "cp.example"}))
	values, ok := s.Modal().SecretValues("", "staging", "internal-api")
	require.True(t, ok)
	assert.Equal(t, map[string]string{"MODAL_API_SECRET": "s2", "ALLOWED_CONTROL_PLANE_HOSTS": "cp.example"}, values)

	present, found, err := staging.SecretKeys(ctx, "internal-api", keys)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, keys, present)
	present, found, err = staging.SecretKeys(ctx, "internal-api", append(keys, "GITLAB_ACCESS_TOKEN"))
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, keys, present, "missing keys are left out")

	// Environments are isolated from each other.
	present, found, err = main.SecretKeys(ctx, "internal-api", keys)
	require.NoError(t, err)
	assert.False(t, found)
	assert.Empty(t, present)
	require.NoError(t, main.DeleteSecret(ctx, "internal-api"), "missing is fine")
	_, ok = s.Modal().SecretValues("", "staging", "internal-api")
	assert.True(t, ok, "deleting in main left staging alone")

	require.NoError(t, staging.DeleteSecret(ctx, "internal-api"))
	require.NoError(t, staging.DeleteSecret(ctx, "internal-api"))
	assert.True(t, s.Inventory().Modal.Empty())
}

func TestFaults(t *testing.T) {
	s := startEmulator(t, emulator.Options{})
	ctx := context.Background()
	c := newClient(t, s, "")
	_, err := c.Environment(ctx) // connect first, so only the faulted call counts
	require.NoError(t, err)

	// A brief outage is retried, on raw calls as on modal-go's.
	s.ResetCounts()
	s.InjectFault(emulator.Fault{Route: "/modal.client.ModalClient/SecretGetOrCreate", Kind: emulator.FaultServerError, Status: 503, Times: 2})
	require.NoError(t, c.UpsertSecret(ctx, "github-app", map[string]string{"GITHUB_APP_ID": "1"}))
	assert.Equal(t, 3, s.Counts()["grpc /modal.client.ModalClient/SecretGetOrCreate"])
	s.InjectFault(emulator.Fault{Route: "/modal.client.ModalClient/SecretGetOrCreate", Kind: emulator.FaultServerError, Times: 2})
	present, found, err := c.SecretKeys(ctx, "github-app", []string{"GITHUB_APP_ID"})
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, []string{"GITHUB_APP_ID"}, present)

	// A rate limit is reported, naming what failed.
	s.InjectFault(emulator.Fault{Route: "/modal.client.ModalClient/SecretGetOrCreate", Kind: emulator.FaultRateLimit, Times: 1})
	err = c.UpsertSecret(ctx, "github-app", map[string]string{"GITHUB_APP_PRIVATE_KEY": "pem-value"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `modal: upserting secret "github-app" in environment "(default)"`)
	assert.Contains(t, err.Error(), "ResourceExhausted")
	assert.NotContains(t, err.Error(), "pem-value")

	// An outage that outlasts the retries is reported too.
	s.InjectFault(emulator.Fault{Route: "/modal.client.ModalClient/AppStop", Kind: emulator.FaultServerError, Status: 502})
	err = c.StopApp(ctx, "ap-missing")
	assert.ErrorContains(t, err, "modal: stopping app ap-missing")
	assert.Equal(t, 4, s.Counts()["grpc /modal.client.ModalClient/AppStop"])
	s.ClearFaults()
}

func TestAppLifecycle(t *testing.T) {
	s := startEmulator(t, emulator.Options{})
	ctx := context.Background()
	c, other := newClient(t, s, "staging"), newClient(t, s, "")

	_, found, err := c.DeployedApp(ctx, "open-inspect")
	require.NoError(t, err)
	assert.False(t, found)

	appID := deployApp(t, c, "open-inspect", "api_health", "api_create_sandbox")
	app, found, err := c.DeployedApp(ctx, "open-inspect")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, App{ID: appID, Name: "open-inspect", State: "deployed"}, app)
	_, found, err = other.DeployedApp(ctx, "open-inspect")
	require.NoError(t, err)
	assert.False(t, found, "deployed in staging only")

	u, err := c.WebURL(ctx, "open-inspect", "api_health")
	require.NoError(t, err)
	assert.Equal(t, s.URL()+"/__modal/web/openinspect-emulator-staging--open-inspect-api-health", u)
	resp, err := http.Get(u)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = c.WebURL(ctx, "open-inspect", "api_missing")
	assert.ErrorContains(t, err, "api_missing")

	// Sandboxes: two builds of this installation, a session, and a build of
	// another installation's tags.
	_, sdk, err := c.connect(ctx)
	require.NoError(t, err)
	mapp := &modal.App{AppID: appID, Name: "open-inspect"}
	img, err := sdk.Images.FromRegistry("python:3.12-slim", nil).Build(ctx, mapp)
	require.NoError(t, err)
	mine := map[string]string{"openinspect_kind": "image-build", "openinspect_scope_id": "inst-1"}
	for range 2 {
		sb, err := sdk.Sandboxes.Create(ctx, mapp, img, nil)
		require.NoError(t, err)
		require.NoError(t, sb.SetTags(ctx, mine))
	}
	_, err = s.Modal().CreateSandbox("", "staging", "open-inspect", map[string]string{"openinspect_kind": "session"})
	require.NoError(t, err)
	_, err = s.Modal().CreateSandbox("", "staging", "open-inspect", map[string]string{"openinspect_kind": "image-build", "openinspect_scope_id": "inst-2"})
	require.NoError(t, err)

	n, err := c.TerminateSandboxes(ctx, appID, mine)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	n, err = c.TerminateSandboxes(ctx, appID, mine)
	require.NoError(t, err)
	assert.Zero(t, n)
	n, err = c.TerminateSandboxes(ctx, appID, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, n)

	require.NoError(t, c.DeleteImage(ctx, img.ImageID))
	require.NoError(t, c.DeleteImage(ctx, img.ImageID), "missing is fine")

	require.NoError(t, c.StopApp(ctx, appID))
	require.NoError(t, c.StopApp(ctx, appID), "stopping twice is fine")
	_, found, err = c.DeployedApp(ctx, "open-inspect")
	require.NoError(t, err)
	assert.False(t, found)
	resp, err = http.Get(u)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.True(t, s.Inventory().Modal.Empty())
}

func TestCancelledContext(t *testing.T) {
	s := startEmulator(t, emulator.Options{})
	c := newClient(t, s, "")
	s.InjectFault(emulator.Fault{Route: "/modal.client.ModalClient/AuthTokenGet", Kind: emulator.FaultLatency, Latency: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := c.Environment(ctx)
	require.Error(t, err)
	assert.Less(t, time.Since(t0), 3*time.Second)
	assert.True(t, strings.Contains(err.Error(), "authenticating"), "%v", err)
}
