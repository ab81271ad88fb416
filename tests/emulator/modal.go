package emulator

// The Modal part of the emulator: Modal's control-plane API (gRPC, service
// modal.client.ModalClient, the server stubs modal-go v0.7.0 ships) on the
// same listener and URL as the Cloudflare API, so that one
// MODAL_SERVER_URL=<URL()> serves both modal-go and the `modal` Python CLI.
// Both clients treat an http:// server URL as plaintext HTTP/2 with prior
// knowledge (h2c); Start enables that on the listener (modalProtocols) and
// requests whose path is /modal.client.ModalClient/<Method> reach the gRPC
// server through the ordinary mux, so counting, faults and the request log
// work as for every other route.
//
// Files:
//   - modal.go: options, state, persistence, the HTTP entry point (counting,
//     faults), authentication;
//   - modal_api.go: workspaces, environments, apps, functions, mounts;
//   - modal_objects.go: secrets, images, sandboxes;
//   - modal_web.go: the deployed web endpoints, the admin helpers and the
//     inventory.
//
// What is not emulated: running code. Functions never execute (a web
// endpoint answers a canned JSON), image builds run no Dockerfile (they pass
// through the build states and finish at once unless a fault fails them),
// and sandboxes run nothing (they live until terminated).

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// DefaultModalTokenID and DefaultModalTokenSecret are the Modal token pair
// accepted when Options.ModalTokens is nil. Like DefaultToken they are
// documented demo values, never real secrets; they have the prefixes real
// Modal tokens have (ak-, as-).
const (
	DefaultModalTokenID     = "ak-openinspect-emulator"
	DefaultModalTokenSecret = "as-openinspect-emulator"
)

// DefaultModalWorkspace is the workspace DefaultModalTokenID belongs to.
const DefaultModalWorkspace = "openinspect-emulator"

// DefaultModalEnvironment is the environment used when a request names none,
// as on a new Modal workspace.
const DefaultModalEnvironment = "main"

// ModalImageBuilderVersion is what every environment reports as its image
// builder version (the one modal 1.4.3 defaults to).
const ModalImageBuilderVersion = "2025.06"

// ModalHealthBody is what GET on a deployed open-inspect app's api-health
// endpoint answers: the body the Open-Inspect contract records for that
// endpoint (third_party/background-agents/contract.json,
// sandbox.modal.health.body).
const ModalHealthBody = `{"success":true,"data":{"status":"healthy","service":"open-inspect-modal"}}`

// modalService is the gRPC method-path prefix; a path under it is a Modal
// API call.
const modalServicePrefix = "/modal.client.ModalClient/"

// modalCountPrefix starts the Counts key of every Modal API call, e.g.
// "grpc /modal.client.ModalClient/AppCreate". It doubles as the method of a
// Fault aimed at a Modal call ("grpc /modal.client.ModalClient/AppCreate").
const modalCountPrefix = "grpc "

// ModalToken is one accepted Modal token pair and the workspace it may use.
type ModalToken struct {
	ID        string `json:"id"`
	Secret    string `json:"secret"`
	Workspace string `json:"workspace"`
}

// FaultImageBuildFailure makes the next image build(s) requested with
// ImageGetOrCreate fail: the call itself succeeds, the build then ends with
// GENERIC_STATUS_FAILURE, as when a Dockerfile step fails on Modal. Its Route
// must be empty or "/modal.client.ModalClient/ImageGetOrCreate".
const FaultImageBuildFailure FaultKind = "image_build_failure"

// modalImageBuildRoute is the only route FaultImageBuildFailure applies to.
const modalImageBuildRoute = modalServicePrefix + "ImageGetOrCreate"

// modalWebRoute is the route (and Counts key, after the method) of the
// deployed web endpoints.
const modalWebRoute = "/__modal/web/{label}"

// modalFaultHeader carries a FaultImageBuildFailure from the HTTP layer, where
// faults are taken, to the ImageGetOrCreate handler (gRPC turns request
// headers into incoming metadata). Clients cannot set it: it is removed from
// every request first.
const modalFaultHeader = "x-openinspect-emulator-fault"

// modalStateVersion guards modal.json's shape, like stateVersion.
const modalStateVersion = 1

