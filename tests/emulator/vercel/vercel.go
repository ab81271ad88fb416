// Package vercel is the emulator's Vercel: the projects, variables, files
// and deployments the web UI on Vercel uses (projects.go, deployments.go),
// and the Vercel Sandbox API, as upstream's own
// fetch client (packages/control-plane/src/sandbox/providers/vercel/
// client.ts, no SDK) and its base-snapshot builder call it: named sandboxes
// per project whose sessions run commands (answered as NDJSON when the
// client waits), take tar.gz archives on fs/write and are snapshotted
// (which stops them); snapshots listed by project and the sandbox they came
// from, and deleted; sandboxes listed by name prefix and deleted. The
// client checks every answer with zod schemas, so field names, numbers in
// milliseconds and enum values are the ones it parses; the facts are in
// /work/shared/design/sandbox-notes.md, "Vercel Sandbox".
//
// A call that needs a running session answers 410 once it is stopped (by
// stop, snapshot, delete or its timeout). Nothing runs: a command takes
// Options.CommandTime and exits 0, except the first command after an
// fs/write (upstream's bootstrap), which exits 1 when a build failure is
// arranged (core.BuildFailures, by sandbox name or for the next one).
//
// Everything is served under Prefix: VERCEL_SANDBOX_API_BASE_URL is the
// emulator's URL plus APIPrefix. Every route is counted and takes faults
// through the emulator core; the bearer token names the team, and every
// object belongs to one team and one project.
package vercel

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// DefaultToken is the bearer token accepted when Options.Tokens is nil; it
// is not a secret.
const DefaultToken = "emulator-vercel-token"

// DefaultTeamID is the team DefaultToken belongs to.
const DefaultTeamID = "team_emulator"

// DefaultCommandTime is how long a command runs when Options.CommandTime is
// zero: long enough that a waiting client sees the first NDJSON line well
// before the second.
const DefaultCommandTime = 100 * time.Millisecond

// Prefix is where the API is served; fault routes naming a Vercel route
// start with it.
const Prefix = "/vercel/"

// APIPrefix is the API root, what VERCEL_SANDBOX_API_BASE_URL is set to
// after the emulator's base URL (the real default is https://vercel.com/api).
const APIPrefix = "/vercel/api"

// RealHosts are Vercel's hosts the outbound gateway sends here
// (https://vercel.com/api is VERCEL_SANDBOX_API_BASE_URL's default).
var RealHosts = map[string]string{"vercel.com": "/vercel"}

const (
	stateFileName = "vercel.json"
	stateVersion  = 1
	filesDirName  = "vercel-files"
	// defaultDeployFailure is an arranged deployment failure's reason when
	// none is given.
	defaultDeployFailure = "Command \"next build\" exited with 1 (arranged by the emulator)"
)

// Options configures a Service.
type Options struct {
	// Tokens maps each accepted bearer token to its team ID. Nil means
	// DefaultToken -> DefaultTeamID.
	Tokens map[string]string
	// CommandTime is how long every command runs before it exits. Zero
	// means DefaultCommandTime.
	CommandTime time.Duration
	// BuildTime is how long a deployment builds before it is ready (or
	// fails). Zero means DefaultBuildTime.
	BuildTime time.Duration
}

// DefaultBuildTime is how long a deployment builds when Options.BuildTime
// is zero: long enough for a client to see BUILDING and the log grow.
const DefaultBuildTime = 600 * time.Millisecond

// Service is the API: configuration, state and the core its routes count
// and take faults through. mu guards st; it is never held while writing the
// file or while a command's answer streams. The failure plan has its own
// lock.
type Service struct {
	core        *core.Core
	mux         *http.ServeMux
	tokens      map[string]string
	commandTime time.Duration
	stateFile   *core.StateFile

	failures *core.BuildFailures
	// deployFailures are the deployments' arranged build failures, by
	// project name.
	deployFailures *core.BuildFailures
	buildTime      time.Duration
	// filesDir holds the uploaded deployment files, <team>/<sha1>.
	filesDir string

	mu sync.Mutex
	st *state
}

