// Package e2b is the emulator's E2B API: templates built from the steps the
// Python SDK (e2b 2.29.1) sends, the file uploads those steps need, builds
// that move through waiting → building → ready (or error) with log entries,
// and sandboxes listed by metadata and killed. Routes, status codes and
// bodies are the ones the SDK's generated client parses (it returns nothing
// for any other status code, which fails a build); the facts are in
// /work/shared/design/sandbox-notes.md, "E2B".
//
// Everything is served under Prefix: E2B_API_URL is the emulator's URL plus
// "/e2b". Every route is counted and takes faults through the emulator core.
package e2b

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// DefaultAPIKey is the key accepted when Options.APIKeys is nil. It has
// the shape the SDK checks (e2b_ and hex) and is not a secret.
const DefaultAPIKey = "e2b_0e111a7e0000000000000000000000000000e2b0"

// DefaultTeamID is the team DefaultAPIKey belongs to.
const DefaultTeamID = "team-emulator"

// DefaultBuildTime is how long a build takes when Options.BuildTime is
// zero: long enough for the SDK's 0.2 s polling to see "building".
const DefaultBuildTime = 600 * time.Millisecond

// Prefix is where the E2B API is served; fault routes naming an E2B route
// start with it.
const Prefix = "/e2b/"

// APIPrefix is the API root: what E2B_API_URL is set to, after the
// emulator's base URL.
const APIPrefix = "/e2b"

// RealHosts are E2B's hosts the outbound gateway sends here (E2B_API_URL's
// default, https://api.e2b.app).
var RealHosts = map[string]string{"api.e2b.app": APIPrefix}

const (
	stateFileName = "e2b.json"
	stateVersion  = 1
)

// Options configures a Service.
type Options struct {
	// APIKeys maps each accepted API key to its team. Nil means
	// DefaultAPIKey -> DefaultTeamID.
	APIKeys map[string]string
	// BuildTime is how long a build runs once started. Zero means
	// DefaultBuildTime.
	BuildTime time.Duration
}

// Service is the E2B API: configuration, state and the core its routes
// count and take faults through. mu guards st and the failure plans; it
// is never held while writing the file.
type Service struct {
	core      *core.Core
	mux       *http.ServeMux
	keys      map[string]string
	buildTime time.Duration
	stateFile *core.StateFile

	failures *core.BuildFailures

	mu sync.Mutex
	st *state
}

type state struct {
	Version   int                  `json:"version"`
	Templates map[string]*template `json:"templates"` // by ID
	Builds    map[string]*build    `json:"builds"`    // by ID
	Files     map[string]*upload   `json:"files"`     // by templateID/hash
	Sandboxes map[string]*sandbox  `json:"sandboxes"` // by ID
}

type template struct {
	ID        string    `json:"id"`
	Team      string    `json:"team"`
	Name      string    `json:"name"` // without a tag
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	Builds    []string  `json:"builds"` // oldest first
}

// build is one build. Its course is planned when it is started (log lines,
// outcome, timing), so its status at any moment follows from the clock.
type build struct {
	ID         string    `json:"id"`
	TemplateID string    `json:"templateId"`
	Tags       []string  `json:"tags"`
	CPU        int       `json:"cpuCount"`
	MemoryMB   int       `json:"memoryMB"`
	CreatedAt  time.Time `json:"createdAt"`

	Started      *time.Time      `json:"started,omitempty"` // nil: waiting for the start call
	Duration     time.Duration   `json:"duration"`
	FromImage    string          `json:"fromImage,omitempty"`
	FromTemplate string          `json:"fromTemplate,omitempty"`
	Steps        []step          `json:"steps"`
	StartCmd     string          `json:"startCmd,omitempty"`
	ReadyCmd     string          `json:"readyCmd,omitempty"`
	Logs         []logEntry      `json:"logs"`
	FailReason   string          `json:"failReason,omitempty"`
	FailStep     string          `json:"failStep,omitempty"`
	Raw          json.RawMessage `json:"request,omitempty"` // the start call's body, as sent
}

type step struct {
	Type      string   `json:"type"`
	Args      []string `json:"args,omitempty"`
	FilesHash string   `json:"filesHash,omitempty"`
	Force     bool     `json:"force,omitempty"`
}

type logEntry struct {
	Timestamp time.Time `json:"timestamp"`
	Level     string    `json:"level"`
	Message   string    `json:"message"`
	Step      string    `json:"step,omitempty"`
}

// upload is one COPY source the SDK uploaded: its archive's member paths.
type upload struct {
	TemplateID string    `json:"templateId"`
	Hash       string    `json:"hash"`
	Size       int64     `json:"size"`
	Entries    []string  `json:"entries,omitempty"`
	TarErr     string    `json:"tarError,omitempty"`
	Uploaded   time.Time `json:"uploaded"`
}

