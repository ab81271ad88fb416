package daytona

// daytona.go: configuration, state and its file, the error shape, route
// registration and the inventory. See doc.go for what this family imitates.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// DefaultAPIKey is the Daytona API key accepted when
// Options.APIKeys is nil. Like the Cloudflare DefaultToken it is documented for demos
// and is not a secret.
const DefaultAPIKey = "emulator-daytona-key"

// DefaultOrganizationID is the organization DefaultAPIKey
// belongs to (Daytona organization IDs are UUIDs).
const DefaultOrganizationID = "5c0de5a1-0000-4000-8000-00000000da70"

// DefaultBuildTime is how long a snapshot build takes when
// Options.BuildTime is zero: long enough that a client sees the
// pending and building states, short enough for tests.
const DefaultBuildTime = 300 * time.Millisecond

// InstantBuilds, as Options.BuildTime, makes a build finish
// within the request that creates it: POST /snapshots answers "active" (or
// "build_failed"), as Daytona does when an identical build already exists.
// The SDK then skips its one-second state polling, which keeps tests fast.
const InstantBuilds time.Duration = -1

// Bucket is the object storage bucket build contexts go to; the name
// is the SDK's default for it.
const Bucket = "daytona-volume-builds"

// Prefix is where everything Daytona is served (API and object storage);
// fault routes naming a Daytona route start with it.
const Prefix = "/daytona/"

// APIPrefix is the API root: what DAYTONA_API_URL is set to, after the
// emulator's base URL.
const APIPrefix = "/daytona/api"

// RealHosts are Daytona's hosts the outbound gateway sends here
// (https://app.daytona.io/api is DAYTONA_API_URL's default).
var RealHosts = map[string]string{"app.daytona.io": "/daytona"}

const (
	daytonaPrefix    = Prefix
	daytonaAPIPrefix = APIPrefix
	daytonaStateFile = "daytona.json"
	// daytonaStateVersion guards daytona.json's shape; a mismatch refuses to load.
	daytonaStateVersion = 1
)

// Options configures a Service.
type Options struct {
	// APIKeys maps each accepted API key to its organization ID. Nil means
	// DefaultAPIKey -> DefaultOrganizationID.
	APIKeys map[string]string
	// BuildTime is how long a snapshot build takes (a quarter pending, the
	// rest building). Zero means DefaultBuildTime; InstantBuilds (negative)
	// finishes builds within the request.
	BuildTime time.Duration
	// Logf, when set, receives failures to save the state file.
	Logf func(format string, args ...any)
}

// Service is the Daytona API and its object storage: configuration, state
// and the core its routes count and take faults through. mu guards st, the
// failure plans and reads; it is never held while writing the file. All
// methods are safe for concurrent use.
type Service struct {
	core *core.Core
	mux  *http.ServeMux

	keys      map[string]string // API key -> organization ID
	buildTime time.Duration     // < 0: instant
	stateFile *core.StateFile   // daytona.json
	logf      func(format string, args ...any)
	failures  *core.BuildFailures

	mu sync.Mutex
	st *daytonaState
	// uploads are the multipart uploads in flight, by upload ID (memory
	// only).
	uploads map[string]*s3Upload
}

// daytonaState is what daytona.json holds.
type daytonaState struct {
	Version   int                    `json:"version"`
	Snapshots map[string]*dtSnapshot `json:"snapshots"` // by ID
	Sandboxes map[string]*dtSandbox  `json:"sandboxes"` // by ID
	Objects   map[string]*dtObject   `json:"objects"`   // by object key (bucket-relative)
}

