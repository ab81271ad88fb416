package modal

// Modal API: authentication, workspaces, environments, apps, functions and
// mounts. Errors use the status codes the clients act on: NotFound for a
// missing object (modal-go and the CLI turn it into their NotFoundError),
// AlreadyExists for a name clash, InvalidArgument for a malformed request.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"

	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/emptypb"
)

// modalAPI implements the gRPC service; every method not listed here answers
// Unimplemented (through the embedded stub), which the request log shows.
type modalAPI struct {
	pb.UnimplementedModalClientServer
	m *Service
}

var (
	modalEnvNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	modalAppNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	nonLabelRE     = regexp.MustCompile(`[^a-z0-9-]+`)
)

func notFound(format string, args ...any) error {
	return status.Errorf(codes.NotFound, format, args...)
}

func invalidArg(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// env resolves an environment name for workspace ws, creating it on first
// use. Real Modal needs `modal environment create` first; the emulator
// creates environments on demand so a demo needs no extra step. The caller
// holds m.mu.
func (m *Service) env(ws, name string) (*modalEnv, error) {
	if name == "" {
		name = DefaultEnvironment
	}
	if !modalEnvNameRE.MatchString(name) {
		return nil, invalidArg("Invalid environment name %q", name)
	}
	if e, ok := m.st.Environments[envKey(ws, name)]; ok {
		return e, nil
	}
	suffix, ok := m.webSuffix[name]
	if !ok && name != DefaultEnvironment {
		suffix = strings.Trim(nonLabelRE.ReplaceAllString(strings.ToLower(name), "-"), "-")
	}
	e := &modalEnv{ID: newModalID("en"), Workspace: ws, Name: name, WebSuffix: suffix, CreatedAt: time.Now().UTC()}
	m.st.Environments[envKey(ws, name)] = e
	return e, nil
}

// envProto is an environment as EnvironmentGetOrCreate answers it.
func envProto(e *modalEnv) *pb.EnvironmentGetOrCreateResponse {
	return pb.EnvironmentGetOrCreateResponse_builder{
		EnvironmentId: e.ID,
		Metadata: pb.EnvironmentMetadata_builder{
			Name: e.Name,
			Settings: pb.EnvironmentSettings_builder{
				ImageBuilderVersion: ImageBuilderVersion,
				WebhookSuffix:       e.WebSuffix,
			}.Build(),
		}.Build(),
	}.Build()
}

// app returns the caller's app by ID; an app of another workspace is as
// missing as one that never existed. The caller holds m.mu.
func (m *Service) app(ctx context.Context, id string) (*modalApp, error) {
	a, ok := m.st.Apps[id]
	if !ok || a.Workspace != callerFrom(ctx).workspace {
		return nil, notFound("App %s not found", id)
	}
	return a, nil
}

// namedApp finds the live (not stopped) app deployed under name.
func (m *Service) namedApp(ws, env, name string) *modalApp {
	for _, a := range m.st.Apps {
		if a.Workspace == ws && a.Environment == env && a.Name == name && a.State != pb.AppState_APP_STATE_STOPPED.String() {
			return a
		}
	}
	return nil
}

// appLabel is the app's part of its web endpoints' host label: the
// deployment name, or while a first deploy is initializing, the description
// the CLI sent with AppCreate (the name it will publish under).
func appLabel(a *modalApp) string {
	if a.Name != "" {
		return a.Name
	}
	if a.State == pb.AppState_APP_STATE_EPHEMERAL.String() {
		return a.Description + "-dev"
	}
	return a.Description
}

// webLabel is the host label of a web endpoint:
// <workspace>[-<env web suffix>]--<app>-<function, _ as ->. Real Modal
// serves it as https://<label>.modal.run; the emulator serves it under
// <URL>/__modal/web/<label> over plain HTTP.
func (m *Service) webLabel(a *modalApp, function string) string {
	slug := a.Workspace
	if e, ok := m.st.Environments[envKey(a.Workspace, a.Environment)]; ok && e.WebSuffix != "" {
		slug += "-" + e.WebSuffix
	}
	return strings.ToLower(slug + "--" + appLabel(a) + "-" + strings.ReplaceAll(function, "_", "-"))
}

func (m *Service) webURL(ctx context.Context, a *modalApp, f *modalFunction) string {
	if !f.isWeb() {
		return ""
	}
	return m.baseURL(ctx) + "/__modal/web/" + m.webLabel(a, f.Name)
}

func (m *Service) handleMetadata(ctx context.Context, a *modalApp, f *modalFunction) *pb.FunctionHandleMetadata {
	ft := pb.Function_FunctionType(pb.Function_FunctionType_value[f.Type])
	if ft == 0 {
		ft = pb.Function_FUNCTION_TYPE_FUNCTION
	}
	return pb.FunctionHandleMetadata_builder{
		FunctionName: f.Name,
		FunctionType: ft,
		WebUrl:       m.webURL(ctx, a, f),
		DefinitionId: "de-" + strings.TrimPrefix(f.ID, "fu-"),
	}.Build()
}

// --- Authentication, workspace, environments ---------------------------

func (api *modalAPI) ClientHello(ctx context.Context, _ *emptypb.Empty) (*pb.ClientHelloResponse, error) {
	return pb.ClientHelloResponse_builder{ImageBuilderVersion: ImageBuilderVersion}.Build(), nil
}

func (api *modalAPI) AuthTokenGet(ctx context.Context, _ *pb.AuthTokenGetRequest) (*pb.AuthTokenGetResponse, error) {
	return pb.AuthTokenGetResponse_builder{Token: api.m.issueAuthToken(callerFrom(ctx).workspace)}.Build(), nil
}

func (api *modalAPI) WorkspaceNameLookup(ctx context.Context, _ *emptypb.Empty) (*pb.WorkspaceNameLookupResponse, error) {
	ws := callerFrom(ctx).workspace
	// Clients read username (Modal's own: Workspace.from_context); the
	// deprecated workspace_name is filled too, as older clients read it.
	//lint:ignore SA1019 answered for older clients
	return pb.WorkspaceNameLookupResponse_builder{WorkspaceName: ws, Username: ws}.Build(), nil
}

func (api *modalAPI) EnvironmentGetOrCreate(ctx context.Context, req *pb.EnvironmentGetOrCreateRequest) (*pb.EnvironmentGetOrCreateResponse, error) {
	m := api.m
	m.mu.Lock()
	_, existed := m.st.Environments[envKey(callerFrom(ctx).workspace, cmpOr(req.GetDeploymentName(), DefaultEnvironment))]
	e, err := m.env(callerFrom(ctx).workspace, req.GetDeploymentName())
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if !existed {
		if err := m.saved(); err != nil {
			return nil, err
		}
	}
	return envProto(e), nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// --- Apps -----------------------------------------------------------------

func (api *modalAPI) AppCreate(ctx context.Context, req *pb.AppCreateRequest) (*pb.AppCreateResponse, error) {
	m := api.m
	m.mu.Lock()
	e, err := m.env(callerFrom(ctx).workspace, req.GetEnvironmentName())
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	state := req.GetAppState()
	if state == pb.AppState_APP_STATE_UNSPECIFIED {
		state = pb.AppState_APP_STATE_EPHEMERAL
	}
	created, _ := m.stamp(time.Now())
	a := &modalApp{
		ID: newModalID("ap"), Workspace: e.Workspace, Environment: e.Name, Description: req.GetDescription(),
		State: state.String(), CreatedAt: created.UTC(), Heartbeat: created.UTC(), Tags: maps.Clone(req.GetTags()),
	}
	m.st.Apps[a.ID] = a
	m.mu.Unlock()
	if err := m.saved(); err != nil {
		return nil, err
	}
	page := m.baseURL(ctx) + "/__modal/apps/" + a.ID
	return pb.AppCreateResponse_builder{AppId: a.ID, AppPageUrl: page, AppLogsUrl: page + "?logs"}.Build(), nil
}

// appLifecycle encodes the AppLifecycle message newer clients read from
// AppGetByDeploymentName (fields app_state=1, created_at=2, stopped_at=7).
// modal-go's stubs predate it, so it travels as unknown fields; protobuf
// keeps those on the wire, and the Python CLI decodes them.
func appLifecycle(a *modalApp) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(pb.AppState_value[a.State]))
	b = protowire.AppendTag(b, 2, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(unixSeconds(a.CreatedAt)))
	if !a.StoppedAt.IsZero() {
		b = protowire.AppendTag(b, 7, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(unixSeconds(a.StoppedAt)))
	}
	return b
}