type sandbox struct {
	ID         string            `json:"id"`
	Team       string            `json:"team"`
	TemplateID string            `json:"templateId"`
	Alias      string            `json:"alias,omitempty"`
	State      string            `json:"state"` // running | paused
	Metadata   map[string]string `json:"metadata"`
	StartedAt  time.Time         `json:"startedAt"`
	// EndAt is when a running sandbox times out (zero: never, as for one a
	// test added); AutoPause says whether it is then paused or killed.
	EndAt     time.Time `json:"endAt,omitempty"`
	AutoPause bool      `json:"autoPause,omitempty"`
	// EnvVarNames are the names of the env it was created with; the values
	// (session secrets) are never kept.
	EnvVarNames []string `json:"envVarNames,omitempty"`
	Secure      bool     `json:"secure,omitempty"`
}

// New loads dataDir/e2b.json (if any) and returns a Service whose routes
// Register puts on c's mux.
func New(opts Options, dataDir string, c *core.Core) (*Service, error) {
	keys, err := core.Credentials(opts.APIKeys, DefaultAPIKey, DefaultTeamID, "E2B API keys and teams")
	if err != nil {
		return nil, err
	}
	bt := opts.BuildTime
	if bt <= 0 {
		bt = DefaultBuildTime
	}
	s := &Service{core: c, mux: c.Mux(), keys: keys, buildTime: bt, failures: core.NewBuildFailures(defaultFailure),
		stateFile: core.NewStateFile(filepath.Join(dataDir, stateFileName), ".e2b-*.json", "E2B state")}
	st, err := load(s.stateFile.Path())
	if err != nil {
		return nil, err
	}
	s.st = st
	return s, nil
}

func newState() *state {
	return &state{Version: stateVersion, Templates: map[string]*template{}, Builds: map[string]*build{},
		Files: map[string]*upload{}, Sandboxes: map[string]*sandbox{}}
}

func load(path string) (*state, error) {
	st := newState()
	if err := core.LoadState(path, "E2B state", stateVersion, st); err != nil {
		return nil, err
	}
	// Entries may be null in hand-edited files; handlers assume they are not.
	core.DropNil(st.Templates)
	core.DropNil(st.Builds)
	core.DropNil(st.Files)
	core.DropNil(st.Sandboxes)
	return st, nil
}

func (s *Service) save() error { return s.stateFile.Save(&s.mu, s.st) }

// Build statuses, as the SDK's TemplateBuildStatus spells them.
const (
	statusWaiting  = "waiting"
	statusBuilding = "building"
	statusReady    = "ready"
	statusError    = "error"
)

func (b *build) status(now time.Time) string {
	switch {
	case b.Started == nil:
		return statusWaiting
	case now.Before(b.Started.Add(b.Duration)):
		return statusBuilding
	case b.FailReason != "":
		return statusError
	default:
		return statusReady
	}
}

// visibleLogs is how many log entries the build has printed by now: spread
// over its run, the last (the outcome) at its end.
func (b *build) visibleLogs(now time.Time) int {
	switch {
	case b.Started == nil:
		return 0
	case !now.Before(b.Started.Add(b.Duration)):
		return len(b.Logs)
	case b.Duration <= 0:
		return 0
	}
	n := int(int64(len(b.Logs)) * int64(now.Sub(*b.Started)) / int64(b.Duration))
	return min(n, max(len(b.Logs)-1, 0))
}

// apiError is a failed request; E2B's body is {code, message}.
type apiError struct {
	status  int
	message string
}

func (e *apiError) Error() string { return e.message }

func errorf(status int, format string, args ...any) *apiError {
	return &apiError{status: status, message: fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{status: http.StatusInternalServerError, message: "internal server error"}
	}
	core.WriteJSON(w, ae.status, map[string]any{"code": ae.status, "message": ae.message})
}

func faultAnswers() core.FaultAnswers {
	return core.FaultAnswers{
		RateLimited: func(w http.ResponseWriter, _ *core.Fault) {
			writeError(w, errorf(http.StatusTooManyRequests, "rate limit exceeded"))
		},
		ServerError: func(w http.ResponseWriter, f *core.Fault) {
			writeError(w, errorf(f.Status, "internal server error"))
		},
	}
}

// route registers an API route ("METHOD /path" below APIPrefix). Like every
// core route it counts first, then applies faults, then (unless open)
// checks the key.
func (s *Service) route(pattern string, open bool, h func(w http.ResponseWriter, r *http.Request, team string)) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok || !strings.HasPrefix(path, "/") {
		panic("emulator: E2B pattern must be \"METHOD /path\": " + pattern)
	}
	full := method + " " + APIPrefix + path
	s.mux.HandleFunc(full, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(full, false)
		delay, f := s.core.TakeFaults(r.Method, APIPrefix+path)
		if s.core.ServeFault(w, r, delay, f, faultAnswers()) {
			return
		}
		team := ""
		if !open {
			t, known := s.keys[r.Header.Get("X-API-Key")]
			if !known {
				writeError(w, errorf(http.StatusUnauthorized, "Invalid API key, please visit https://e2b.dev/docs/api-key"))
				return
			}
			team = t
		}
		h(w, r, team)
	})
}

