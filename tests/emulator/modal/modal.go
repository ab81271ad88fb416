package modal

// modal.go: options, state, persistence, the HTTP entry point (counting,
// faults), authentication. See doc.go for what this family imitates.

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
	"sync/atomic"
	"time"

	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// DefaultTokenID and DefaultTokenSecret are the Modal token pair
// accepted when Options.Tokens is nil. Like the Cloudflare DefaultToken they are
// documented demo values, never real secrets; they have the prefixes real
// Modal tokens have (ak-, as-).
const (
	DefaultTokenID     = "ak-openinspect-emulator"
	DefaultTokenSecret = "as-openinspect-emulator"
)

// DefaultWorkspace is the workspace DefaultTokenID belongs to.
const DefaultWorkspace = "openinspect-emulator"

// DefaultEnvironment is the environment used when a request names none,
// as on a new Modal workspace.
const DefaultEnvironment = "main"

// ImageBuilderVersion is what every environment reports as its image
// builder version (the one modal 1.4.3 defaults to).
const ImageBuilderVersion = "2025.06"

// HealthBody is what GET on a deployed open-inspect app's api-health
// endpoint answers: the body the Open-Inspect contract records for that
// endpoint (third_party/background-agents/contract.json,
// sandbox.modal.health.body).
const HealthBody = `{"success":true,"data":{"status":"healthy","service":"open-inspect-modal"}}`

// modalService is the gRPC method-path prefix; a path under it is a Modal
// API call.
const modalServicePrefix = "/modal.client.ModalClient/"

// modalCountPrefix starts the Counts key of every Modal API call, e.g.
// "grpc /modal.client.ModalClient/AppCreate". It doubles as the method of a
// core.Fault aimed at a Modal call ("grpc /modal.client.ModalClient/AppCreate").
const modalCountPrefix = "grpc "

// Token is one accepted Modal token pair and the workspace it may use.
type Token struct {
	ID        string `json:"id"`
	Secret    string `json:"secret"`
	Workspace string `json:"workspace"`
}

// FaultImageBuildFailure makes the next image build(s) requested with
// ImageGetOrCreate fail: the call itself succeeds, the build then ends with
// GENERIC_STATUS_FAILURE, as when a Dockerfile step fails on Modal. Its Route
// must be empty or "/modal.client.ModalClient/ImageGetOrCreate".
const FaultImageBuildFailure core.FaultKind = "image_build_failure"

// modalImageBuildRoute is the only route FaultImageBuildFailure applies to.
const modalImageBuildRoute = modalServicePrefix + "ImageGetOrCreate"

// WebRoute is the route (and Counts key, after the method) of the
// deployed web endpoints.
const WebRoute = "/__modal/web/{label}"

// RealHosts are Modal's hosts the outbound gateway sends here: a deployed
// web endpoint's https://<label>.modal.run is WebRoute with that label.
var RealHosts = map[string]string{"*.modal.run": "/__modal/web/{label}"}

// modalFaultHeader carries a FaultImageBuildFailure from the HTTP layer, where
// faults are taken, to the ImageGetOrCreate handler (gRPC turns request
// headers into incoming metadata). Clients cannot set it: it is removed from
// every request first.
const modalFaultHeader = "x-openinspect-emulator-fault"

// modalStateVersion guards modal.json's shape; a mismatch refuses to load.
const modalStateVersion = 1