// dtSnapshot is one snapshot. Its build is planned completely when it is
// created (log lines, outcome, timing), so its state at any moment follows
// from the clock: no goroutine drives it and a restart resumes it.
type dtSnapshot struct {
	ID             string     `json:"id"`
	OrganizationID string     `json:"organizationId"`
	Name           string     `json:"name"`
	ImageName      string     `json:"imageName,omitempty"`
	Dockerfile     string     `json:"dockerfile,omitempty"` // "" for a pulled image
	ContextHashes  []string   `json:"contextHashes,omitempty"`
	RegionID       string     `json:"regionId,omitempty"` // as the create request named it
	Entrypoint     []string   `json:"entrypoint"`
	CPU            int        `json:"cpu"`
	GPU            int        `json:"gpu"`
	Mem            int        `json:"mem"`
	Disk           int        `json:"disk"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
	LastUsedAt     *time.Time `json:"lastUsedAt,omitempty"`
	Inactive       bool       `json:"inactive,omitempty"`

	// The build: pending for Pending, building (or pulling) for Building,
	// then active, or build_failed with FailReason.
	BuildStart time.Time     `json:"buildStart"`
	Pending    time.Duration `json:"pending"`
	Building   time.Duration `json:"building"`
	Logs       []string      `json:"logs"` // every line the build prints, the error last
	FailReason string        `json:"failReason,omitempty"`

	// Removal: Daytona deletes asynchronously. A removed snapshot answers
	// "removing" until it has been reported so once, or RemoveBy passes.
	RemovedAt    *time.Time `json:"removedAt,omitempty"`
	RemoveBy     *time.Time `json:"removeBy,omitempty"`
	RemoveReport bool       `json:"removeReported,omitempty"`
}

// dtSandbox is one sandbox. Sandboxes here never run anything: they exist so
// that listing by label and deleting can be exercised.
type dtSandbox struct {
	ID              string            `json:"id"`
	OrganizationID  string            `json:"organizationId"`
	Name            string            `json:"name"`
	Snapshot        string            `json:"snapshot,omitempty"`
	User            string            `json:"user"`
	Env             map[string]string `json:"env"`
	Labels          map[string]string `json:"labels"`
	Public          bool              `json:"public"`
	NetworkBlockAll bool              `json:"networkBlockAll"`
	Target          string            `json:"target"`
	CPU             int               `json:"cpu"`
	GPU             int               `json:"gpu"`
	Memory          int               `json:"memory"`
	Disk            int               `json:"disk"`
	State           string            `json:"state"`
	CreatedAt       time.Time         `json:"createdAt"`
	UpdatedAt       time.Time         `json:"updatedAt"`
}

// dtObject is one uploaded object. Bodies are not kept: a build only needs
// to know which files a context archive holds.
type dtObject struct {
	Size     int64     `json:"size"`
	ETag     string    `json:"etag"`
	Uploaded time.Time `json:"uploaded"`
	// Entries are the archive's member paths, cleaned and without a leading
	// "/"; TarErr says why the body was not a readable tar.
	Entries []string `json:"entries,omitempty"`
	TarErr  string   `json:"tarError,omitempty"`
}

// New loads dataDir/daytona.json (if any) and returns a Service whose routes
// Register puts on c's mux.
func New(opts Options, dataDir string, c *core.Core) (*Service, error) {
	keys, err := core.Credentials(opts.APIKeys, DefaultAPIKey, DefaultOrganizationID, "Daytona API keys and organization IDs")
	if err != nil {
		return nil, err
	}
	bt := opts.BuildTime
	if bt == 0 {
		bt = DefaultBuildTime
	}
	d := &Service{core: c, mux: c.Mux(), keys: keys, buildTime: bt, stateFile: core.NewStateFile(filepath.Join(dataDir, daytonaStateFile), ".daytona-*.json", "Daytona state"), logf: opts.Logf,
		failures: core.NewBuildFailures(dtDefaultFailure)}
	st, err := loadDaytonaState(d.stateFile.Path())
	if err != nil {
		return nil, err
	}
	d.st = st
	return d, nil
}

func newDaytonaState() *daytonaState {
	return &daytonaState{Version: daytonaStateVersion, Snapshots: map[string]*dtSnapshot{},
		Sandboxes: map[string]*dtSandbox{}, Objects: map[string]*dtObject{}}
}

func loadDaytonaState(path string) (*daytonaState, error) {
	st := newDaytonaState()
	if err := core.LoadState(path, "Daytona state", daytonaStateVersion, st); err != nil {
		return nil, err
	}
	core.NonNil(&st.Snapshots)
	core.NonNil(&st.Sandboxes)
	core.NonNil(&st.Objects)
	// Entries may be null in hand-edited files; handlers assume they are not.
	core.DropNil(st.Snapshots)
	core.DropNil(st.Sandboxes)
	core.DropNil(st.Objects)
	return st, nil
}

// save writes daytona.json through core.StateFile: the snapshot is encoded
// under mu, written outside it, and a slower writer never replaces a newer one.
func (d *Service) save() error { return d.stateFile.Save(&d.mu, d.st) }

// Snapshot states, as api-client-go's SnapshotState enum spells them.
const (
	dtPending     = "pending"
	dtBuilding    = "building"
	dtPulling     = "pulling"
	dtActive      = "active"
	dtInactive    = "inactive"
	dtBuildFailed = "build_failed"
	dtRemoving    = "removing"
)

// state is the snapshot's state at now.
func (sn *dtSnapshot) state(now time.Time) string {
	switch {
	case sn.RemovedAt != nil:
		return dtRemoving
	case now.Before(sn.BuildStart.Add(sn.Pending)):
		return dtPending
	case now.Before(sn.BuildStart.Add(sn.Pending + sn.Building)):
		if sn.Dockerfile == "" {
			return dtPulling
		}
		return dtBuilding
	case sn.FailReason != "":
		return dtBuildFailed
	case sn.Inactive:
		return dtInactive
	default:
		return dtActive
	}
}

// buildDone reports whether the build has ended at now.
func (sn *dtSnapshot) buildDone(now time.Time) bool {
	return !now.Before(sn.BuildStart.Add(sn.Pending + sn.Building))
}

// visibleLogs is how many log lines the build has printed by now: none while
// pending, then evenly spread over the building phase, all once it ended.
func (sn *dtSnapshot) visibleLogs(now time.Time) int {
	start := sn.BuildStart.Add(sn.Pending)
	switch {
	case sn.buildDone(now):
		return len(sn.Logs)
	case now.Before(start) || sn.Building <= 0:
		return 0
	}
	// The last line (the error or the final step) waits for the end.
	n := int(int64(len(sn.Logs)) * int64(now.Sub(start)) / int64(sn.Building))
	return min(n, max(len(sn.Logs)-1, 0))
}

// reapLocked drops removed snapshots whose removal has completed and reports
// whether anything changed (then the caller saves).
func (d *Service) reapLocked(now time.Time) bool {
	changed := false
	for id, sn := range d.st.Snapshots {
		if sn.RemovedAt != nil && (sn.RemoveReport || !now.Before(*sn.RemoveBy)) {
			delete(d.st.Snapshots, id)
			changed = true
		}
	}
	return changed
}

// reportedLocked marks removed snapshots as seen by a client: the next read
// no longer finds them. This is what makes a delete asynchronous yet
// deterministic for tests, whatever the build time.
func reportedLocked(sns ...*dtSnapshot) {
	for _, sn := range sns {
		if sn.RemovedAt != nil {
			sn.RemoveReport = true
		}
	}
}

// dtError is a failed Daytona request. The body has the shape of Daytona's
// AllExceptionsFilter: statusCode, timestamp, path, error, message.
type dtError struct {
	status  int
	message string
}

func (e *dtError) Error() string { return e.message }

func dtErrorf(status int, format string, args ...any) *dtError {
	return &dtError{status: status, message: fmt.Sprintf(format, args...)}
}

func writeDaytonaError(w http.ResponseWriter, r *http.Request, err error) {
	var de *dtError
	if !errors.As(err, &de) {
		de = &dtError{status: http.StatusInternalServerError, message: "Internal server error"}
	}
	core.WriteJSON(w, de.status, map[string]any{
		"statusCode": de.status,
		"timestamp":  time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		"path":       r.URL.RequestURI(),
		"error":      http.StatusText(de.status),
		"message":    de.message,
	})
}

// daytonaFaultAnswers answer injected faults in Daytona's error shape. The
// 429 message is NestJS's throttler default (inferred for Daytona).
func daytonaFaultAnswers(r *http.Request) core.FaultAnswers {
	return core.FaultAnswers{
		RateLimited: func(w http.ResponseWriter, _ *core.Fault) {
			writeDaytonaError(w, r, dtErrorf(http.StatusTooManyRequests, "ThrottlerException: Too Many Requests"))
		},
		ServerError: func(w http.ResponseWriter, f *core.Fault) {
			writeDaytonaError(w, r, dtErrorf(f.Status, "Internal server error"))
		},
	}
}

// daytonaRoute registers a Daytona API route ("METHOD /path" relative to the
// API root). Like every core route, it counts first, then applies faults, then checks
// the key, so that tests count every call a client made.
func (s *Service) daytonaRoute(pattern string, h func(w http.ResponseWriter, r *http.Request, org string)) {
	method, route, ok := strings.Cut(pattern, " ")
	if !ok || !strings.HasPrefix(route, "/") {
		panic("emulator: Daytona pattern must be \"METHOD /path\": " + pattern)
	}
	full := method + " " + daytonaAPIPrefix + route
	s.mux.HandleFunc(full, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(full, false)
		delay, f := s.core.TakeFaults(r.Method, daytonaAPIPrefix+route)
		if s.core.ServeFault(w, r, delay, f, daytonaFaultAnswers(r)) {
			return
		}
		org, err := s.authorize(r)
		if err != nil {
			writeDaytonaError(w, r, err)
			return
		}
		h(w, r, org)
	})
}

// authorize maps the Bearer API key to its organization. Daytona answers a
// missing or unknown key with 401 "Unauthorized" (inferred from its NestJS
// guards; the exact message is not in the SDK).
func (d *Service) authorize(r *http.Request) (string, error) {
	tok, _, ok := core.Bearer(r)
	if !ok {
		return "", dtErrorf(http.StatusUnauthorized, "Unauthorized")
	}
	org, known := d.keys[tok]
	if !known {
		return "", dtErrorf(http.StatusUnauthorized, "Unauthorized")
	}
	return org, nil
}

// Register mounts the Daytona API, the object storage and the Daytona admin
// routes on the core's mux.
func (s *Service) Register() {
	s.registerDaytonaSnapshots()
	s.registerDaytonaSandboxes()
	s.daytonaRoute("GET /object-storage/push-access", s.dtPushAccess)
	s.registerS3()
	s.registerDaytonaAdmin()
	// Unknown API paths answer like NestJS does ("Cannot GET /api/x") and
	// are counted under one key so Calls sees them.
	const other = daytonaPrefix + "{path...}"
	s.mux.HandleFunc(other, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(r.Method+" "+other, false)
		writeDaytonaError(w, r, dtErrorf(http.StatusNotFound, "Cannot %s %s", r.Method, strings.TrimPrefix(r.URL.Path, "/daytona")))
	})
}

// Calls is the number of requests made to the Daytona API and its
// object storage (everything under /daytona/), matched or not.
func (s *Service) Calls() int {
	return s.core.CountsWhere(func(k string) bool {
		_, route, ok := strings.Cut(k, " ")
		return ok && strings.HasPrefix(route, daytonaPrefix)
	})
}

// pushAccessKeys derives the object storage credentials handed to an
// organization. They are deterministic so a restarted emulator still knows
// them, and are never logged.
func pushAccessKeys(org string) (accessKey, secret, session string) {
	h := func(tag string) string {
		sum := sha256.Sum256([]byte("openinspect-emulator-daytona-" + tag + ":" + org))
		return hex.EncodeToString(sum[:])
	}
	return "EMU" + strings.ToUpper(h("access")[:17]), h("secret")[:40], h("session")
}

// dtPushAccess answers GET /object-storage/push-access with credentials for
// the emulator's own S3 endpoint. The URL follows the request's host, so it
// is right however the emulator is reached.
func (s *Service) dtPushAccess(w http.ResponseWriter, r *http.Request, org string) {
	ak, secret, session := pushAccessKeys(org)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	core.WriteJSON(w, http.StatusOK, map[string]string{
		"accessKey":      ak,
		"secret":         secret,
		"sessionToken":   session,
		"storageUrl":     scheme + "://" + r.Host + s3Prefix,
		"organizationId": org,
		"bucket":         Bucket,
	})
}

// Inventory lists the Daytona resources that exist.
type Inventory struct {
	Snapshots []SnapshotEntry `json:"snapshots"`
	Sandboxes []SandboxEntry  `json:"sandboxes"`
	// Objects are uploaded build contexts. Daytona offers no way to delete
	// them, so they do not count against Inventory.Empty.
	Objects []ObjectEntry `json:"objects"`
}

// SnapshotEntry is one snapshot in an Inventory, with what its build was
// asked to do: the Dockerfile and the build contexts (object storage hashes)
// of the create request, and the region (the client's target) it named.
type SnapshotEntry struct {
	OrganizationID string   `json:"organization_id"`
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	State          string   `json:"state"`
	ImageName      string   `json:"image_name,omitempty"`
	Dockerfile     string   `json:"dockerfile,omitempty"`
	ContextHashes  []string `json:"context_hashes,omitempty"`
	RegionID       string   `json:"region_id,omitempty"`
}

// SandboxEntry is one sandbox in an Inventory.
type SandboxEntry struct {
	OrganizationID string            `json:"organization_id"`
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	State          string            `json:"state"`
	Labels         map[string]string `json:"labels"`
}

// ObjectEntry is one uploaded object in an Inventory.
type ObjectEntry struct {
	Key  string `json:"key"`
	Size int64  `json:"size"`
}

// Inventory lists the snapshots, sandboxes and objects that exist now.
func (d *Service) Inventory() Inventory {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	inv := Inventory{Snapshots: []SnapshotEntry{}, Sandboxes: []SandboxEntry{}, Objects: []ObjectEntry{}}
	for _, sn := range d.st.Snapshots {
		if sn.RemovedAt != nil && (sn.RemoveReport || !now.Before(*sn.RemoveBy)) {
			continue // removal completed; reaped on the next request
		}
		inv.Snapshots = append(inv.Snapshots, SnapshotEntry{OrganizationID: sn.OrganizationID, ID: sn.ID, Name: sn.Name, State: sn.state(now),
			ImageName: sn.ImageName, Dockerfile: sn.Dockerfile, ContextHashes: slices.Clone(sn.ContextHashes), RegionID: sn.RegionID})
	}
	for _, sb := range d.st.Sandboxes {
		labels := make(map[string]string, len(sb.Labels))
		maps.Copy(labels, sb.Labels)
		inv.Sandboxes = append(inv.Sandboxes, SandboxEntry{OrganizationID: sb.OrganizationID, ID: sb.ID, Name: sb.Name, State: sb.State, Labels: labels})
	}
	for k, o := range d.st.Objects {
		inv.Objects = append(inv.Objects, ObjectEntry{Key: k, Size: o.Size})
	}
	less2 := func(a1, a2, b1, b2 string) bool { return a1 < b1 || (a1 == b1 && a2 < b2) }
	sort.Slice(inv.Snapshots, func(a, b int) bool {
		return less2(inv.Snapshots[a].OrganizationID, inv.Snapshots[a].Name, inv.Snapshots[b].OrganizationID, inv.Snapshots[b].Name)
	})
	sort.Slice(inv.Sandboxes, func(a, b int) bool {
		return less2(inv.Sandboxes[a].OrganizationID, inv.Sandboxes[a].ID, inv.Sandboxes[b].OrganizationID, inv.Sandboxes[b].ID)
	})
	sort.Slice(inv.Objects, func(a, b int) bool { return inv.Objects[a].Key < inv.Objects[b].Key })
	return inv
}

// Empty reports whether no snapshot or sandbox exists.
func (i Inventory) Empty() bool { return len(i.Snapshots) == 0 && len(i.Sandboxes) == 0 }

// dtTime formats timestamps like Daytona's JSON (JavaScript's toISOString).
func dtTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
