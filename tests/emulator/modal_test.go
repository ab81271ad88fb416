package emulator_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	modal "github.com/modal-labs/libmodal/modal-go"
	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emumodal "github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
)

// modalClient is modal-go pointed at s. modal-go reads the server URL only
// from the environment (or ~/.modal.toml), hence t.Setenv: these tests do
// not run in parallel.
func modalClient(t *testing.T, s *emulator.Server, id, secret, env string) (*modal.Client, error) {
	t.Helper()
	t.Setenv("MODAL_SERVER_URL", s.URL())
	t.Setenv("MODAL_CONFIG_PATH", t.TempDir()+"/none.toml")
	c, err := modal.NewClientWithOptions(&modal.ClientParams{TokenID: id, TokenSecret: secret, Environment: env})
	if err == nil {
		t.Cleanup(c.Close)
	}
	return c, err
}

func mustModal(t *testing.T, s *emulator.Server, env string) *modal.Client {
	t.Helper()
	c, err := modalClient(t, s, emumodal.DefaultTokenID, emumodal.DefaultTokenSecret, env)
	require.NoError(t, err)
	return c
}

// rawModal is the bare gRPC stub with the token headers, for calls modal-go
// has no method for (deploying, stopping, listing).
func rawModal(t *testing.T, s *emulator.Server, id, secret string) pb.ModalClientClient {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(s.URL(), "http://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			ctx = metadata.AppendToOutgoingContext(ctx, "x-modal-token-id", id, "x-modal-token-secret", secret)
			return inv(ctx, method, req, reply, cc, opts...)
		}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return pb.NewModalClientClient(conn)
}