// checkModalFault validates the Modal-specific parts of a Fault for
// Fault.normalize: Modal routes are gRPC method paths (method "" or "GRPC")
// or the web endpoints, and build failures aim at ImageGetOrCreate only.
func checkModalFault(f Fault) (Fault, error) {
	if f.Kind == FaultImageBuildFailure {
		if f.Route == "" {
			f.Route = modalImageBuildRoute
		}
		if f.Route != modalImageBuildRoute {
			return f, fmt.Errorf("%s faults apply to %s only, not %q", FaultImageBuildFailure, modalImageBuildRoute, f.Route)
		}
	}
	if strings.HasPrefix(f.Route, modalServicePrefix) && f.Method != "" && f.Method != "GRPC" {
		return f, fmt.Errorf("a fault on a Modal gRPC method takes method \"\" or \"grpc\", not %q", f.Method)
	}
	return f, nil
}

// isModalFaultRoute reports whether a Fault route names a Modal route.
func isModalFaultRoute(route string) bool {
	return strings.HasPrefix(route, modalServicePrefix) || route == modalWebRoute
}

// modalProtocols is what Start serves: HTTP/1.1 and HTTP/2 with prior
// knowledge on the plaintext listener. The standard library's support is
// used rather than golang.org/x/net/http2/h2c (deprecated in its favour):
// h2c hijacks connections, which then escape Server.Shutdown and Close, so a
// closed emulator would go on answering gRPC on open connections.
func modalProtocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// modalEmu is the Modal half of a Server. Its state has its own lock and its
// own file (modal.json in the data directory).
type modalEmu struct {
	srv        *Server
	tokens     map[string]ModalToken // by token ID
	webSuffix  map[string]string     // environment name -> web suffix override
	grpc       *grpc.Server
	tokenKey   []byte // signs auth tokens; per process, so a restart invalidates them
	tokenTTL   time.Duration
	stateFile  *core.StateFile // modal.json
	buildDelay time.Duration

	mu sync.Mutex
	st *modalState
}

// modalState is everything Modal-side the emulator keeps, persisted as JSON.
type modalState struct {
	Version      int                       `json:"version"`
	Environments map[string]*modalEnv      `json:"environments"` // by envKey(workspace, name)
	Apps         map[string]*modalApp      `json:"apps"`         // by app ID
	Functions    map[string]*modalFunction `json:"functions"`    // by function ID
	Secrets      map[string]*modalSecret   `json:"secrets"`      // by secret ID
	Images       map[string]*modalImage    `json:"images"`       // by image ID
	Mounts       map[string]*modalMount    `json:"mounts"`       // by mount ID
	Files        map[string]int64          `json:"files"`        // uploaded mount files: sha256 hex -> size
	Sandboxes    map[string]*modalSandbox  `json:"sandboxes"`    // by sandbox ID
	Seq          int64                     `json:"seq"`          // last creation stamp handed out
}

type modalEnv struct {
	ID        string    `json:"id"`
	Workspace string    `json:"workspace"`
	Name      string    `json:"name"`
	WebSuffix string    `json:"web_suffix"`
	CreatedAt time.Time `json:"created_at"`
}

func envKey(workspace, name string) string { return workspace + "/" + name }

// modalApp is one app. Name is set for deployed (named) apps and empty for
// ephemeral ones; State is an AppState enum name.
type modalApp struct {
	ID          string            `json:"id"`
	Workspace   string            `json:"workspace"`
	Environment string            `json:"environment"`
	Name        string            `json:"name,omitempty"`
	Description string            `json:"description,omitempty"`
	State       string            `json:"state"`
	CreatedAt   time.Time         `json:"created_at"`
	StoppedAt   time.Time         `json:"stopped_at,omitzero"`
	Heartbeat   time.Time         `json:"heartbeat,omitzero"`
	Tags        map[string]string `json:"tags,omitempty"`
	// Deployments holds every published version, oldest first; the last one
	// is what the app serves.
	Deployments []*modalDeployment `json:"deployments,omitempty"`
	// Objects are the objects created for the app since it was last
	// published (FunctionPrecreate/FunctionCreate), by tag.
	Pending map[string]string `json:"pending,omitempty"`
}

