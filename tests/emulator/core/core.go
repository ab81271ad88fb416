package core

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// UnmatchedKey is the Counts key for requests no route matched.
const UnmatchedKey = "UNMATCHED"

// Core is what every family shares: the mux routes are registered on, the
// per-route request counts, the injected faults and the held requests. All
// methods are safe for concurrent use.
type Core struct {
	mux *http.ServeMux

	// statsMu guards the counters, the fault table and the hold gate.
	statsMu     sync.Mutex
	counts      map[string]int
	unmatchedCF int
	bytesOut    int64 // response bodies of Cloudflare v4 routes, for benchmarks
	faults      []*activeFault
	holds       holdGate // FaultHold's requests (faults.go)

	limiter rateLimiter // Cloudflare's per-token rate limit, when enforced

	// checkFault and extraKinds are set while the families are wired up,
	// before the first request, and only read afterwards.
	checkFault func(Fault) (Fault, error)
	extraKinds map[FaultKind]bool
}

// New returns a Core with an empty mux.
func New() *Core {
	return &Core{mux: http.NewServeMux(), counts: map[string]int{}, extraKinds: map[FaultKind]bool{}}
}

// Mux is where families register routes that need no counting or faults of
// the Cloudflare kind (their own registrars call Count and TakeFaults).
func (s *Core) Mux() *http.ServeMux { return s.mux }

// SetFaultCheck installs the check of a fault's route (and of family-specific
// kinds) run after the kind and counters are checked here; the composition
// root knows which route prefixes its families serve.
func (s *Core) SetFaultCheck(check func(Fault) (Fault, error)) { s.checkFault = check }

// AllowFaultKind accepts a family's own fault kind (e.g. Modal's image build
// failure), which its check installed with SetFaultCheck then validates.
func (s *Core) AllowFaultKind(k FaultKind) { s.extraKinds[k] = true }

// API registers a Cloudflare v4 route. Every such route goes through here so
// that counting, fault injection and auth happen identically and in this
// order: a request is counted even when a fault or an auth error answers it,
// because tests assert on how many calls a client made, not on how many
// succeeded. authorize answers the request itself when it returns false.
func (s *Core) API(pattern string, authorize func(http.ResponseWriter, *http.Request) bool, h http.HandlerFunc) {
	method, route, ok := strings.Cut(pattern, " ")
	if !ok || !IsCloudflarePath(route) {
		panic("emulator: API pattern must be \"METHOD /client/v4/...\": " + pattern)
	}
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s.Count(pattern, true)
		token, _, _ := Bearer(r)
		if wait := s.admitRate(token); wait > 0 {
			writeRateLimited(w, wait)
			return
		}
		s.ApplyFaults(w, r, method, route, func(w http.ResponseWriter, r *http.Request) {
			cw := &countingWriter{ResponseWriter: w}
			if authorize(cw, r) {
				h(cw, r)
			}
			s.statsMu.Lock()
			s.bytesOut += cw.n
			s.statsMu.Unlock()
		})
	})
}

// Unmatched answers everything no route claimed, the way the real API does
// for unknown paths: 400 with 7003 and 7000 under /client/v4/ (a 404 there
// made wrangler, which reads 404 from the R2 object routes as "no such
// bucket", print "The specified bucket does not exist." for any route the
// emulator lacked), and a plain 404 envelope outside it.
func (s *Core) Unmatched(w http.ResponseWriter, r *http.Request) {
	cf := IsCloudflarePath(r.URL.Path)
	s.Count(UnmatchedKey, cf)
	status := http.StatusNotFound
	if cf {
		status = http.StatusBadRequest
	}
	WriteJSON(w, status, Envelope{
		Success: false,
		Errors: []CFError{
			{Code: 7003, Message: "Could not route to " + r.URL.Path + ", perhaps your object identifier is invalid?"},
			{Code: 7000, Message: "No route for that URI"},
		},
		Messages: []any{},
	})
}

// Count records one request under key; cloudflare says whether it went to
// /client/v4/ (what CloudflareCalls counts).
func (s *Core) Count(key string, cloudflare bool) {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	s.counts[key]++
	if key == UnmatchedKey && cloudflare {
		s.unmatchedCF++
	}
}

// Counts returns how many requests each route received, keyed by the
// registered pattern ("POST /client/v4/accounts/{account_id}/d1/database"),
// plus "UNMATCHED" for requests no route matched. Admin requests are never
// counted.
func (s *Core) Counts() map[string]int {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	out := make(map[string]int, len(s.counts))
	maps.Copy(out, s.counts)
	return out
}

// CountsWhere sums the counts whose key satisfies keep, for a family's own
// call counter (DaytonaCalls, ModalCalls).
func (s *Core) CountsWhere(keep func(key string) bool) int {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	n := 0
	for k, v := range s.counts {
		if keep(k) {
			n += v
		}
	}
	return n
}

// CloudflareCalls is the number of requests made to /client/v4/, matched or
// not; "the provider made no API call" is then simply CloudflareCalls() == 0.
func (s *Core) CloudflareCalls() int {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	n := s.unmatchedCF
	for k, v := range s.counts {
		if _, route, ok := strings.Cut(k, " "); ok && IsCloudflarePath(route) {
			n += v
		}
	}
	return n
}

// CloudflareBytes is how many response-body bytes the Cloudflare v4 routes
// sent since the last ResetCounts: what a client transferred, for the
// benchmarks that show a read's cost not growing with the account.
func (s *Core) CloudflareBytes() int64 {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	return s.bytesOut
}

// ResetCounts zeroes Counts, CloudflareCalls and CloudflareBytes.
func (s *Core) ResetCounts() {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	s.counts = map[string]int{}
	s.unmatchedCF = 0
	s.bytesOut = 0
}

// countingWriter counts the body bytes a handler writes; Unwrap keeps
// http.ResponseController (flush, hijack) working through it.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// IsCloudflarePath reports whether p is under the emulated Cloudflare API (as
// opposed to the admin API), which decides what CloudflareCalls counts.
func IsCloudflarePath(p string) bool { return strings.HasPrefix(p, "/client/v4/") }

// SortedKeys is used wherever output order must be deterministic.
func SortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