type state struct {
	Version   int                  `json:"version"`
	Seq       int64                `json:"seq"`       // orders objects made in the same millisecond
	Sandboxes map[string]*sandbox  `json:"sandboxes"` // by team/project/name
	Sessions  map[string]*session  `json:"sessions"`  // by ID
	Snapshots map[string]*snapshot `json:"snapshots"` // by ID; deleted ones are removed

	// The web UI's side: projects (with their variables and domains) and
	// deployments by ID; Uploads counts the files each team uploaded (their
	// contents are under filesDir).
	Projects    map[string]*project    `json:"projects"`
	Deployments map[string]*deployment `json:"deployments"`
	Uploads     map[string]int         `json:"uploads"`
}

// New loads dataDir/vercel.json (if any) and returns a Service whose routes
// Register puts on c's mux.
func New(opts Options, dataDir string, c *core.Core) (*Service, error) {
	tokens, err := core.Credentials(opts.Tokens, DefaultToken, DefaultTeamID, "Vercel tokens and team IDs")
	if err != nil {
		return nil, err
	}
	ct := opts.CommandTime
	if ct <= 0 {
		ct = DefaultCommandTime
	}
	bt := opts.BuildTime
	if bt <= 0 {
		bt = DefaultBuildTime
	}
	s := &Service{core: c, mux: c.Mux(), tokens: tokens, commandTime: ct, failures: core.NewBuildFailures(defaultFailure),
		deployFailures: core.NewBuildFailures(defaultDeployFailure), buildTime: bt, filesDir: filepath.Join(dataDir, filesDirName),
		stateFile: core.NewStateFile(filepath.Join(dataDir, stateFileName), ".vercel-*.json", "Vercel state")}
	st, err := load(s.stateFile.Path())
	if err != nil {
		return nil, err
	}
	s.st = st
	return s, nil
}

func newState() *state {
	return &state{Version: stateVersion, Sandboxes: map[string]*sandbox{}, Sessions: map[string]*session{},
		Snapshots: map[string]*snapshot{}, Projects: map[string]*project{}, Deployments: map[string]*deployment{}, Uploads: map[string]int{}}
}

func load(path string) (*state, error) {
	st := newState()
	if err := core.LoadState(path, "Vercel state", stateVersion, st); err != nil {
		return nil, err
	}
	// Entries may be null in hand-edited files; handlers assume they are not.
	core.DropNil(st.Sandboxes)
	core.DropNil(st.Sessions)
	core.DropNil(st.Snapshots)
	// A file from before projects existed has none of the web's maps.
	if st.Projects == nil {
		st.Projects = map[string]*project{}
	}
	if st.Deployments == nil {
		st.Deployments = map[string]*deployment{}
	}
	if st.Uploads == nil {
		st.Uploads = map[string]int{}
	}
	core.DropNil(st.Projects)
	core.DropNil(st.Deployments)
	return st, nil
}

func (s *Service) save() error { return s.stateFile.Save(&s.mu, s.st) }

// nextSeqLocked numbers a new object, so lists sorted by creation time are
// stable even when two objects share a millisecond.
func (s *Service) nextSeqLocked() int64 {
	s.st.Seq++
	return s.st.Seq
}

// apiError is a failed request; Vercel's body is {"error": {code, message}}.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, "bad_request", format, args...)
}

func notFound(format string, args ...any) *apiError {
	return errorf(http.StatusNotFound, "not_found", format, args...)
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = errorf(http.StatusInternalServerError, "internal_server_error", "%v", err)
	}
	core.WriteJSON(w, ae.status, map[string]any{"error": map[string]string{"code": ae.code, "message": ae.message}})
}

func faultAnswers() core.FaultAnswers {
	return core.FaultAnswers{
		RateLimited: func(w http.ResponseWriter, _ *core.Fault) {
			writeError(w, errorf(http.StatusTooManyRequests, "rate_limited", "rate limit exceeded"))
		},
		ServerError: func(w http.ResponseWriter, f *core.Fault) {
			writeError(w, errorf(f.Status, "internal_server_error", "internal server error"))
		},
	}
}