// CheckFault validates the Modal-specific parts of a core.Fault for the
// composition root's fault check (core.SetFaultCheck): Modal routes are gRPC method paths (method "" or "GRPC")
// or the web endpoints, and build failures aim at ImageGetOrCreate only.
func CheckFault(f core.Fault) (core.Fault, error) {
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

// IsFaultRoute reports whether a fault's route names a Modal route.
func IsFaultRoute(route string) bool {
	return strings.HasPrefix(route, modalServicePrefix) || route == WebRoute
}

// Protocols is what the emulator's listener serves: HTTP/1.1 and HTTP/2 with prior
// knowledge on the plaintext listener. The standard library's support is
// used rather than golang.org/x/net/http2/h2c (deprecated in its favour):
// h2c hijacks connections, which then escape http.Server.Shutdown and Close, so a
// closed emulator would go on answering gRPC on open connections.
func Protocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// Options configures a Service.
type Options struct {
	// Tokens are the accepted token pairs, each with its workspace. Nil
	// means DefaultTokenID and DefaultTokenSecret -> DefaultWorkspace.
	Tokens []Token
	// WebSuffixes overrides the web suffix of environments by name; by
	// default "main" has none and any other environment its name.
	WebSuffixes map[string]string
	// ImageBuildTime is how long an image build takes (default 0: done as
	// soon as a client follows it).
	ImageBuildTime time.Duration
	// BaseURL, when set, returns where the emulator is reached (for URLs
	// handed to clients); "" means not listening yet, and then the
	// authority the client dialled is used.
	BaseURL func() string
	// Logf, when set, receives one line per gRPC call (method and code),
	// and what the web endpoints' runners write (runner.go).
	Logf func(format string, args ...any)
	// Python is the interpreter (3.12 or newer) the runners' virtualenvs
	// are made from, to run deployed apps' web endpoints (runner.go); ""
	// runs none: api_health answers HealthBody, the others 503.
	Python string
	// RunnerCache is where those virtualenvs are kept (they hold packages
	// from PyPI, so share it between emulators); "" is the data directory.
	RunnerCache string
	// Sandboxes, when its binaries are set, runs each sandbox's command
	// (sandboxrun.go); the zero value runs none.
	Sandboxes SandboxRuntime
}

// Service is the Modal API: its state has its own lock and its own file
// (modal.json in the data directory); counting and faults go through core.
// All methods are safe for concurrent use.
type Service struct {
	core       *core.Core
	logf       func(format string, args ...any)
	url        func() string     // Options.BaseURL; may be nil
	tokens     map[string]Token  // by token ID
	webSuffix  map[string]string // environment name -> web suffix override
	grpc       *grpc.Server
	tokenKey   []byte // signs auth tokens; per process, so a restart invalidates them
	tokenTTL   time.Duration
	stateFile  *core.StateFile // modal.json
	buildDelay time.Duration
	dataDir    string
	runner     *webRunner // the deployed apps' web endpoints (runner.go)

	sandboxRuntime SandboxRuntime // Options.Sandboxes
	procs          sandboxProcs   // the running sandboxes' processes (sandboxrun.go)
	imageLocks     imageLocks     // one materialisation of an image's recipe at a time (image.go)
	builds         imageBuilds    // images' installs when sandboxes run (imagebuild.go)
	closed         atomic.Bool    // Close was called: background work logs nothing

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
// emulator except through Go (SecretValues, for tests).
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
	// Command, Workdir and SecretIDs are the launch SandboxCreate asked
	// for (the entrypoint, its directory, the secrets whose values are its
	// environment).
	Command   []string `json:"command,omitempty"`
	Workdir   string   `json:"workdir,omitempty"`
	SecretIDs []string `json:"secret_ids,omitempty"`
	// Ran says its command was started as a process (sandboxrun.go);
	// Result and ExitCode say how it ended ("" for one that never ran).
	Ran      bool   `json:"ran,omitempty"`
	Result   string `json:"result,omitempty"`
	ExitCode int    `json:"exit_code,omitempty"`
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

// New prepares the Modal API from opts, loading dataDir/modal.json when it
// exists; Register mounts it on c's mux.
func New(opts Options, dataDir string, c *core.Core) (*Service, error) {
	m := &Service{
		core:      c,
		logf:      opts.Logf,
		url:       opts.BaseURL,
		tokens:    map[string]Token{},
		webSuffix: map[string]string{},
		tokenTTL:  time.Hour,
		stateFile: core.NewStateFile(filepath.Join(dataDir, "modal.json"), ".modal-*.json", "Modal state"),

		buildDelay: opts.ImageBuildTime,
		dataDir:    dataDir,
		runner: &webRunner{python: opts.Python, cache: opts.RunnerCache, dir: filepath.Join(dataDir, "modal-run"),
			procs: map[string]*runnerProc{}},
		sandboxRuntime: opts.Sandboxes,
		procs:          sandboxProcs{procs: map[string]*sandboxProc{}},
		builds:         newImageBuilds(),
	}
	if m.runner.cache == "" {
		m.runner.cache = filepath.Join(dataDir, "modal-runners")
	}
	toks := opts.Tokens
	if toks == nil {
		toks = []Token{{ID: DefaultTokenID, Secret: DefaultTokenSecret, Workspace: DefaultWorkspace}}
	}
	for _, t := range toks {
		if t.ID == "" || t.Secret == "" {
			return nil, errors.New("emulator: Modal token IDs and secrets must be non-empty")
		}
		if !modalWorkspaceRE.MatchString(t.Workspace) {
			return nil, fmt.Errorf("emulator: Modal workspace %q is not a lower-case DNS label", t.Workspace)
		}
		m.tokens[t.ID] = t
	}
	for env, suffix := range opts.WebSuffixes {
		if suffix != "" && !modalWorkspaceRE.MatchString(suffix) {
			return nil, fmt.Errorf("emulator: web suffix %q of Modal environment %q is not a lower-case DNS label", suffix, env)
		}
		m.webSuffix[env] = suffix
	}
	m.tokenKey = make([]byte, 32)
	if _, err := rand.Read(m.tokenKey); err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	st, err := loadModalState(m.stateFile.Path())
	if err != nil {
		return nil, err
	}
	m.st = st
	// A sandbox whose process ran in an emulator that has since stopped
	// ended with it.
	for _, sb := range m.st.Sandboxes {
		if sb.Ran && sb.TerminatedAt.IsZero() {
			sb.TerminatedAt, sb.Result = time.Now().UTC(), resultTerminated
		}
	}
	m.grpc = grpc.NewServer(
		grpc.MaxRecvMsgSize(100<<20),
		grpc.ChainUnaryInterceptor(m.unaryInterceptor),
		grpc.ChainStreamInterceptor(m.streamInterceptor),
	)
	pb.RegisterModalClientServer(m.grpc, &modalAPI{m: m})
	return m, nil
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
func (m *Service) save() error { return m.stateFile.Save(&m.mu, m.st) }

// saved ends a mutating RPC: it persists the state and turns a failure to do
// so into Internal, so a client never believes in a change that a restart
// would lose.
func (m *Service) saved() error {
	if err := m.save(); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return nil
}

// Register mounts the Modal API, the web endpoints of deployed apps and the
// Modal admin routes on the core's mux.
func (m *Service) Register() {
	mux := m.core.Mux()
	mux.HandleFunc(modalServicePrefix, m.serveGRPC)
	mux.HandleFunc(WebRoute, m.serveWeb)
	mux.HandleFunc(WebRoute+"/{path...}", m.serveWeb)
	mux.HandleFunc("GET /__modal/apps/{app_id}", m.serveAppPage)
	m.registerAdmin(mux)
}

// serveGRPC is the HTTP entry point of every Modal API call. Counting and
// faults happen here, before the gRPC server sees the request, for the same
// reason as for every core route: tests count attempts, not successes.
func (m *Service) serveGRPC(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	m.core.Count(modalCountPrefix+path, false)
	r.Header.Del(modalFaultHeader)
	if r.ProtoMajor != 2 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
		// What a gRPC server answers a plain HTTP/1 request.
		http.Error(w, "the Modal API is gRPC: HTTP/2 with content-type application/grpc", http.StatusUnsupportedMediaType)
		return
	}
	delay, f := m.core.TakeFaults("GRPC", path)
	if f != nil && f.Kind == core.FaultHold {
		if !m.core.Hold(w, r, f) {
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
		case core.FaultRateLimit:
			if f.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
			}
			writeGRPCStatus(w, codes.ResourceExhausted, "Too many requests, please slow down (emulated rate limit)")
			return
		case core.FaultServerError:
			writeGRPCStatus(w, codes.Unavailable, fmt.Sprintf("Modal is temporarily unavailable (emulated HTTP %d)", f.Status))
			return
		case core.FaultDropConnection:
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

// Calls is the number of Modal API (gRPC) calls received, answered or
// not; the Modal counterpart of CloudflareCalls.
func (s *Service) Calls() int {
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
func (m *Service) authenticate(ctx context.Context, method string) (context.Context, error) {
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

func (m *Service) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, err := m.authenticate(ctx, info.FullMethod)
	var resp any
	if err == nil {
		resp, err = h(ctx, req)
	}
	m.logCall(info.FullMethod, err)
	return resp, err
}

func (m *Service) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, err := m.authenticate(ss.Context(), info.FullMethod)
	if err == nil {
		err = h(srv, &ctxStream{ServerStream: ss, ctx: ctx})
	}
	m.logCall(info.FullMethod, err)
	return err
}

// logfSafe logs from work that may end after Close (an image's installs,
// a sandbox's exit): once closed, nothing is logged, as the log's owner (a
// test's t.Logf) may be gone.
func (m *Service) logfSafe(format string, args ...any) {
	if m.logf != nil && !m.closed.Load() {
		m.logf(format, args...)
	}
}

// Close stops images' installs, the sandboxes and the runners of web
// endpoints.
func (m *Service) Close() error {
	m.closed.Store(true)
	m.builds.stop()
	m.stopAllSandboxes()
	m.runner.close()
	return nil
}

// logCall adds the gRPC status to the request log, whose HTTP status is
// always 200 for gRPC. Messages are not logged: some quote user input.
func (m *Service) logCall(method string, err error) {
	if m.logf != nil {
		m.logf("grpc %s -> %s", method, status.Code(err))
	}
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *ctxStream) Context() context.Context { return s.ctx }

// issueAuthToken makes a JWT-shaped token (HS256) whose exp claim both
// clients read to schedule refreshes.
func (m *Service) issueAuthToken(workspace string) string {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims, _ := json.Marshal(map[string]any{"sub": workspace, "exp": time.Now().Add(m.tokenTTL).Unix()})
	unsigned := header + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, m.tokenKey)
	mac.Write([]byte(unsigned))
	return unsigned + "." + enc.EncodeToString(mac.Sum(nil))
}

func (m *Service) verifyAuthToken(tok string) (string, bool) {
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
func (m *Service) stamp(t time.Time) (time.Time, int64) {
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
func (m *Service) baseURL(ctx context.Context) string {
	if m.url != nil {
		if u := m.url(); u != "" {
			return u
		}
	}
	// An emulator made with New and mounted elsewhere: use the authority the
	// client dialled.
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if a := md.Get(":authority"); len(a) > 0 && a[0] != "" {
			return "http://" + a[0]
		}
	}
	return "http://127.0.0.1"
}