// deploy publishes an app the way `modal deploy` does, with one web
// endpoint per name in web (GET for api_health, POST otherwise) and one
// plain function, and returns its ID.
func deploy(t *testing.T, c pb.ModalClientClient, env, name string, web ...string) string {
	t.Helper()
	ctx := context.Background()
	existing, err := c.AppGetByDeploymentName(ctx, pb.AppGetByDeploymentNameRequest_builder{Name: name, EnvironmentName: env}.Build())
	require.NoError(t, err)
	appID := existing.GetAppId()
	layout := map[string]string{}
	if appID != "" {
		// As the CLI does: a function keeps its ID across deploys.
		resp, err := c.AppGetLayout(ctx, pb.AppGetLayoutRequest_builder{AppId: appID}.Build())
		require.NoError(t, err)
		layout = resp.GetAppLayout().GetFunctionIds()
	} else {
		created, err := c.AppCreate(ctx, pb.AppCreateRequest_builder{Description: name, EnvironmentName: env, AppState: pb.AppState_APP_STATE_INITIALIZING}.Build())
		require.NoError(t, err)
		appID = created.GetAppId()
	}
	ids := map[string]string{}
	for _, fn := range append([]string{"worker"}, web...) {
		var wc *pb.WebhookConfig
		if fn != "worker" {
			method := "POST"
			if fn == "api_health" {
				method = "GET"
			}
			wc = pb.WebhookConfig_builder{Type: pb.WebhookType_WEBHOOK_TYPE_FUNCTION, Method: method}.Build()
		}
		pre, err := c.FunctionPrecreate(ctx, pb.FunctionPrecreateRequest_builder{AppId: appID, FunctionName: fn, WebhookConfig: wc, ExistingFunctionId: layout[fn]}.Build())
		require.NoError(t, err)
		created, err := c.FunctionCreate(ctx, pb.FunctionCreateRequest_builder{
			AppId: appID, ExistingFunctionId: pre.GetFunctionId(),
			Function: pb.Function_builder{FunctionName: fn, ModuleName: "deploy", WebhookConfig: wc}.Build(),
		}.Build())
		require.NoError(t, err)
		ids[fn] = created.GetFunctionId()
	}
	_, err = c.AppPublish(ctx, pb.AppPublishRequest_builder{AppId: appID, Name: name, AppState: pb.AppState_APP_STATE_DEPLOYED, FunctionIds: ids}.Build())
	require.NoError(t, err)
	return appID
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestModalAuth(t *testing.T) {
	s := start(t, emulator.Options{Modal: emumodal.Options{Tokens: []emumodal.Token{
		{ID: "ak-one", Secret: "as-one", Workspace: "team-one"},
		{ID: "ak-two", Secret: "as-two", Workspace: "team-two"},
	}}})
	_, err := modalClient(t, s, "ak-one", "as-wrong", "")
	require.Error(t, err)
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
	assert.NotContains(t, err.Error(), "as-wrong")

	// Each pair is its own workspace: the same names do not collide.
	for _, tok := range []string{"one", "two"} {
		raw := rawModal(t, s, "ak-"+tok, "as-"+tok)
		ws, err := raw.WorkspaceNameLookup(context.Background(), &emptypb.Empty{})
		require.NoError(t, err)
		assert.Equal(t, "team-"+tok, ws.GetUsername())
		c, err := modalClient(t, s, "ak-"+tok, "as-"+tok, "")
		require.NoError(t, err)
		_, err = c.Apps.FromName(context.Background(), "shared-name", &modal.AppFromNameParams{CreateIfMissing: true})
		require.NoError(t, err)
	}
	assert.Len(t, s.Inventory().Modal.Apps, 2)

	// Without the pair, nothing is answered.
	_, err = rawModal(t, s, "", "").AppList(context.Background(), pb.AppListRequest_builder{}.Build())
	assert.Equal(t, codes.Unauthenticated, status.Code(err))

	// The token AuthTokenGet issues is accepted on its own afterwards; a
	// forged one is not.
	tok, err := rawModal(t, s, "ak-two", "as-two").AuthTokenGet(context.Background(), &pb.AuthTokenGetRequest{})
	require.NoError(t, err)
	noPair := rawModal(t, s, "", "")
	ws, err := noPair.WorkspaceNameLookup(metadata.AppendToOutgoingContext(context.Background(), "x-modal-auth-token", tok.GetToken()), &emptypb.Empty{})
	require.NoError(t, err)
	assert.Equal(t, "team-two", ws.GetUsername())
	forged := tok.GetToken()[:strings.LastIndexByte(tok.GetToken(), '.')] + ".AAAA"
	_, err = noPair.WorkspaceNameLookup(metadata.AppendToOutgoingContext(context.Background(), "x-modal-auth-token", forged), &emptypb.Empty{})
	assert.Equal(t, codes.Unauthenticated, status.Code(err))
}

func TestModalEnvironments(t *testing.T) {
	s := start(t, emulator.Options{Modal: emumodal.Options{WebSuffixes: map[string]string{"prod": "live"}}})
	raw := rawModal(t, s, emumodal.DefaultTokenID, emumodal.DefaultTokenSecret)
	for env, want := range map[string][2]string{"": {"main", ""}, "staging": {"staging", "staging"}, "prod": {"prod", "live"}} {
		resp, err := raw.EnvironmentGetOrCreate(context.Background(), pb.EnvironmentGetOrCreateRequest_builder{DeploymentName: env}.Build())
		require.NoError(t, err)
		assert.Equal(t, want[0], resp.GetMetadata().GetName())
		assert.Equal(t, want[1], resp.GetMetadata().GetSettings().GetWebhookSuffix(), env)
		assert.Equal(t, emumodal.ImageBuilderVersion, resp.GetMetadata().GetSettings().GetImageBuilderVersion())
	}
}

func TestModalSecrets(t *testing.T) {
	s := start(t, emulator.Options{})
	ctx := context.Background()
	raw := rawModal(t, s, emumodal.DefaultTokenID, emumodal.DefaultTokenSecret)
	upsert := func(ct pb.ObjectCreationType, env string, values map[string]string) error {
		_, err := raw.SecretGetOrCreate(ctx, pb.SecretGetOrCreateRequest_builder{
			DeploymentName: "internal-api", EnvironmentName: env, ObjectCreationType: ct, EnvDict: values,
		}.Build())
		return err
	}
	require.NoError(t, upsert(pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_FAIL_IF_EXISTS, "", map[string]string{"MODAL_API_SECRET": "one", "OLD": "x"}))
	err := upsert(pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_FAIL_IF_EXISTS, "", map[string]string{"MODAL_API_SECRET": "two"})
	assert.Equal(t, codes.AlreadyExists, status.Code(err))
	require.NoError(t, upsert(pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_IF_MISSING, "", map[string]string{"IGNORED": "y"}))
	require.NoError(t, upsert(pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_OVERWRITE_IF_EXISTS, "", map[string]string{"MODAL_API_SECRET": "three"}))
	values, ok := s.Modal().SecretValues("", "", "internal-api")
	require.True(t, ok)
	assert.Equal(t, map[string]string{"MODAL_API_SECRET": "three"}, values, "overwrite replaces the whole secret")
	assert.Equal(t, codes.InvalidArgument, status.Code(upsert(pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_OVERWRITE_IF_EXISTS, "", map[string]string{"NOT-A-NAME": "v"})))

	c := mustModal(t, s, "")
	_, err = c.Secrets.FromName(ctx, "internal-api", &modal.SecretFromNameParams{RequiredKeys: []string{"MODAL_API_SECRET"}})
	require.NoError(t, err)
	_, err = c.Secrets.FromName(ctx, "internal-api", &modal.SecretFromNameParams{RequiredKeys: []string{"ALLOWED_CONTROL_PLANE_HOSTS"}})
	assert.True(t, errors.As(err, &modal.NotFoundError{}), "%v", err)
	_, err = mustModal(t, s, "other").Secrets.FromName(ctx, "internal-api", nil)
	assert.True(t, errors.As(err, &modal.NotFoundError{}), "environments do not share secrets: %v", err)

	list, err := raw.SecretList(ctx, pb.SecretListRequest_builder{}.Build())
	require.NoError(t, err)
	require.Len(t, list.GetItems(), 1)
	assert.Equal(t, "internal-api", list.GetItems()[0].GetLabel())

	inv := s.Inventory().Modal
	require.Len(t, inv.Secrets, 1)
	assert.Equal(t, []string{"MODAL_API_SECRET"}, inv.Secrets[0].Keys)
	b, err := json.Marshal(s.Inventory())
	require.NoError(t, err)
	assert.NotContains(t, string(b), "three", "the inventory never shows a value")

	require.NoError(t, c.Secrets.Delete(ctx, "internal-api", nil))
	assert.Error(t, c.Secrets.Delete(ctx, "internal-api", nil))
	require.NoError(t, c.Secrets.Delete(ctx, "internal-api", &modal.SecretDeleteParams{AllowMissing: true}))
	assert.True(t, s.Inventory().Empty())
}

func TestModalDeployAndWeb(t *testing.T) {
	s := start(t, emulator.Options{})
	ctx := context.Background()
	raw := rawModal(t, s, emumodal.DefaultTokenID, emumodal.DefaultTokenSecret)
	appID := deploy(t, raw, "staging", "open-inspect", "api_health", "api_create_sandbox")

	c := mustModal(t, s, "staging")
	fn, err := c.Functions.FromName(ctx, "open-inspect", "api_health", nil)
	require.NoError(t, err)
	health := fn.GetWebURL()
	assert.Equal(t, s.URL()+"/__modal/web/openinspect-emulator-staging--open-inspect-api-health", health)
	status_, body := get(t, health)
	assert.Equal(t, http.StatusOK, status_)
	assert.JSONEq(t, emumodal.HealthBody, body)

	fn, err = c.Functions.FromName(ctx, "open-inspect", "api_create_sandbox", nil)
	require.NoError(t, err)
	status_, _ = get(t, fn.GetWebURL())
	assert.Equal(t, http.StatusMethodNotAllowed, status_, "a POST endpoint refuses GET")
	// Without a Python to run them (Options.Python), functions other than
	// the health check are not run, and say so.
	resp, err := http.Post(fn.GetWebURL(), "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	said, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Contains(t, string(said), "api_create_sandbox was not run")

	worker, err := c.Functions.FromName(ctx, "open-inspect", "worker", nil)
	require.NoError(t, err)
	assert.Empty(t, worker.GetWebURL())
	_, err = c.Functions.FromName(ctx, "open-inspect", "nope", nil)
	assert.True(t, errors.As(err, &modal.NotFoundError{}))
	_, err = mustModal(t, s, "").Functions.FromName(ctx, "open-inspect", "api_health", nil)
	assert.True(t, errors.As(err, &modal.NotFoundError{}), "the app lives in staging only")

	// Redeploying the same definition makes no new version; a changed one does.
	deploy(t, raw, "staging", "open-inspect", "api_health", "api_create_sandbox")
	inv := s.Inventory().Modal
	require.Len(t, inv.Apps, 1)
	assert.Equal(t, 1, inv.Apps[0].Version)
	assert.Equal(t, appID, deploy(t, raw, "staging", "open-inspect", "api_health"))
	assert.Equal(t, 2, s.Inventory().Modal.Apps[0].Version)
	status_, _ = get(t, strings.Replace(health, "api-health", "api-create-sandbox", 1))
	assert.Equal(t, http.StatusNotFound, status_, "dropped from the new version")

	_, err = raw.AppStop(ctx, pb.AppStopRequest_builder{AppId: appID, Source: pb.AppStopSource_APP_STOP_SOURCE_CLI}.Build())
	require.NoError(t, err)
	status_, body = get(t, health)
	assert.Equal(t, http.StatusNotFound, status_)
	assert.Contains(t, body, "stopped")
	byName, err := raw.AppGetByDeploymentName(ctx, pb.AppGetByDeploymentNameRequest_builder{Name: "open-inspect", EnvironmentName: "staging"}.Build())
	require.NoError(t, err)
	assert.Empty(t, byName.GetAppId(), "a stopped app is no longer deployed under its name")
	assert.True(t, s.Inventory().Modal.Empty())
}

func TestModalImagesAndSandboxes(t *testing.T) {
	s := start(t, emulator.Options{})
	ctx := context.Background()
	c := mustModal(t, s, "")
	app, err := c.Apps.FromName(ctx, "open-inspect", &modal.AppFromNameParams{CreateIfMissing: true})
	require.NoError(t, err)

	img, err := c.Images.FromRegistry("python:3.12-slim", nil).DockerfileCommands([]string{"RUN echo hi"}, nil).Build(ctx, app)
	require.NoError(t, err)
	again, err := c.Images.FromRegistry("python:3.12-slim", nil).DockerfileCommands([]string{"RUN echo hi"}, nil).Build(ctx, app)
	require.NoError(t, err)
	assert.Equal(t, img.ImageID, again.ImageID, "an equal definition reuses the built image")

	s.InjectFault(emulator.Fault{Kind: emumodal.FaultImageBuildFailure, Times: 1})
	_, err = c.Images.FromRegistry("python:3.12-slim", nil).DockerfileCommands([]string{"RUN false"}, nil).Build(ctx, app)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "failed")
	states := map[string]int{}
	for _, e := range s.Modal().Images() {
		states[e.State]++
	}
	assert.Equal(t, map[string]int{"ready": 2, "failed": 1}, states)

	sb, err := c.Sandboxes.Create(ctx, app, img, nil)
	require.NoError(t, err)
	require.NoError(t, sb.SetTags(ctx, map[string]string{"openinspect_kind": "image-build", "openinspect_build_id": "b1"}))
	other, err := s.Modal().CreateSandbox("", "", "open-inspect", map[string]string{"openinspect_kind": "session"})
	require.NoError(t, err)

	list := func(params *modal.SandboxListParams) []string {
		seq, err := c.Sandboxes.List(ctx, params)
		require.NoError(t, err)
		var ids []string
		for sb, err := range seq {
			require.NoError(t, err)
			ids = append(ids, sb.SandboxID)
		}
		return ids
	}
	assert.Equal(t, []string{sb.SandboxID}, list(&modal.SandboxListParams{AppID: app.AppID, Tags: map[string]string{"openinspect_kind": "image-build"}}))
	assert.ElementsMatch(t, []string{sb.SandboxID, other}, list(&modal.SandboxListParams{AppID: app.AppID}))
	assert.Empty(t, list(&modal.SandboxListParams{Environment: "elsewhere"}), "the environment filters")
	_, err = sb.Terminate(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{other}, list(&modal.SandboxListParams{AppID: app.AppID}))

	require.NoError(t, c.Images.Delete(ctx, img.ImageID, nil))
	assert.True(t, errors.As(c.Images.Delete(ctx, img.ImageID, nil), &modal.NotFoundError{}))
}

func TestModalCountsAndFaults(t *testing.T) {
	s := start(t, emulator.Options{})
	ctx := context.Background()
	c := mustModal(t, s, "")
	s.ResetCounts()

	// modal-go retries Unavailable, so a short outage passes unnoticed.
	s.InjectFault(emulator.Fault{Route: "grpc /modal.client.ModalClient/AppGetOrCreate", Kind: emulator.FaultServerError, Status: 503, Times: 2})
	_, err := c.Apps.FromName(ctx, "a", &modal.AppFromNameParams{CreateIfMissing: true})
	require.NoError(t, err)
	assert.Equal(t, 3, s.Counts()["grpc /modal.client.ModalClient/AppGetOrCreate"])

	s.InjectFault(emulator.Fault{Route: "/modal.client.ModalClient/AppGetOrCreate", Kind: emulator.FaultRateLimit, Times: 1})
	_, err = c.Apps.FromName(ctx, "a", nil)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)

	s.InjectFault(emulator.Fault{Route: "/modal.client.ModalClient/AppGetOrCreate", Kind: emulator.FaultDropConnection, Times: 1})
	_, err = c.Apps.FromName(ctx, "a", nil)
	require.NoError(t, err, "a reset stream is retried")

	s.InjectFault(emulator.Fault{Route: "/modal.client.ModalClient/AppGetOrCreate", Kind: emulator.FaultLatency, Latency: 50 * time.Millisecond, Times: 1})
	t0 := time.Now()
	_, err = c.Apps.FromName(ctx, "a", nil)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(t0), 50*time.Millisecond)

	assert.Equal(t, 7, s.Modal().Calls())
	assert.Zero(t, s.CloudflareCalls(), "Modal calls are not Cloudflare calls")

	// A plain HTTP/1 request to the gRPC path is refused, and counted.
	code, _ := get(t, s.URL()+"/modal.client.ModalClient/AppList")
	assert.Equal(t, http.StatusUnsupportedMediaType, code)

	assert.Panics(t, func() {
		s.InjectFault(emulator.Fault{Route: "/modal.client.ModalClient/AppList", Kind: emumodal.FaultImageBuildFailure})
	})
}