// route registers an API route ("METHOD /path" below APIPrefix). Like every
// core route it counts first, then applies faults, then checks the bearer
// token and the optional ?teamId=, which must be the token's own team.
func (s *Service) route(pattern string, h func(w http.ResponseWriter, r *http.Request, team string)) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok || !strings.HasPrefix(path, "/") {
		panic("emulator: Vercel pattern must be \"METHOD /path\": " + pattern)
	}
	full := method + " " + APIPrefix + path
	s.mux.HandleFunc(full, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(full, false)
		delay, f := s.core.TakeFaults(r.Method, APIPrefix+path)
		if s.core.ServeFault(w, r, delay, f, faultAnswers()) {
			return
		}
		tok, _, _ := core.Bearer(r)
		team, known := s.tokens[tok]
		if !known {
			writeError(w, errorf(http.StatusUnauthorized, "forbidden", "Not authorized: the bearer token is missing or invalid"))
			return
		}
		if id := r.URL.Query().Get("teamId"); id != "" && id != team {
			writeError(w, errorf(http.StatusForbidden, "forbidden", "Not authorized: the token has no access to team %q", id))
			return
		}
		h(w, r, team)
	})
}

// Register adds the API and the admin routes.
func (s *Service) Register() {
	s.route("POST /v2/sandboxes", s.createSandbox)
	s.route("GET /v2/sandboxes", s.listSandboxes)
	s.route("DELETE /v2/sandboxes/{name}", s.deleteSandbox)
	s.route("POST /v2/sandboxes/sessions/{sessionId}/cmd", s.runCommand)
	s.route("POST /v2/sandboxes/sessions/{sessionId}/fs/write", s.writeFiles)
	s.route("POST /v2/sandboxes/sessions/{sessionId}/snapshot", s.snapshotSession)
	s.route("POST /v2/sandboxes/sessions/{sessionId}/stop", s.stopSession)
	s.route("GET /v2/sandboxes/snapshots", s.listSnapshots)
	s.route("DELETE /v2/sandboxes/snapshots/{snapshotId}", s.deleteSnapshot)
	// The web UI on Vercel: projects, variables, domains, files, deployments.
	s.route("POST /v11/projects", s.createProject)
	s.route("GET /v9/projects/{idOrName}", s.getProject)
	s.route("PATCH /v9/projects/{idOrName}", s.updateProject)
	s.route("DELETE /v9/projects/{idOrName}", s.deleteProject)
	s.route("GET /v10/projects/{idOrName}/env", s.listEnv)
	s.route("POST /v10/projects/{idOrName}/env", s.createEnv)
	s.route("PATCH /v9/projects/{idOrName}/env/{id}", s.updateEnv)
	s.route("DELETE /v9/projects/{idOrName}/env/{id}", s.deleteEnv)
	s.route("POST /v10/projects/{idOrName}/domains", s.addDomain)
	s.route("POST /v2/files", s.uploadFile)
	s.route("POST /v13/deployments", s.createDeployment)
	s.route("GET /v13/deployments/{idOrUrl}", s.getDeployment)
	s.route("GET /v6/deployments", s.listDeployments)
	s.route("GET /v3/deployments/{idOrUrl}/events", s.events)
	s.registerAdmin()
	const other = APIPrefix + "/{path...}"
	s.mux.HandleFunc(other, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(r.Method+" "+other, false)
		writeError(w, notFound("no route %s %s", r.Method, strings.TrimPrefix(r.URL.Path, APIPrefix)))
	})
}

// Calls is the number of requests made under Prefix, matched or not.
func (s *Service) Calls() int {
	return s.core.CountsWhere(func(k string) bool {
		_, route, ok := strings.Cut(k, " ")
		return ok && strings.HasPrefix(route, Prefix)
	})
}

// decodeBody reads an optional JSON body into v: an empty body leaves v as
// it is (stop and snapshot are sent without one).
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeBodyLimit(w, r, v, 1<<20)
}

// decodeBodyLimit is decodeBody for bodies up to limit bytes (a
// deployment's file list is larger than any other body).
func decodeBodyLimit(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	var raw json.RawMessage
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return badRequest("invalid JSON body: %v", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return badRequest("invalid JSON body: %v", err)
	}
	return nil
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

func nowMillis() int64 { return time.Now().UnixMilli() }
