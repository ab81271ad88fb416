package modal

// Modal API: secrets, images and sandboxes.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"

	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

var (
	modalSecretNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	modalEnvKeyRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// --- Secrets ----------------------------------------------------------------

// namedSecret finds a named secret. The caller holds m.mu.
func (m *Service) namedSecret(ws, env, name string) *modalSecret {
	for _, s := range m.st.Secrets {
		if s.Workspace == ws && s.Environment == env && s.Name == name {
			return s
		}
	}
	return nil
}

func secretProto(s *modalSecret) *pb.SecretGetOrCreateResponse {
	return pb.SecretGetOrCreateResponse_builder{SecretId: s.ID, Metadata: secretMetadata(s)}.Build()
}

func secretMetadata(s *modalSecret) *pb.SecretMetadata {
	return pb.SecretMetadata_builder{
		Name:         s.Name,
		CreationInfo: pb.CreationInfo_builder{CreatedAt: unixSeconds(time.Unix(0, s.Stamp))}.Build(),
	}.Build()
}

func validEnvDict(d map[string]string) error {
	for k := range d {
		if !modalEnvKeyRE.MatchString(k) {
			return invalidArg("Secret key %q is not a valid environment variable name", k)
		}
	}
	return nil
}

// SecretGetOrCreate is lookup (creation type unspecified, optionally with
// required keys), create-if-missing, create (AlreadyExists when present),
// overwrite (what `modal secret create --force` sends: the values are
// replaced as a whole) and ephemeral (anonymous, never listed).
func (api *modalAPI) SecretGetOrCreate(ctx context.Context, req *pb.SecretGetOrCreateRequest) (*pb.SecretGetOrCreateResponse, error) {
	m := api.m
	ct := req.GetObjectCreationType()
	ws := callerFrom(ctx).workspace
	if ct == pb.ObjectCreationType_OBJECT_CREATION_TYPE_EPHEMERAL || ct == pb.ObjectCreationType_OBJECT_CREATION_TYPE_ANONYMOUS_OWNED_BY_APP {
		if err := validEnvDict(req.GetEnvDict()); err != nil {
			return nil, err
		}
		m.mu.Lock()
		e, err := m.env(ws, req.GetEnvironmentName())
		if err != nil {
			m.mu.Unlock()
			return nil, err
		}
		s := m.newSecret(e, "", req.GetEnvDict())
		m.mu.Unlock()
		if err := m.saved(); err != nil {
			return nil, err
		}
		return secretProto(s), nil
	}
	name := req.GetDeploymentName()
	if !modalSecretNameRE.MatchString(name) {
		return nil, invalidArg("Invalid Secret name %q: use up to 64 letters, digits, '.', '-' and '_'", name)
	}
	if ct != pb.ObjectCreationType_OBJECT_CREATION_TYPE_UNSPECIFIED {
		if err := validEnvDict(req.GetEnvDict()); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	e, err := m.env(ws, req.GetEnvironmentName())
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	s := m.namedSecret(ws, e.Name, name)
	switch ct {
	case pb.ObjectCreationType_OBJECT_CREATION_TYPE_UNSPECIFIED:
		defer m.mu.Unlock()
		if s == nil {
			return nil, notFound("Secret '%s' not found in environment '%s'", name, e.Name)
		}
		var missing []string
		for _, k := range req.GetRequiredKeys() {
			if _, ok := s.Values[k]; !ok {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return nil, notFound("Secret '%s' is missing key(s): %s", name, strings.Join(missing, ", "))
		}
		return secretProto(s), nil
	case pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_IF_MISSING:
		if s != nil {
			m.mu.Unlock()
			return secretProto(s), nil
		}
		s = m.newSecret(e, name, req.GetEnvDict())
	case pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_FAIL_IF_EXISTS:
		if s != nil {
			m.mu.Unlock()
			return nil, status.Errorf(codes.AlreadyExists, "Secret '%s' already exists in environment '%s'", name, e.Name)
		}
		s = m.newSecret(e, name, req.GetEnvDict())
	case pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_OVERWRITE_IF_EXISTS:
		if s == nil {
			s = m.newSecret(e, name, req.GetEnvDict())
		} else {
			s.Values = maps.Clone(req.GetEnvDict())
			if s.Values == nil {
				s.Values = map[string]string{}
			}
			s.UpdatedAt = time.Now().UTC()
		}
	default:
		m.mu.Unlock()
		return nil, invalidArg("Unsupported object creation type %s for a Secret", ct)
	}
	m.mu.Unlock()
	if err := m.saved(); err != nil {
		return nil, err
	}
	return secretProto(s), nil
}

// newSecret adds a secret. The caller holds m.mu.
func (m *Service) newSecret(e *modalEnv, name string, values map[string]string) *modalSecret {
	at, ns := m.stamp(time.Now())
	s := &modalSecret{
		ID: newModalID("st"), Workspace: e.Workspace, Environment: e.Name, Name: name,
		Values: maps.Clone(values), CreatedAt: at.UTC(), UpdatedAt: at.UTC(), Stamp: ns,
	}
	if s.Values == nil {
		s.Values = map[string]string{}
	}
	m.st.Secrets[s.ID] = s
	return s
}

// SecretList pages newest first: max_objects per page (100 when 0), only
// secrets created before created_before when it is set.
func (api *modalAPI) SecretList(ctx context.Context, req *pb.SecretListRequest) (*pb.SecretListResponse, error) {
	m := api.m
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.env(callerFrom(ctx).workspace, req.GetEnvironmentName())
	if err != nil {
		return nil, err
	}
	before := req.GetPagination().GetCreatedBefore()
	limit := int(req.GetPagination().GetMaxObjects())
	if limit <= 0 {
		limit = 100
	}
	var list []*modalSecret
	for _, s := range m.st.Secrets {
		if s.Workspace == e.Workspace && s.Environment == e.Name && s.Name != "" &&
			(before == 0 || unixSeconds(time.Unix(0, s.Stamp)) < before) {
			list = append(list, s)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Stamp > list[j].Stamp })
	if len(list) > limit {
		list = list[:limit]
	}
	items := make([]*pb.SecretListItem, 0, len(list))
	for _, s := range list {
		items = append(items, pb.SecretListItem_builder{
			Label: s.Name, CreatedAt: unixSeconds(s.CreatedAt), EnvironmentName: e.Name, SecretId: s.ID, Metadata: secretMetadata(s),
		}.Build())
	}
	return pb.SecretListResponse_builder{Items: items, EnvironmentName: e.Name}.Build(), nil
}

func (api *modalAPI) SecretDelete(ctx context.Context, req *pb.SecretDeleteRequest) (*emptypb.Empty, error) {
	m := api.m
	m.mu.Lock()
	s, ok := m.st.Secrets[req.GetSecretId()]
	if !ok || s.Workspace != callerFrom(ctx).workspace {
		m.mu.Unlock()
		return nil, notFound("Secret %s not found", req.GetSecretId())
	}
	delete(m.st.Secrets, s.ID)
	m.mu.Unlock()
	if err := m.saved(); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// --- Images -------------------------------------------------------------------

// image returns the caller's image. The caller holds m.mu.
func (m *Service) image(ctx context.Context, id string) (*modalImage, error) {
	img, ok := m.st.Images[id]
	if !ok || img.Workspace != callerFrom(ctx).workspace {
		return nil, notFound("Image %s not found", id)
	}
	return img, nil
}

// imageDigest identifies an image definition, so equal definitions share one
// built image as on Modal. A context mount counts by content, not by ID:
// every deploy uploads a new mount of the same files.
func (m *Service) imageDigest(def *pb.Image, builderVersion string) string {
	c := proto.Clone(def).(*pb.Image)
	checksum := ""
	if mt, ok := m.st.Mounts[c.GetContextMountId()]; ok {
		checksum = mt.Checksum
	}
	c.SetContextMountId("")
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	h := sha256.New()
	h.Write(b)
	fmt.Fprintf(h, "\x00%s\x00%s", checksum, builderVersion)
	return hex.EncodeToString(h.Sum(nil))
}

func imageMetadata(img *modalImage) *pb.ImageMetadata {
	return pb.ImageMetadata_builder{ImageBuilderVersion: new(img.BuilderVersion)}.Build()
}

func imageResult(img *modalImage) *pb.GenericResult {
	switch img.State {
	case imageReady:
		return pb.GenericResult_builder{Status: pb.GenericResult_GENERIC_STATUS_SUCCESS}.Build()
	case imageFailed:
		return pb.GenericResult_builder{Status: pb.GenericResult_GENERIC_STATUS_FAILURE, Exception: img.Failure, Exitcode: 1}.Build()
	}
	return nil
}

// ImageGetOrCreate answers a built image with the same definition at once;
// otherwise it starts a build and answers without a result, and the client
// follows the build with ImageJoinStreaming. A failed build is never reused.
func (api *modalAPI) ImageGetOrCreate(ctx context.Context, req *pb.ImageGetOrCreateRequest) (*pb.ImageGetOrCreateResponse, error) {
	m := api.m
	def := req.GetImage()
	if def == nil {
		return nil, invalidArg("Image definition is required")
	}
	ws := callerFrom(ctx).workspace
	m.mu.Lock()
	err := m.checkImageRefs(ctx, req.GetAppId(), def)
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	version := cmpOr(req.GetBuilderVersion(), ImageBuilderVersion)
	digest := m.imageDigest(def, version)
	if !req.GetForceBuild() && !callerFrom(ctx).failBuild {
		var best *modalImage
		for _, img := range m.st.Images {
			if img.Workspace == ws && img.Digest == digest && img.State != imageFailed && (best == nil || img.CreatedAt.After(best.CreatedAt)) {
				best = img
			}
		}
		if best != nil {
			m.mu.Unlock()
			return pb.ImageGetOrCreateResponse_builder{ImageId: best.ID, Result: imageResult(best), Metadata: imageMetadata(best)}.Build(), nil
		}
	}
	var bases []string
	for _, b := range def.GetBaseImages() {
		bases = append(bases, b.GetImageId())
	}
	img := &modalImage{
		ID: newModalID("im"), Workspace: ws, AppID: req.GetAppId(), Digest: digest,
		Commands: slices.Clone(def.GetDockerfileCommands()), BaseImageIDs: bases, ContextMountID: def.GetContextMountId(),
		BuilderVersion: version, State: imageBuilding, FailBuild: callerFrom(ctx).failBuild, CreatedAt: time.Now().UTC(),
	}
	m.st.Images[img.ID] = img
	m.startBuild(img)
	m.mu.Unlock()
	if err := m.saved(); err != nil {
		return nil, err
	}
	return pb.ImageGetOrCreateResponse_builder{ImageId: img.ID}.Build(), nil
}

// checkImageRefs rejects an image whose app, base images, context mount or
// secrets the caller does not have. The caller holds m.mu.
func (m *Service) checkImageRefs(ctx context.Context, appID string, def *pb.Image) error {
	if appID != "" {
		if _, err := m.app(ctx, appID); err != nil {
			return err
		}
	}
	for _, b := range def.GetBaseImages() {
		img, err := m.image(ctx, b.GetImageId())
		if err != nil {
			return err
		}
		if img.State != imageReady {
			return status.Errorf(codes.FailedPrecondition, "Base image %s is not built (%s)", img.ID, img.State)
		}
	}
	var mounts []string // the context mount, when the image has one
	if id := def.GetContextMountId(); strings.TrimSpace(id) != "" {
		mounts = []string{id}
	}
	return m.checkRefs(ctx, "", def.GetSecretIds(), mounts)
}

// finishBuild ends a build whose time has come and whose installs, when
// sandboxes run, have ended. The caller holds m.mu and reports whether
// anything changed.
func (m *Service) finishBuild(img *modalImage, now time.Time) bool {
	if img.State != imageBuilding || now.Before(img.CreatedAt.Add(m.buildDelay)) {
		return false
	}
	pending, installErr := m.installs(img)
	if pending != nil {
		return false
	}
	img.BuiltAt = now.UTC()
	switch {
	case img.FailBuild:
		img.State = imageFailed
		img.Failure = "Build step failed (emulated failure injected with a fault)"
	case installErr != nil:
		img.State = imageFailed
		img.Failure = "Build step failed: " + installErr.Error()
	default:
		img.State = imageReady
	}
	return true
}

// buildLog is what a build prints: one line per Dockerfile step. It is
// entry 1 of the stream; the result is entry 2. installs says whether the
// RUN steps' installs ran (sandboxes run: imagebuild.go).
func buildLog(img *modalImage, installs bool) []*pb.TaskLogs {
	now := unixSeconds(time.Now())
	how := "emulated: no step runs"
	if installs {
		how = "emulated: its RUN steps' pip and npm installs ran on this machine; the emulator's log says what else did not"
	}
	logs := []*pb.TaskLogs{pb.TaskLogs_builder{
		Data: fmt.Sprintf("Building image %s (%s)\n", img.ID, how), Timestamp: now,
		FileDescriptor: pb.FileDescriptor_FILE_DESCRIPTOR_INFO,
	}.Build()}
	for i, c := range img.Commands {
		logs = append(logs, pb.TaskLogs_builder{
			Data: fmt.Sprintf("=> Step %d: %s\n", i, c), Timestamp: now, FileDescriptor: pb.FileDescriptor_FILE_DESCRIPTOR_STDOUT,
		}.Build())
	}
	if img.State == imageFailed {
		logs = append(logs, pb.TaskLogs_builder{Data: img.Failure + "\n", Timestamp: now, FileDescriptor: pb.FileDescriptor_FILE_DESCRIPTOR_STDERR}.Build())
	}
	return logs
}

// ImageJoinStreaming follows a build: it waits (up to the request's timeout)
// for the build to end, then sends the log and the result and closes. A
// stream that closes without a result means "join again", which both
// clients do.
func (api *modalAPI) ImageJoinStreaming(req *pb.ImageJoinStreamingRequest, stream grpc.ServerStreamingServer[pb.ImageJoinStreamingResponse]) error {
	m := api.m
	ctx := stream.Context()
	timeout := time.Duration(req.GetTimeout() * float32(time.Second))
	if timeout <= 0 || timeout > 55*time.Second {
		timeout = 55 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		m.mu.Lock()
		img, err := m.image(ctx, req.GetImageId())
		if err != nil {
			m.mu.Unlock()
			return err
		}
		changed := m.finishBuild(img, time.Now())
		state, ready := img.State, img.CreatedAt.Add(m.buildDelay)
		var installs <-chan struct{}
		if state == imageBuilding {
			installs, _ = m.installs(img)
		}
		snapshot := *img
		m.mu.Unlock()
		if changed {
			if err := m.saved(); err != nil {
				return err
			}
		}
		if state != imageBuilding {
			if req.GetLastEntryId() == "" {
				if err := stream.Send(pb.ImageJoinStreamingResponse_builder{TaskLogs: buildLog(&snapshot, m.sandboxRuntime.enabled()), EntryId: "1"}.Build()); err != nil {
					return err
				}
			}
			return stream.Send(pb.ImageJoinStreamingResponse_builder{
				Result: imageResult(&snapshot), Metadata: imageMetadata(&snapshot), EntryId: "2", Eof: true,
			}.Build())
		}
		wait := time.Until(ready)
		if installs != nil && wait <= 0 {
			wait = time.Until(deadline) // woken by the installs' end
		}
		if left := time.Until(deadline); left < wait {
			wait = left
		}
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return status.FromContextError(ctx.Err()).Err()
		case <-installs:
			t.Stop()
		case <-t.C:
		}
	}
}

func (api *modalAPI) ImageFromId(ctx context.Context, req *pb.ImageFromIdRequest) (*pb.ImageFromIdResponse, error) {
	m := api.m
	m.mu.Lock()
	defer m.mu.Unlock()
	img, err := m.image(ctx, req.GetImageId())
	if err != nil {
		return nil, err
	}
	return pb.ImageFromIdResponse_builder{ImageId: img.ID, Metadata: imageMetadata(img)}.Build(), nil
}

func (api *modalAPI) ImageDelete(ctx context.Context, req *pb.ImageDeleteRequest) (*emptypb.Empty, error) {
	m := api.m
	m.mu.Lock()
	img, err := m.image(ctx, req.GetImageId())
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	delete(m.st.Images, img.ID)
	m.mu.Unlock()
	if err := m.saved(); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// --- Sandboxes ------------------------------------------------------------------

func (m *Service) sandbox(ctx context.Context, id string) (*modalSandbox, error) {
	sb, ok := m.st.Sandboxes[id]
	if !ok || sb.Workspace != callerFrom(ctx).workspace {
		return nil, notFound("Sandbox %s not found", id)
	}
	return sb, nil
}

func (api *modalAPI) SandboxCreate(ctx context.Context, req *pb.SandboxCreateRequest) (*pb.SandboxCreateResponse, error) {
	m := api.m
	def := req.GetDefinition()
	m.mu.Lock()
	a, err := m.app(ctx, req.GetAppId())
	if err == nil && a.State == pb.AppState_APP_STATE_STOPPED.String() {
		err = status.Errorf(codes.FailedPrecondition, "App %s is stopped", a.ID)
	}
	if err == nil {
		err = m.checkRefs(ctx, def.GetImageId(), def.GetSecretIds(), def.GetMountIds())
	}
	if err == nil && def.GetName() != "" {
		for _, other := range m.st.Sandboxes {
			if other.AppID == a.ID && other.Name == def.GetName() && other.running(time.Now()) {
				err = status.Errorf(codes.AlreadyExists, "Sandbox with name '%s' already exists in App %s", def.GetName(), a.ID)
			}
		}
	}
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	sb := m.newSandbox(a, def.GetImageId(), def.GetName(), def.GetTimeoutSecs(), nil)
	sb.Command, sb.Workdir, sb.SecretIDs = slices.Clone(def.GetEntrypointArgs()), def.GetWorkdir(), slices.Clone(def.GetSecretIds())
	run := m.sandboxRuntime.enabled() && len(def.GetEntrypointArgs()) > 0
	var env map[string]string
	var layout imageLayout
	if run {
		sb.Ran = true
		env, layout = m.sandboxEnvFrom(ctx, def.GetSecretIds()), m.layoutOf(def.GetImageId())
		m.mountInto(&layout, def.GetMountIds())
	}
	m.mu.Unlock()
	if run {
		if err := m.startSandbox(sb, def.GetEntrypointArgs(), def.GetWorkdir(), env, layout); err != nil {
			m.mu.Lock()
			sb.TerminatedAt, sb.Result, sb.ExitCode = time.Now().UTC(), resultFailure, 1
			m.mu.Unlock()
			_ = m.saved()
			return nil, status.Errorf(codes.Internal, "the emulator could not start the sandbox: %v", err)
		}
		if sb.TimeoutSecs > 0 {
			id := sb.ID
			time.AfterFunc(time.Duration(sb.TimeoutSecs)*time.Second, func() {
				m.mu.Lock()
				if sb.TerminatedAt.IsZero() {
					sb.TerminatedAt, sb.Result = time.Now().UTC(), resultTimeout
				}
				m.mu.Unlock()
				m.stopSandbox(id)
			})
		}
	}
	if err := m.saved(); err != nil {
		return nil, err
	}
	return pb.SandboxCreateResponse_builder{SandboxId: sb.ID}.Build(), nil
}

// newSandbox adds a running sandbox to a. The caller holds m.mu.
func (m *Service) newSandbox(a *modalApp, imageID, name string, timeout uint32, tags map[string]string) *modalSandbox {
	at, ns := m.stamp(time.Now())
	sb := &modalSandbox{
		ID: newModalID("sb"), Workspace: a.Workspace, Environment: a.Environment, AppID: a.ID, ImageID: imageID,
		Name: name, Tags: maps.Clone(tags), CreatedAt: at.UTC(), Stamp: ns, TimeoutSecs: timeout,
	}
	m.st.Sandboxes[sb.ID] = sb
	return sb
}

func sandboxTags(tags map[string]string) []*pb.SandboxTag {
	out := make([]*pb.SandboxTag, 0, len(tags))
	for _, k := range core.SortedKeys(tags) {
		out = append(out, pb.SandboxTag_builder{TagName: k, TagValue: tags[k]}.Build())
	}
	return out
}

// SandboxList pages newest first (100 a page, before_timestamp as the
// cursor), filtered by app, by environment when no app is given, and by
// tags (a sandbox must carry all of them). Finished sandboxes only on
// request.
func (api *modalAPI) SandboxList(ctx context.Context, req *pb.SandboxListRequest) (*pb.SandboxListResponse, error) {
	m := api.m
	m.mu.Lock()
	defer m.mu.Unlock()
	ws := callerFrom(ctx).workspace
	env := ""
	if req.GetAppId() != "" {
		if _, err := m.app(ctx, req.GetAppId()); err != nil {
			return nil, err
		}
	} else {
		e, err := m.env(ws, req.GetEnvironmentName())
		if err != nil {
			return nil, err
		}
		env = e.Name
	}
	want := map[string]string{}
	for _, t := range req.GetTags() {
		want[t.GetTagName()] = t.GetTagValue()
	}
	now := time.Now()
	var list []*modalSandbox
	for _, sb := range m.st.Sandboxes {
		if sb.Workspace != ws || (req.GetAppId() != "" && sb.AppID != req.GetAppId()) || (env != "" && sb.Environment != env) {
			continue
		}
		if !req.GetIncludeFinished() && !sb.running(now) {
			continue
		}
		if b := req.GetBeforeTimestamp(); b != 0 && unixSeconds(time.Unix(0, sb.Stamp)) >= b {
			continue
		}
		match := true
		for k, v := range want {
			if got, ok := sb.Tags[k]; !ok || got != v {
				match = false
				break
			}
		}
		if match {
			list = append(list, sb)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Stamp > list[j].Stamp })
	if len(list) > 100 {
		list = list[:100]
	}
	items := make([]*pb.SandboxInfo, 0, len(list))
	for _, sb := range list {
		items = append(items, pb.SandboxInfo_builder{
			Id: sb.ID, CreatedAt: unixSeconds(time.Unix(0, sb.Stamp)), AppId: sb.AppID, Tags: sandboxTags(sb.Tags),
			Name: sb.Name, ImageId: sb.ImageID, TimeoutSecs: sb.TimeoutSecs,
			TaskInfo: pb.TaskInfo_builder{Id: "ta-" + strings.TrimPrefix(sb.ID, "sb-"), StartedAt: unixSeconds(sb.CreatedAt), FinishedAt: unixSeconds(sb.TerminatedAt), SandboxId: sb.ID}.Build(),
		}.Build())
	}
	return pb.SandboxListResponse_builder{Sandboxes: items}.Build(), nil
}

func terminatedResult() *pb.GenericResult {
	return pb.GenericResult_builder{Status: pb.GenericResult_GENERIC_STATUS_TERMINATED}.Build()
}

func (api *modalAPI) SandboxTerminate(ctx context.Context, req *pb.SandboxTerminateRequest) (*pb.SandboxTerminateResponse, error) {
	m := api.m
	m.mu.Lock()
	sb, err := m.sandbox(ctx, req.GetSandboxId())
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	resp := pb.SandboxTerminateResponse_builder{}.Build()
	if !sb.running(time.Now()) {
		resp.SetExistingResult(sb.genericResult())
		m.mu.Unlock()
		return resp, nil
	}
	sb.TerminatedAt, sb.Result = time.Now().UTC(), resultTerminated
	m.mu.Unlock()
	m.stopSandbox(sb.ID)
	if err := m.saved(); err != nil {
		return nil, err
	}
	return resp, nil
}

// SandboxWait answers the result of a finished sandbox at once, and for a
// running one waits up to the request's timeout (a sandbox here only ends
// by being terminated or timing out).
func (api *modalAPI) SandboxWait(ctx context.Context, req *pb.SandboxWaitRequest) (*pb.SandboxWaitResponse, error) {
	m := api.m
	deadline := time.Now().Add(time.Duration(req.GetTimeout() * float32(time.Second)))
	for {
		m.mu.Lock()
		sb, err := m.sandbox(ctx, req.GetSandboxId())
		running := err == nil && sb.running(time.Now())
		var result *pb.GenericResult
		if err == nil && !running {
			result = sb.genericResult()
		}
		m.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if !running {
			return pb.SandboxWaitResponse_builder{Result: result}.Build(), nil
		}
		if !time.Now().Before(deadline) {
			return pb.SandboxWaitResponse_builder{}.Build(), nil
		}
		t := time.NewTimer(min(100*time.Millisecond, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-t.C:
		}
	}
}

func (api *modalAPI) SandboxTagsSet(ctx context.Context, req *pb.SandboxTagsSetRequest) (*emptypb.Empty, error) {
	m := api.m
	m.mu.Lock()
	sb, err := m.sandbox(ctx, req.GetSandboxId())
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	tags := map[string]string{}
	for _, t := range req.GetTags() {
		if t.GetTagName() == "" {
			m.mu.Unlock()
			return nil, invalidArg("Tag names must be non-empty")
		}
		tags[t.GetTagName()] = t.GetTagValue()
	}
	sb.Tags = tags
	m.mu.Unlock()
	if err := m.saved(); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (api *modalAPI) SandboxTagsGet(ctx context.Context, req *pb.SandboxTagsGetRequest) (*pb.SandboxTagsGetResponse, error) {
	m := api.m
	m.mu.Lock()
	defer m.mu.Unlock()
	sb, err := m.sandbox(ctx, req.GetSandboxId())
	if err != nil {
		return nil, err
	}
	return pb.SandboxTagsGetResponse_builder{Tags: sandboxTags(sb.Tags)}.Build(), nil
}