func TestModalPersistence(t *testing.T) {
	dir := t.TempDir()
	first, err := emulator.Start(emulator.Options{DataDir: dir})
	require.NoError(t, err)
	raw := rawModal(t, first, emumodal.DefaultTokenID, emumodal.DefaultTokenSecret)
	_, err = raw.SecretGetOrCreate(context.Background(), pb.SecretGetOrCreateRequest_builder{
		DeploymentName: "llm-api-keys", ObjectCreationType: pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_OVERWRITE_IF_EXISTS,
		EnvDict: map[string]string{"ANTHROPIC_API_KEY": "k"},
	}.Build())
	require.NoError(t, err)
	deploy(t, raw, "", "open-inspect", "api_health")
	_, err = first.Modal().CreateSandbox("", "", "open-inspect", map[string]string{"k": "v"})
	require.NoError(t, err)
	before := first.Inventory()
	require.NoError(t, first.Close())

	second := start(t, emulator.Options{DataDir: dir})
	assert.Equal(t, before.Modal, second.Inventory().Modal)
	values, ok := second.Modal().SecretValues("", "", "llm-api-keys")
	require.True(t, ok)
	assert.Equal(t, "k", values["ANTHROPIC_API_KEY"])
	code, body := get(t, second.URL()+"/__modal/web/openinspect-emulator--open-inspect-api-health")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, emumodal.HealthBody, body)
}