func (api *modalAPI) AppGetByDeploymentName(ctx context.Context, req *pb.AppGetByDeploymentNameRequest) (*pb.AppGetByDeploymentNameResponse, error) {
	m := api.m
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.env(callerFrom(ctx).workspace, req.GetEnvironmentName())
	if err != nil {
		return nil, err
	}
	resp := pb.AppGetByDeploymentNameResponse_builder{}.Build()
	var extra []byte
	a := m.namedApp(e.Workspace, e.Name, req.GetName())
	if a != nil {
		resp.SetAppId(a.ID)
	} else {
		// The most recently stopped app of that name, which newer clients
		// report as previous_app_id (field 2).
		for _, cand := range m.st.Apps {
			if cand.Workspace == e.Workspace && cand.Environment == e.Name && cand.Name == req.GetName() &&
				(a == nil || cand.StoppedAt.After(a.StoppedAt)) {
				a = cand
			}
		}
		if a != nil {
			extra = protowire.AppendTag(extra, 2, protowire.BytesType)
			extra = protowire.AppendString(extra, a.ID)
		}
	}
	// environment_name (3) and lifecycle (4), also newer than modal-go.
	extra = protowire.AppendTag(extra, 3, protowire.BytesType)
	extra = protowire.AppendString(extra, e.Name)
	if a != nil {
		extra = protowire.AppendTag(extra, 4, protowire.BytesType)
		extra = protowire.AppendBytes(extra, appLifecycle(a))
	}
	resp.ProtoReflect().SetUnknown(extra)
	return resp, nil
}