// Register adds the API, the upload URLs and the admin routes.
func (s *Service) Register() {
	s.registerTemplates()
	s.registerSandboxes()
	s.registerAdmin()
	const other = APIPrefix + "/{path...}"
	s.mux.HandleFunc(other, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(r.Method+" "+other, false)
		writeError(w, errorf(http.StatusNotFound, "no route %s %s", r.Method, strings.TrimPrefix(r.URL.Path, APIPrefix)))
	})
}

// Calls is the number of requests made under Prefix, matched or not.
func (s *Service) Calls() int {
	return s.core.CountsWhere(func(k string) bool {
		_, route, ok := strings.Cut(k, " ")
		return ok && strings.HasPrefix(route, Prefix)
	})
}

// newTemplateID makes an ID shaped like E2B's: 20 lowercase alphanumerics.
func newTemplateID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [20]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:])
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func newSandboxID() string { return "i" + newTemplateID()[1:] }

// lookupLocked finds a team's template by ID or name (a "name:tag" is
// looked up by its name).
func (s *Service) lookupLocked(team, idOrName string) *template {
	if t, ok := s.st.Templates[idOrName]; ok && t.Team == team {
		return t
	}
	name, _, _ := strings.Cut(idOrName, ":")
	for _, t := range s.st.Templates {
		if t.Team == team && t.Name == name {
			return t
		}
	}
	return nil
}

// latestLocked is the template's newest build.
func (s *Service) latestLocked(t *template) *build {
	if len(t.Builds) == 0 {
		return nil
	}
	return s.st.Builds[t.Builds[len(t.Builds)-1]]
}

// Inventory is the E2B side of /__emulator/inventory.
type Inventory struct {
	Templates []TemplateEntry `json:"templates"`
	Sandboxes []SandboxEntry  `json:"sandboxes"`
}

// Empty reports whether nothing exists.
func (i Inventory) Empty() bool { return len(i.Templates) == 0 && len(i.Sandboxes) == 0 }

// TemplateEntry is one template and what each of its builds was asked to do.
type TemplateEntry struct {
	Team   string       `json:"team"`
	ID     string       `json:"id"`
	Name   string       `json:"name"`
	Builds []BuildEntry `json:"builds"`
}

// BuildEntry is one build: its resources, base, steps and outcome.
type BuildEntry struct {
	ID           string   `json:"id"`
	Status       string   `json:"status"`
	CPU          int      `json:"cpuCount"`
	MemoryMB     int      `json:"memoryMB"`
	FromImage    string   `json:"fromImage,omitempty"`
	FromTemplate string   `json:"fromTemplate,omitempty"`
	Steps        []string `json:"steps"` // "TYPE arg arg"
	StartCmd     string   `json:"startCmd,omitempty"`
	ReadyCmd     string   `json:"readyCmd,omitempty"`
	// Files are the member paths of every archive its COPY steps uploaded.
	Files  []string `json:"files,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// SandboxEntry is one sandbox.
type SandboxEntry struct {
	Team       string            `json:"team"`
	ID         string            `json:"id"`
	TemplateID string            `json:"templateId"`
	State      string            `json:"state"`
	Metadata   map[string]string `json:"metadata,omitempty"`
}

// Inventory lists templates (by team, then name) and sandboxes.
func (s *Service) Inventory() Inventory {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now.UTC())
	inv := Inventory{Templates: []TemplateEntry{}, Sandboxes: []SandboxEntry{}}
	for _, t := range s.st.Templates {
		e := TemplateEntry{Team: t.Team, ID: t.ID, Name: t.Name, Builds: []BuildEntry{}}
		for _, id := range t.Builds {
			b := s.st.Builds[id]
			if b == nil {
				continue
			}
			be := BuildEntry{ID: b.ID, Status: b.status(now), CPU: b.CPU, MemoryMB: b.MemoryMB, FromImage: b.FromImage,
				FromTemplate: b.FromTemplate, Steps: []string{}, StartCmd: b.StartCmd, ReadyCmd: b.ReadyCmd}
			if be.Status == statusError {
				be.Reason = b.FailReason
			}
			for _, st := range b.Steps {
				be.Steps = append(be.Steps, strings.TrimSpace(st.Type+" "+strings.Join(st.Args, " ")))
				if f := s.st.Files[t.ID+"/"+st.FilesHash]; st.FilesHash != "" && f != nil {
					be.Files = append(be.Files, f.Entries...)
				}
			}
			e.Builds = append(e.Builds, be)
		}
		inv.Templates = append(inv.Templates, e)
	}
	sort.Slice(inv.Templates, func(i, j int) bool {
		a, b := inv.Templates[i], inv.Templates[j]
		return a.Team < b.Team || a.Team == b.Team && a.Name < b.Name
	})
	for _, sb := range s.st.Sandboxes {
		inv.Sandboxes = append(inv.Sandboxes, SandboxEntry{Team: sb.Team, ID: sb.ID, TemplateID: sb.TemplateID, State: sb.State, Metadata: sb.Metadata})
	}
	sort.Slice(inv.Sandboxes, func(i, j int) bool { return inv.Sandboxes[i].ID < inv.Sandboxes[j].ID })
	return inv
}