func TestModalSlowBuildAndAdmin(t *testing.T) {
	s := start(t, emulator.Options{Modal: emumodal.Options{ImageBuildTime: 300 * time.Millisecond}})
	ctx := context.Background()
	c := mustModal(t, s, "")
	app, err := c.Apps.FromName(ctx, "open-inspect", &modal.AppFromNameParams{CreateIfMissing: true})
	require.NoError(t, err)
	t0 := time.Now()
	img, err := c.Images.FromRegistry("debian:bookworm-slim", nil).Build(ctx, app)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(t0), 300*time.Millisecond, "the client followed the build until it ended")
	assert.Equal(t, 1, s.Counts()["grpc /modal.client.ModalClient/ImageJoinStreaming"])

	code, body := get(t, s.URL()+"/__emulator/modal/images")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, img.ImageID)
	resp, err := http.Post(s.URL()+"/__emulator/modal/sandboxes", "application/json",
		strings.NewReader(`{"app":"open-inspect","tags":{"openinspect_kind":"session"}}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	resp, err = http.Post(s.URL()+"/__emulator/modal/sandboxes", "application/json", strings.NewReader(`{"app":"missing"}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	inv := s.Inventory().Modal
	require.Len(t, inv.Sandboxes, 1)
	assert.Equal(t, map[string]string{"openinspect_kind": "session"}, inv.Sandboxes[0].Tags)
	assert.False(t, inv.Empty(), "a running sandbox is something left behind")
}

// TestModalHold: a hold works on the gRPC (HTTP/2) path too: released, the
// call is served; cancelled by its client while held, it is dropped and
// creates nothing.
func TestModalHold(t *testing.T) {
	s := start(t, emulator.Options{})
	c := mustModal(t, s, "")
	route := "/modal.client.ModalClient/AppGetOrCreate"
	s.InjectFault(emulator.Fault{Route: route, Kind: emulator.FaultHold, Times: 1})
	done := make(chan error, 1)
	go func() {
		_, err := c.Apps.FromName(context.Background(), "held", &modal.AppFromNameParams{CreateIfMissing: true})
		done <- err
	}()
	waitHeld(t, s, 1)
	s.ReleaseHolds()
	require.NoError(t, <-done)
	assert.Equal(t, emulator.HoldStats{Released: 1}, s.Holds())

	s.InjectFault(emulator.Fault{Route: route, Kind: emulator.FaultHold, Times: 1})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := c.Apps.FromName(ctx, "abandoned", &modal.AppFromNameParams{CreateIfMissing: true})
		done <- err
	}()
	waitHeld(t, s, 1)
	cancel()
	require.Error(t, <-done)
	require.Eventually(t, func() bool { return s.Holds() == emulator.HoldStats{Released: 1, Abandoned: 1} }, 10*time.Second, 5*time.Millisecond,
		"%+v", s.Holds())
	s.ReleaseHolds()
	_, err := c.Apps.FromName(context.Background(), "abandoned", nil)
	assert.Error(t, err, "the abandoned call created no app")
}