type modalDeployment struct {
	Version     int               `json:"version"`
	Tag         string            `json:"tag,omitempty"`
	PublishedAt time.Time         `json:"published_at"`
	FunctionIDs map[string]string `json:"function_ids"` // tag -> function ID
	Digests     map[string]string `json:"digests"`      // tag -> definition digest, to spot no-op deploys
	ClassIDs    map[string]string `json:"class_ids,omitempty"`
	ClientVer   string            `json:"client_version,omitempty"`
}

func (a *modalApp) current() *modalDeployment {
	if len(a.Deployments) == 0 {
		return nil
	}
	return a.Deployments[len(a.Deployments)-1]
}

type modalFunction struct {
	ID        string    `json:"id"`
	AppID     string    `json:"app_id"`
	Name      string    `json:"name"`
	Type      string    `json:"type,omitempty"` // Function_FunctionType enum name
	Module    string    `json:"module,omitempty"`
	ImageID   string    `json:"image_id,omitempty"`
	SecretIDs []string  `json:"secret_ids,omitempty"`
	MountIDs  []string  `json:"mount_ids,omitempty"`
	WebType   string    `json:"web_type,omitempty"`   // WebhookType enum name; "" = not a web endpoint
	WebMethod string    `json:"web_method,omitempty"` // e.g. GET; "" = any
	Created   bool      `json:"created"`              // false while only precreated
	Digest    string    `json:"digest,omitempty"`     // of the definition FunctionCreate received
	CreatedAt time.Time `json:"created_at"`
}

// isWeb reports whether the function is a web endpoint.
func (f *modalFunction) isWeb() bool {
	return f.WebType != "" && f.WebType != pb.WebhookType_WEBHOOK_TYPE_UNSPECIFIED.String()
}