func (api *modalAPI) AppGetOrCreate(ctx context.Context, req *pb.AppGetOrCreateRequest) (*pb.AppGetOrCreateResponse, error) {
	m := api.m
	if !modalAppNameRE.MatchString(req.GetAppName()) {
		return nil, invalidArg("Invalid App name %q", req.GetAppName())
	}
	m.mu.Lock()
	e, err := m.env(callerFrom(ctx).workspace, req.GetEnvironmentName())
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	a := m.namedApp(e.Workspace, e.Name, req.GetAppName())
	ct := req.GetObjectCreationType()
	switch {
	case a != nil && ct == pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_FAIL_IF_EXISTS:
		m.mu.Unlock()
		return nil, status.Errorf(codes.AlreadyExists, "App '%s' already exists in environment '%s'", req.GetAppName(), e.Name)
	case a != nil:
		m.mu.Unlock()
		return pb.AppGetOrCreateResponse_builder{AppId: a.ID}.Build(), nil
	case ct == pb.ObjectCreationType_OBJECT_CREATION_TYPE_UNSPECIFIED:
		m.mu.Unlock()
		return nil, notFound("App '%s' not found in environment '%s'", req.GetAppName(), e.Name)
	}
	// Created by name, the app is a deployment with nothing in it yet (what
	// App.lookup(create_if_missing=True) makes); a later deploy of that
	// name publishes into it.
	created, _ := m.stamp(time.Now())
	a = &modalApp{
		ID: newModalID("ap"), Workspace: e.Workspace, Environment: e.Name, Name: req.GetAppName(), Description: req.GetAppName(),
		State: pb.AppState_APP_STATE_DEPLOYED.String(), CreatedAt: created.UTC(),
	}
	m.st.Apps[a.ID] = a
	m.mu.Unlock()
	if err := m.saved(); err != nil {
		return nil, err
	}
	return pb.AppGetOrCreateResponse_builder{AppId: a.ID}.Build(), nil
}

func (api *modalAPI) AppHeartbeat(ctx context.Context, req *pb.AppHeartbeatRequest) (*emptypb.Empty, error) {
	m := api.m
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.app(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	// Heartbeats are not persisted: they only matter while a client runs.
	a.Heartbeat = time.Now().UTC()
	return &emptypb.Empty{}, nil
}

// layoutObjects lists the functions an app serves now, for AppGetLayout and
// AppGetObjects. The caller holds m.mu.
func (m *Service) layoutObjects(ctx context.Context, a *modalApp) (map[string]string, []*pb.Object) {
	ids := map[string]string{}
	var objs []*pb.Object
	if d := a.current(); d != nil {
		for _, tag := range core.SortedKeys(d.FunctionIDs) {
			f, ok := m.st.Functions[d.FunctionIDs[tag]]
			if !ok {
				continue
			}
			ids[tag] = f.ID
			objs = append(objs, pb.Object_builder{ObjectId: f.ID, FunctionHandleMetadata: m.handleMetadata(ctx, a, f)}.Build())
		}
	}
	return ids, objs
}

func (api *modalAPI) AppGetLayout(ctx context.Context, req *pb.AppGetLayoutRequest) (*pb.AppGetLayoutResponse, error) {
	m := api.m
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.app(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	ids, objs := m.layoutObjects(ctx, a)
	classes := map[string]string{}
	if d := a.current(); d != nil {
		maps.Copy(classes, d.ClassIDs)
	}
	return pb.AppGetLayoutResponse_builder{AppLayout: pb.AppLayout_builder{Objects: objs, FunctionIds: ids, ClassIds: classes}.Build()}.Build(), nil
}

func (api *modalAPI) AppGetObjects(ctx context.Context, req *pb.AppGetObjectsRequest) (*pb.AppGetObjectsResponse, error) {
	m := api.m
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.app(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	ids, objs := m.layoutObjects(ctx, a)
	byID := map[string]*pb.Object{}
	for _, o := range objs {
		byID[o.GetObjectId()] = o
	}
	var items []*pb.AppGetObjectsItem
	for _, tag := range core.SortedKeys(ids) {
		items = append(items, pb.AppGetObjectsItem_builder{Tag: tag, Object: byID[ids[tag]]}.Build())
	}
	return pb.AppGetObjectsResponse_builder{Items: items}.Build(), nil
}

func (api *modalAPI) AppPublish(ctx context.Context, req *pb.AppPublishRequest) (*pb.AppPublishResponse, error) {
	m := api.m
	m.mu.Lock()
	a, err := m.app(ctx, req.GetAppId())
	if err == nil && a.State == pb.AppState_APP_STATE_STOPPED.String() {
		err = status.Errorf(codes.FailedPrecondition, "App %s is stopped", a.ID)
	}
	if err == nil && req.GetName() != "" {
		if !modalAppNameRE.MatchString(req.GetName()) {
			err = invalidArg("Invalid App name %q", req.GetName())
		} else if other := m.namedApp(a.Workspace, a.Environment, req.GetName()); other != nil && other.ID != a.ID {
			err = status.Errorf(codes.AlreadyExists, "An App named '%s' is already deployed in environment '%s' (%s)", req.GetName(), a.Environment, other.ID)
		}
	}
	if err == nil {
		for tag, id := range req.GetFunctionIds() {
			f, ok := m.st.Functions[id]
			if !ok || f.AppID != a.ID {
				err = invalidArg("Function %s (%s) does not belong to App %s", tag, id, a.ID)
				break
			}
			if !f.Created {
				err = status.Errorf(codes.FailedPrecondition, "Function %s was precreated but never created", tag)
				break
			}
		}
	}
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	state := req.GetAppState()
	if state == pb.AppState_APP_STATE_UNSPECIFIED {
		state = pb.AppState_APP_STATE_DEPLOYED
	}
	if req.GetName() != "" {
		a.Name = req.GetName()
	}
	a.State = state.String()
	if len(req.GetTags()) > 0 {
		a.Tags = maps.Clone(req.GetTags())
	}
	a.Pending = nil
	d := &modalDeployment{
		Version: len(a.Deployments) + 1, Tag: req.GetDeploymentTag(), PublishedAt: time.Now().UTC(),
		FunctionIDs: maps.Clone(req.GetFunctionIds()), ClassIDs: maps.Clone(req.GetClassIds()), ClientVer: req.GetClientVersion(),
		Digests: map[string]string{},
	}
	if d.ClientVer == "" {
		// The CLI says its version in every call's metadata rather than in
		// the request; the web endpoints' runner installs that client.
		if md, ok := metadata.FromIncomingContext(ctx); ok && len(md.Get("x-modal-client-version")) > 0 {
			d.ClientVer = md.Get("x-modal-client-version")[0]
		}
	}
	if d.FunctionIDs == nil {
		d.FunctionIDs = map[string]string{}
	}
	for tag, id := range d.FunctionIDs {
		d.Digests[tag] = m.st.Functions[id].Digest
	}
	// Publishing what is already live changes nothing and makes no new
	// version; Modal tells the client so with a zero deployed_at.
	var deployedAt float64
	if cur := a.current(); cur == nil || !maps.Equal(cur.FunctionIDs, d.FunctionIDs) || !maps.Equal(cur.Digests, d.Digests) || !maps.Equal(cur.ClassIDs, d.ClassIDs) {
		a.Deployments = append(a.Deployments, d)
		deployedAt = unixSeconds(d.PublishedAt)
	}
	m.mu.Unlock()
	if err := m.saved(); err != nil {
		return nil, err
	}
	resp := pb.AppPublishResponse_builder{Url: m.baseURL(ctx) + "/__modal/apps/" + a.ID}.Build()
	if deployedAt != 0 {
		// deployed_at (field 4, a double) is newer than modal-go's stubs.
		var extra []byte
		extra = protowire.AppendTag(extra, 4, protowire.Fixed64Type)
		extra = protowire.AppendFixed64(extra, math.Float64bits(deployedAt))
		resp.ProtoReflect().SetUnknown(extra)
	}
	return resp, nil
}

func (api *modalAPI) AppClientDisconnect(ctx context.Context, req *pb.AppClientDisconnectRequest) (*emptypb.Empty, error) {
	m := api.m
	m.mu.Lock()
	a, err := m.app(ctx, req.GetAppId())
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	// An app that only lived for the client (a run, or a first deploy that
	// never published) stops with it; deployed and detached apps go on.
	changed := false
	var ended []string
	if a.State == pb.AppState_APP_STATE_EPHEMERAL.String() || a.State == pb.AppState_APP_STATE_INITIALIZING.String() {
		ended = m.stopApp(a)
		changed = true
	}
	m.mu.Unlock()
	m.stopSandboxes(ended)
	if changed {
		if err := m.saved(); err != nil {
			return nil, err
		}
	}
	return &emptypb.Empty{}, nil
}

// stopApp stops a, terminates its sandboxes and ends the process running
// its web endpoints. The caller holds m.mu, and then ends the processes of
// the sandboxes it returns with stopSandboxes (which needs the lock free).
func (m *Service) stopApp(a *modalApp) (sandboxes []string) {
	m.runner.stopApp(a.ID)
	now := time.Now().UTC()
	if a.State != pb.AppState_APP_STATE_STOPPED.String() {
		a.State = pb.AppState_APP_STATE_STOPPED.String()
		a.StoppedAt = now
	}
	for _, sb := range m.st.Sandboxes {
		if sb.AppID == a.ID && sb.TerminatedAt.IsZero() {
			sb.TerminatedAt, sb.Result = now, resultTerminated
			sandboxes = append(sandboxes, sb.ID)
		}
	}
	return sandboxes
}

// stopSandboxes ends the processes of the sandboxes named (those that run).
// The caller does not hold m.mu.
func (m *Service) stopSandboxes(ids []string) {
	for _, id := range ids {
		m.stopSandbox(id)
	}
}

func (api *modalAPI) AppStop(ctx context.Context, req *pb.AppStopRequest) (*emptypb.Empty, error) {
	m := api.m
	m.mu.Lock()
	a, err := m.app(ctx, req.GetAppId())
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	ended := m.stopApp(a)
	m.mu.Unlock()
	m.stopSandboxes(ended)
	if err := m.saved(); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (api *modalAPI) AppList(ctx context.Context, req *pb.AppListRequest) (*pb.AppListResponse, error) {
	m := api.m
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.env(callerFrom(ctx).workspace, req.GetEnvironmentName())
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var apps []*modalApp
	for _, a := range m.st.Apps {
		if a.Workspace == e.Workspace && a.Environment == e.Name {
			apps = append(apps, a)
		}
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i].CreatedAt.After(apps[j].CreatedAt) })
	var items []*pb.AppListResponse_AppListItem
	for _, a := range apps {
		n := 0
		for _, sb := range m.st.Sandboxes {
			if sb.AppID == a.ID && sb.running(now) {
				n++
			}
		}
		items = append(items, pb.AppListResponse_AppListItem_builder{
			AppId: a.ID, Description: cmpOr(a.Name, a.Description), State: pb.AppState(pb.AppState_value[a.State]),
			CreatedAt: unixSeconds(a.CreatedAt), StoppedAt: unixSeconds(a.StoppedAt), NRunningTasks: int32(n), Name: a.Name,
		}.Build())
	}
	return pb.AppListResponse_builder{Apps: items}.Build(), nil
}

// --- Functions ------------------------------------------------------------

// functionFor finds or makes the function record FunctionPrecreate and
// FunctionCreate fill in: the ID the client already holds (from precreate or
// from the app's layout, when redeploying) is kept, so a function keeps its
// ID across versions as on Modal. The caller holds m.mu.
func (m *Service) functionFor(a *modalApp, name, existingID string) (*modalFunction, error) {
	if name == "" {
		return nil, invalidArg("Function name is required")
	}
	if existingID != "" {
		f, ok := m.st.Functions[existingID]
		if !ok || f.AppID != a.ID {
			return nil, notFound("Function %s not found", existingID)
		}
		if f.Name != name {
			return nil, invalidArg("Function %s is %q, not %q", existingID, f.Name, name)
		}
		return f, nil
	}
	if id, ok := a.Pending[name]; ok {
		if f, ok := m.st.Functions[id]; ok {
			return f, nil
		}
	}
	f := &modalFunction{ID: newModalID("fu"), AppID: a.ID, Name: name, CreatedAt: time.Now().UTC()}
	m.st.Functions[f.ID] = f
	if a.Pending == nil {
		a.Pending = map[string]string{}
	}
	a.Pending[name] = f.ID
	return f, nil
}

func setWebhook(f *modalFunction, wc *pb.WebhookConfig) {
	if wc == nil || wc.GetType() == pb.WebhookType_WEBHOOK_TYPE_UNSPECIFIED {
		f.WebType, f.WebMethod = "", ""
		return
	}
	f.WebType = wc.GetType().String()
	f.WebMethod = strings.ToUpper(wc.GetMethod())
}

func (api *modalAPI) FunctionPrecreate(ctx context.Context, req *pb.FunctionPrecreateRequest) (*pb.FunctionPrecreateResponse, error) {
	m := api.m
	m.mu.Lock()
	a, err := m.app(ctx, req.GetAppId())
	var f *modalFunction
	if err == nil {
		f, err = m.functionFor(a, req.GetFunctionName(), req.GetExistingFunctionId())
	}
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	if req.GetFunctionType() != 0 {
		f.Type = req.GetFunctionType().String()
	}
	setWebhook(f, req.GetWebhookConfig())
	md := m.handleMetadata(ctx, a, f)
	m.mu.Unlock()
	if err := m.saved(); err != nil {
		return nil, err
	}
	return pb.FunctionPrecreateResponse_builder{FunctionId: f.ID, HandleMetadata: md}.Build(), nil
}

func (api *modalAPI) FunctionCreate(ctx context.Context, req *pb.FunctionCreateRequest) (*pb.FunctionCreateResponse, error) {
	m := api.m
	def := req.GetFunction()
	name, imageID, secretIDs, mountIDs, module := def.GetFunctionName(), def.GetImageId(), def.GetSecretIds(), def.GetMountIds(), def.GetModuleName()
	webhook, ftype := def.GetWebhookConfig(), def.GetFunctionType()
	if fd := req.GetFunctionData(); def == nil && fd != nil {
		// A function with a GPU fallback list: the shared fields are in
		// function_data, the container's in each ranked function.
		name, module, webhook, ftype = fd.GetFunctionName(), fd.GetModuleName(), fd.GetWebhookConfig(), fd.GetFunctionType()
		if rf := fd.GetRankedFunctions(); len(rf) > 0 {
			imageID, secretIDs, mountIDs = rf[0].GetFunction().GetImageId(), rf[0].GetFunction().GetSecretIds(), rf[0].GetFunction().GetMountIds()
		}
	}
	m.mu.Lock()
	a, err := m.app(ctx, req.GetAppId())
	var f *modalFunction
	if err == nil {
		err = m.checkRefs(ctx, imageID, secretIDs, mountIDs)
	}
	if err == nil {
		f, err = m.functionFor(a, name, req.GetExistingFunctionId())
	}
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	f.Module, f.ImageID = module, imageID
	f.SecretIDs, f.MountIDs = slices.Clone(secretIDs), slices.Clone(mountIDs)
	if ftype != 0 {
		f.Type = ftype.String()
	}
	setWebhook(f, webhook)
	f.Created = true
	f.Digest = m.functionDigest(f)
	md := m.handleMetadata(ctx, a, f)
	m.mu.Unlock()
	if err := m.saved(); err != nil {
		return nil, err
	}
	return pb.FunctionCreateResponse_builder{FunctionId: f.ID, HandleMetadata: md}.Build(), nil
}

// functionDigest identifies what a function runs. Mounts count by content:
// each deploy uploads its files into new mounts. The caller holds m.mu.
func (m *Service) functionDigest(f *modalFunction) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00", f.Name, f.Type, f.Module, f.ImageID, f.WebType, f.WebMethod)
	for _, id := range f.SecretIDs {
		fmt.Fprintf(h, "secret %s\x00", id)
	}
	// The CLI sends a function's mounts in no fixed order: they are a set.
	var mounts []string
	for _, id := range f.MountIDs {
		if mt, ok := m.st.Mounts[id]; ok {
			mounts = append(mounts, mt.Checksum)
		}
	}
	slices.Sort(mounts)
	for _, sum := range mounts {
		fmt.Fprintf(h, "mount %s\x00", sum)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// checkRefs rejects a function that names an image, secret or mount the
// caller's workspace does not have, as Modal does. The caller holds m.mu.
func (m *Service) checkRefs(ctx context.Context, imageID string, secretIDs, mountIDs []string) error {
	ws := callerFrom(ctx).workspace
	if imageID != "" {
		img, ok := m.st.Images[imageID]
		if !ok || img.Workspace != ws {
			return notFound("Image %s not found", imageID)
		}
		if img.State != imageReady {
			return status.Errorf(codes.FailedPrecondition, "Image %s is not built (%s)", imageID, img.State)
		}
	}
	for _, id := range secretIDs {
		if s, ok := m.st.Secrets[id]; !ok || s.Workspace != ws {
			return notFound("Secret %s not found", id)
		}
	}
	for _, id := range mountIDs {
		if mt, ok := m.st.Mounts[id]; !ok || mt.Workspace != ws && !mt.Global {
			return notFound("Mount %s not found", id)
		}
	}
	return nil
}

func (api *modalAPI) FunctionGet(ctx context.Context, req *pb.FunctionGetRequest) (*pb.FunctionGetResponse, error) {
	m := api.m
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.env(callerFrom(ctx).workspace, req.GetEnvironmentName())
	if err != nil {
		return nil, err
	}
	a := m.namedApp(e.Workspace, e.Name, req.GetAppName())
	if a == nil || a.State != pb.AppState_APP_STATE_DEPLOYED.String() {
		return nil, notFound("Lookup failed for Function '%s' from the '%s' app: App not found in environment '%s'", req.GetObjectTag(), req.GetAppName(), e.Name)
	}
	d := a.current()
	if d == nil || d.FunctionIDs[req.GetObjectTag()] == "" {
		return nil, notFound("Lookup failed for Function '%s' from the '%s' app: Function not found", req.GetObjectTag(), req.GetAppName())
	}
	f := m.st.Functions[d.FunctionIDs[req.GetObjectTag()]]
	if f == nil {
		return nil, notFound("Function '%s' not found", req.GetObjectTag())
	}
	return pb.FunctionGetResponse_builder{FunctionId: f.ID, HandleMetadata: m.handleMetadata(ctx, a, f)}.Build(), nil
}

// --- Mounts -----------------------------------------------------------------

// MountPutFile records an uploaded file by content hash, and keeps its
// content (the deployed app's source, which its web endpoints run from:
// runner.go).
func (api *modalAPI) MountPutFile(ctx context.Context, req *pb.MountPutFileRequest) (*pb.MountPutFileResponse, error) {
	m := api.m
	sum := strings.ToLower(req.GetSha256Hex())
	if len(sum) != 64 {
		return nil, invalidArg("sha256_hex must be 64 hex digits")
	}
	if req.HasData() || req.HasDataBlobId() {
		if req.HasDataBlobId() {
			return nil, status.Error(codes.Unimplemented, "blob uploads are not emulated; files must be sent inline")
		}
		got := sha256.Sum256(req.GetData())
		if hex.EncodeToString(got[:]) != sum {
			return nil, invalidArg("Data does not match sha256_hex %s", sum)
		}
		if err := m.keepFile(sum, req.GetData()); err != nil {
			return nil, status.Errorf(codes.Internal, "keeping file %s: %v", sum, err)
		}
		m.mu.Lock()
		_, had := m.st.Files[sum]
		m.st.Files[sum] = int64(len(req.GetData()))
		m.mu.Unlock()
		if !had {
			if err := m.saved(); err != nil {
				return nil, err
			}
		}
		return pb.MountPutFileResponse_builder{Exists: true}.Build(), nil
	}
	m.mu.Lock()
	_, ok := m.st.Files[sum]
	m.mu.Unlock()
	// A file recorded before contents were kept is asked for again.
	return pb.MountPutFileResponse_builder{Exists: ok && m.hasFile(sum)}.Build(), nil
}

// MountGetOrCreate creates an anonymous mount of uploaded files, or looks
// up or creates a named one. Modal itself provides named mounts in the global
// namespace (the client package a function container imports, for one), so
// a lookup there always finds one.
func (api *modalAPI) MountGetOrCreate(ctx context.Context, req *pb.MountGetOrCreateRequest) (*pb.MountGetOrCreateResponse, error) {
	m := api.m
	ws := callerFrom(ctx).workspace
	name, ct := req.GetDeploymentName(), req.GetObjectCreationType()
	global := req.GetNamespace() == pb.DeploymentNamespace_DEPLOYMENT_NAMESPACE_GLOBAL
	m.mu.Lock()
	envName := ""
	if name != "" && !global {
		e, err := m.env(ws, req.GetEnvironmentName())
		if err != nil {
			m.mu.Unlock()
			return nil, err
		}
		envName = e.Name
	}
	var existing *modalMount
	if name != "" {
		for _, mt := range m.st.Mounts {
			if mt.Name == name && mt.Global == global && (global || mt.Workspace == ws && mt.Environment == envName) {
				existing = mt
			}
		}
		switch {
		case existing != nil && ct == pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_FAIL_IF_EXISTS:
			m.mu.Unlock()
			return nil, status.Errorf(codes.AlreadyExists, "Mount '%s' already exists", name)
		case existing != nil && ct != pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_OVERWRITE_IF_EXISTS:
			m.mu.Unlock()
			return mountProto(existing), nil
		case existing == nil && ct == pb.ObjectCreationType_OBJECT_CREATION_TYPE_UNSPECIFIED && !global:
			m.mu.Unlock()
			return nil, notFound("Mount '%s' not found in environment '%s'", name, envName)
		}
	}
	files := map[string]string{}
	h := sha256.New()
	for _, f := range req.GetFiles() {
		sum := strings.ToLower(f.GetSha256Hex())
		if _, ok := m.st.Files[sum]; !ok {
			m.mu.Unlock()
			return nil, status.Errorf(codes.FailedPrecondition, "File %s (%s) was not uploaded", f.GetFilename(), sum)
		}
		files[f.GetFilename()] = sum
	}
	for _, fn := range core.SortedKeys(files) {
		fmt.Fprintf(h, "%s\x00%s\n", fn, files[fn])
	}
	mt := existing
	if mt == nil {
		mt = &modalMount{ID: newModalID("mo"), Workspace: ws, Name: name, Global: global, Environment: envName, CreatedAt: time.Now().UTC()}
		if global {
			mt.Workspace = ""
		}
		m.st.Mounts[mt.ID] = mt
	}
	mt.Files, mt.Checksum = files, hex.EncodeToString(h.Sum(nil))
	m.mu.Unlock()
	if err := m.saved(); err != nil {
		return nil, err
	}
	return mountProto(mt), nil
}

func mountProto(mt *modalMount) *pb.MountGetOrCreateResponse {
	return pb.MountGetOrCreateResponse_builder{
		MountId:        mt.ID,
		HandleMetadata: pb.MountHandleMetadata_builder{ContentChecksumSha256Hex: mt.Checksum}.Build(),
	}.Build()
}