// modalSecret is a named or ephemeral secret. Values never leave the
// emulator except through Go (ModalSecretValues, for tests).
type modalSecret struct {
	ID          string            `json:"id"`
	Workspace   string            `json:"workspace"`
	Environment string            `json:"environment"`
	Name        string            `json:"name,omitempty"` // "" = ephemeral
	Values      map[string]string `json:"values"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
	Stamp       int64             `json:"stamp"`
}

// Image build states.
const (
	imageBuilding = "building"
	imageReady    = "ready"
	imageFailed   = "failed"
)

type modalImage struct {
	ID             string    `json:"id"`
	Workspace      string    `json:"workspace"`
	AppID          string    `json:"app_id,omitempty"`
	Digest         string    `json:"digest"` // of the definition; equal definitions share a built image
	Commands       []string  `json:"commands"`
	BaseImageIDs   []string  `json:"base_image_ids,omitempty"`
	ContextMountID string    `json:"context_mount_id,omitempty"`
	BuilderVersion string    `json:"builder_version,omitempty"`
	State          string    `json:"state"`
	Failure        string    `json:"failure,omitempty"`
	FailBuild      bool      `json:"fail_build,omitempty"` // decided by a fault at request time
	CreatedAt      time.Time `json:"created_at"`
	BuiltAt        time.Time `json:"built_at,omitzero"`
}

type modalMount struct {
	ID          string            `json:"id"`
	Workspace   string            `json:"workspace"` // "" for Modal's global mounts
	Name        string            `json:"name,omitempty"`
	Global      bool              `json:"global,omitempty"`
	Environment string            `json:"environment,omitempty"`
	Files       map[string]string `json:"files"` // path -> sha256 hex
	Checksum    string            `json:"checksum"`
	CreatedAt   time.Time         `json:"created_at"`
}

type modalSandbox struct {
	ID           string            `json:"id"`
	Workspace    string            `json:"workspace"`
	Environment  string            `json:"environment"`
	AppID        string            `json:"app_id"`
	ImageID      string            `json:"image_id,omitempty"`
	Name         string            `json:"name,omitempty"`
	Tags         map[string]string `json:"tags,omitempty"`
	CreatedAt    time.Time         `json:"created_at"`
	Stamp        int64             `json:"stamp"`
	TerminatedAt time.Time         `json:"terminated_at,omitzero"`
	TimeoutSecs  uint32            `json:"timeout_secs,omitempty"`
}

// running reports whether the sandbox has not finished at t: it was not
// terminated and its timeout (if any) has not run out.
func (sb *modalSandbox) running(t time.Time) bool {
	if !sb.TerminatedAt.IsZero() {
		return false
	}
	return sb.TimeoutSecs == 0 || t.Before(sb.CreatedAt.Add(time.Duration(sb.TimeoutSecs)*time.Second))
}

func newModalState() *modalState {
	return &modalState{
		Version:      modalStateVersion,
		Environments: map[string]*modalEnv{},
		Apps:         map[string]*modalApp{},
		Functions:    map[string]*modalFunction{},
		Secrets:      map[string]*modalSecret{},
		Images:       map[string]*modalImage{},
		Mounts:       map[string]*modalMount{},
		Files:        map[string]int64{},
		Sandboxes:    map[string]*modalSandbox{},
	}
}

var modalWorkspaceRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// openModal prepares the Modal half of s from opts and loads modal.json.
func (s *Server) openModal(opts Options) error {
	m := &modalEmu{
		srv:       s,
		tokens:    map[string]ModalToken{},
		webSuffix: map[string]string{},
		tokenTTL:  time.Hour,
		stateFile: core.NewStateFile(filepath.Join(s.dataDir, "modal.json"), ".modal-*.json", "Modal state"),

		buildDelay: opts.ModalImageBuildTime,
	}
	toks := opts.ModalTokens
	if toks == nil {
		toks = []ModalToken{{ID: DefaultModalTokenID, Secret: DefaultModalTokenSecret, Workspace: DefaultModalWorkspace}}
	}
	for _, t := range toks {
		if t.ID == "" || t.Secret == "" {
			return errors.New("emulator: Modal token IDs and secrets must be non-empty")
		}
		if !modalWorkspaceRE.MatchString(t.Workspace) {
			return fmt.Errorf("emulator: Modal workspace %q is not a lower-case DNS label", t.Workspace)
		}
		m.tokens[t.ID] = t
	}
	for env, suffix := range opts.ModalWebSuffixes {
		if suffix != "" && !modalWorkspaceRE.MatchString(suffix) {
			return fmt.Errorf("emulator: web suffix %q of Modal environment %q is not a lower-case DNS label", suffix, env)
		}
		m.webSuffix[env] = suffix
	}
	m.tokenKey = make([]byte, 32)
	if _, err := rand.Read(m.tokenKey); err != nil {
		return fmt.Errorf("emulator: %w", err)
	}
	st, err := loadModalState(m.stateFile.Path())
	if err != nil {
		return err
	}
	m.st = st
	m.grpc = grpc.NewServer(
		grpc.MaxRecvMsgSize(100<<20),
		grpc.ChainUnaryInterceptor(m.unaryInterceptor),
		grpc.ChainStreamInterceptor(m.streamInterceptor),
	)
	pb.RegisterModalClientServer(m.grpc, &modalAPI{m: m})
	s.modal = m
	return nil
}

func loadModalState(path string) (*modalState, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return newModalState(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("emulator: read Modal state: %w", err)
	}
	st := newModalState()
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("emulator: parse %s: %w", path, err)
	}
	if st.Version != modalStateVersion {
		return nil, fmt.Errorf("emulator: %s has Modal state version %d, this emulator reads %d", path, st.Version, modalStateVersion)
	}
	// Maps may be null in hand-edited files; handlers assume they are not.
	fresh := newModalState()
	if st.Environments == nil {
		st.Environments = fresh.Environments
	}
	if st.Apps == nil {
		st.Apps = fresh.Apps
	}
	if st.Functions == nil {
		st.Functions = fresh.Functions
	}
	if st.Secrets == nil {
		st.Secrets = fresh.Secrets
	}
	if st.Images == nil {
		st.Images = fresh.Images
	}
	if st.Mounts == nil {
		st.Mounts = fresh.Mounts
	}
	if st.Files == nil {
		st.Files = fresh.Files
	}
	if st.Sandboxes == nil {
		st.Sandboxes = fresh.Sandboxes
	}
	return st, nil
}

// save persists the Modal state through core.StateFile: snapshot under mu,
// written outside it, newest snapshot wins, via rename.
func (m *modalEmu) save() error { return m.stateFile.Save(&m.mu, m.st) }

// saved ends a mutating RPC: it persists the state and turns a failure to do
// so into Internal, so a client never believes in a change that a restart
// would lose.
func (m *modalEmu) saved() error {
	if err := m.save(); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return nil
}

// registerModal mounts the Modal API, the web endpoints of deployed apps and
// the Modal admin routes.
func (s *Server) registerModal() {
	s.mux.HandleFunc(modalServicePrefix, s.modal.serveGRPC)
	s.mux.HandleFunc(modalWebRoute, s.modal.serveWeb)
	s.mux.HandleFunc(modalWebRoute+"/{path...}", s.modal.serveWeb)
	s.mux.HandleFunc("GET /__modal/apps/{app_id}", s.modal.serveAppPage)
	s.modal.registerAdmin(s.mux)
}

// serveGRPC is the HTTP entry point of every Modal API call. Counting and
// faults happen here, before the gRPC server sees the request, for the same
// reason as in Server.api: tests count attempts, not successes.
func (m *modalEmu) serveGRPC(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	m.srv.core.Count(modalCountPrefix+path, false)
	r.Header.Del(modalFaultHeader)
	if r.ProtoMajor != 2 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
		// What a gRPC server answers a plain HTTP/1 request.
		http.Error(w, "the Modal API is gRPC: HTTP/2 with content-type application/grpc", http.StatusUnsupportedMediaType)
		return
	}
	delay, f := m.srv.core.TakeFaults("GRPC", path)
	if f != nil && f.Kind == FaultHold {
		if !m.srv.core.Hold(w, r, f) {
			return
		}
		f = nil
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if f != nil {
		switch f.Kind {
		case FaultRateLimit:
			if f.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
			}
			writeGRPCStatus(w, codes.ResourceExhausted, "Too many requests, please slow down (emulated rate limit)")
			return
		case FaultServerError:
			writeGRPCStatus(w, codes.Unavailable, fmt.Sprintf("Modal is temporarily unavailable (emulated HTTP %d)", f.Status))
			return
		case FaultDropConnection:
			// HTTP/2 cannot drop one connection per request; aborting the
			// handler resets the stream, which the client sees the same way.
			panic(http.ErrAbortHandler)
		case FaultImageBuildFailure:
			r.Header.Set(modalFaultHeader, string(FaultImageBuildFailure))
		}
	}
	m.grpc.ServeHTTP(flushWriter{w}, r)
}

// writeGRPCStatus answers a gRPC call with a status and no message (a
// "trailers-only" response: grpc-status in the headers of an empty reply).
func writeGRPCStatus(w http.ResponseWriter, code codes.Code, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/grpc")
	h.Set("Grpc-Status", strconv.Itoa(int(code)))
	h.Set("Grpc-Message", url.PathEscape(msg))
	w.WriteHeader(http.StatusOK)
}

// flushWriter lets the gRPC server flush through the request log's
// statusWriter, which only exposes Flush via Unwrap.
type flushWriter struct{ http.ResponseWriter }

func (w flushWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w flushWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ModalCalls is the number of Modal API (gRPC) calls received, answered or
// not; the Modal counterpart of CloudflareCalls.
func (s *Server) ModalCalls() int {
	return s.core.CountsWhere(func(k string) bool {
		return strings.HasPrefix(k, modalCountPrefix)
	})
}

// caller is who made a call: the workspace its credentials belong to.
type caller struct {
	workspace string
	failBuild bool // a FaultImageBuildFailure applies to this call
}

type callerKey struct{}

func callerFrom(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// authenticate finds the caller's workspace. Control-plane calls carry the
// token pair (x-modal-token-id, x-modal-token-secret); modal-go adds the
// auth token from AuthTokenGet (x-modal-auth-token) to every call after the
// first. A valid auth token is enough; otherwise the pair must be valid.
// Nothing about the credentials is ever echoed back.
func (m *modalEmu) authenticate(ctx context.Context, method string) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	first := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	c := caller{failBuild: first(modalFaultHeader) == string(FaultImageBuildFailure)}
	if ws, ok := m.verifyAuthToken(first("x-modal-auth-token")); ok && method != modalServicePrefix+"AuthTokenGet" {
		c.workspace = ws
		return context.WithValue(ctx, callerKey{}, c), nil
	}
	id, secret := first("x-modal-token-id"), first("x-modal-token-secret")
	if id == "" || secret == "" {
		return nil, status.Error(codes.Unauthenticated, "Token missing. Could not authenticate client.")
	}
	tok, ok := m.tokens[id]
	if !ok || !hmac.Equal([]byte(tok.Secret), []byte(secret)) {
		return nil, status.Error(codes.Unauthenticated, "Token ID or secret is invalid.")
	}
	c.workspace = tok.Workspace
	return context.WithValue(ctx, callerKey{}, c), nil
}

func (m *modalEmu) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, err := m.authenticate(ctx, info.FullMethod)
	var resp any
	if err == nil {
		resp, err = h(ctx, req)
	}
	m.logCall(info.FullMethod, err)
	return resp, err
}

func (m *modalEmu) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, err := m.authenticate(ss.Context(), info.FullMethod)
	if err == nil {
		err = h(srv, &ctxStream{ServerStream: ss, ctx: ctx})
	}
	m.logCall(info.FullMethod, err)
	return err
}

// logCall adds the gRPC status to the request log, whose HTTP status is
// always 200 for gRPC. Messages are not logged: some quote user input.
func (m *modalEmu) logCall(method string, err error) {
	if m.srv.logf != nil {
		m.srv.logf("grpc %s -> %s", method, status.Code(err))
	}
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *ctxStream) Context() context.Context { return s.ctx }

// issueAuthToken makes a JWT-shaped token (HS256) whose exp claim both
// clients read to schedule refreshes.
func (m *modalEmu) issueAuthToken(workspace string) string {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims, _ := json.Marshal(map[string]any{"sub": workspace, "exp": time.Now().Add(m.tokenTTL).Unix()})
	unsigned := header + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, m.tokenKey)
	mac.Write([]byte(unsigned))
	return unsigned + "." + enc.EncodeToString(mac.Sum(nil))
}

func (m *modalEmu) verifyAuthToken(tok string) (string, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "", false
	}
	mac := hmac.New(sha256.New, m.tokenKey)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, mac.Sum(nil)) {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", false
	}
	var claims struct {
		Sub string `json:"sub"`
		Exp int64  `json:"exp"`
	}
	if json.Unmarshal(raw, &claims) != nil || time.Now().Unix() >= claims.Exp {
		return "", false
	}
	return claims.Sub, true
}

// newModalID returns an object ID the way Modal shapes them: a two-letter
// type prefix, a dash and 22 base-62 characters (the Python CLI recognises
// app IDs by exactly that pattern).
func newModalID(prefix string) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 22)
	max := big.NewInt(int64(len(alphabet)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic("emulator: crypto/rand failed: " + err.Error())
		}
		b[i] = alphabet[n.Int64()]
	}
	return prefix + "-" + string(b)
}

// stamp returns a strictly increasing creation timestamp (seconds, as Modal's
// float timestamps), so "created before" pagination never skips or repeats
// objects created in the same instant. Callers hold m.mu.
func (m *modalEmu) stamp(t time.Time) (time.Time, int64) {
	ns := t.UnixNano() / 1000 * 1000 // microseconds: what a float64 of seconds carries exactly enough
	if ns <= m.st.Seq {
		ns = m.st.Seq + 1000
	}
	m.st.Seq = ns
	return time.Unix(0, ns), ns
}

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// baseURL is where this emulator is reached, for URLs handed to clients.
func (m *modalEmu) baseURL(ctx context.Context) string {
	if u := m.srv.URL(); u != "" {
		return u
	}
	// A Server made with New and mounted elsewhere: use the authority the
	// client dialled.
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if a := md.Get(":authority"); len(a) > 0 && a[0] != "" {
			return "http://" + a[0]
		}
	}
	return "http://127.0.0.1"
}
