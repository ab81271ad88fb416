package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FaultKind selects what an injected Fault does.
type FaultKind string

const (
	// FaultLatency delays the request by Latency, then serves it normally.
	FaultLatency FaultKind = "latency"
	// FaultRateLimit answers 429 with Retry-After and code 971.
	FaultRateLimit FaultKind = "rate_limit"
	// FaultServerError answers Status (500, 502 or 503; default 500).
	FaultServerError FaultKind = "server_error"
	// FaultDropConnection closes the connection without any response.
	FaultDropConnection FaultKind = "drop"
	// FaultHold blocks the request until ReleaseHolds or ClearFaults
	// (POST /__emulator/faults/release, DELETE /__emulator/faults), then
	// serves it normally. Crash tests use it to stop a client at a chosen
	// call, kill it there, and only then let the call proceed. A held
	// request whose client went away meanwhile (the connection closed) is
	// dropped, never served: what a dead client's call leaves behind is then
	// exactly what the real API leaves for a request that never arrived.
	// Holds reports how many requests wait.
	FaultHold FaultKind = "hold"
	// FaultHoldResponse serves the request (its effect happens: the object
	// exists), then withholds the answer the way FaultHold withholds the
	// request: sent on release, dropped when the client went away first.
	// Crash tests use it for the worst kill point of a create, the one
	// after the cloud acted and before the client heard of it. Cloudflare
	// v4 routes only.
	FaultHoldResponse FaultKind = "hold_response"
)

// Fault makes matching Cloudflare requests misbehave, so tests can prove a
// client retries, backs off or surfaces errors. It never affects /__emulator/.
type Fault struct {
	// Method is the HTTP method to match; "" matches any.
	Method string
	// Route is a pattern as in Counts keys but without the method, e.g.
	// "/client/v4/accounts/{account_id}/d1/database/{database_id}/query".
	// "" matches every Cloudflare route. "METHOD /path" is accepted too.
	// /__workers/ and /daytona/ routes (Counts keys such as
	// "PUT /__workers/{script_name}/secrets") must be named explicitly.
	Route string
	Kind  FaultKind
	// Status is the HTTP status for FaultServerError.
	Status int
	// Latency is the delay for FaultLatency.
	Latency time.Duration
	// RetryAfter is advertised by FaultRateLimit (rounded up to seconds in
	// Retry-After; sub-second values also go out as Retry-After-Ms, which
	// cloudflare-go honours, so tests need not sleep whole seconds).
	RetryAfter time.Duration
	// Times is how many matching requests the fault affects; 0 means until
	// ClearFaults.
	Times int
	// After is how many matching requests pass untouched before the fault
	// starts to act, e.g. After: 4 holds the fifth D1 query.
	After int
	// BodyContains, when set, matches only requests whose body contains it
	// (Cloudflare v4 routes): one create among several in flight at once,
	// e.g. a queue by its name.
	BodyContains string

	// release is what a held request waits on (set when a hold takes it).
	release <-chan struct{}
}

// FaultJSON is the admin API's wire form: durations as Go duration strings
// ("250ms") because that is what a human types into curl.
type FaultJSON struct {
	Method       string    `json:"method,omitempty"`
	Route        string    `json:"route,omitempty"`
	Kind         FaultKind `json:"kind"`
	Status       int       `json:"status,omitempty"`
	Latency      string    `json:"latency,omitempty"`
	RetryAfter   string    `json:"retry_after,omitempty"`
	Times        int       `json:"times,omitempty"`
	After        int       `json:"after,omitempty"`
	BodyContains string    `json:"body_contains,omitempty"`
	Remaining    *int      `json:"remaining,omitempty"`
}

// MarshalJSON renders durations as Go duration strings.
func (f Fault) MarshalJSON() ([]byte, error) {
	j := FaultJSON{Method: f.Method, Route: f.Route, Kind: f.Kind, Status: f.Status, Times: f.Times, After: f.After,
		BodyContains: f.BodyContains}
	if f.Latency != 0 {
		j.Latency = f.Latency.String()
	}
	if f.RetryAfter != 0 {
		j.RetryAfter = f.RetryAfter.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON accepts durations as Go duration strings.
func (f *Fault) UnmarshalJSON(b []byte) error {
	var j FaultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	out := Fault{Method: j.Method, Route: j.Route, Kind: j.Kind, Status: j.Status, Times: j.Times, After: j.After,
		BodyContains: j.BodyContains}
	var err error
	if j.Latency != "" {
		if out.Latency, err = time.ParseDuration(j.Latency); err != nil {
			return fmt.Errorf("latency: %w", err)
		}
	}
	if j.RetryAfter != "" {
		if out.RetryAfter, err = time.ParseDuration(j.RetryAfter); err != nil {
			return fmt.Errorf("retry_after: %w", err)
		}
	}
	*f = out
	return nil
}

// normalize splits a "METHOD /route" Route and checks the fault can act:
// its kind here, its route (and a family's own kinds) through the check the
// composition root installed with SetFaultCheck.
func (s *Core) normalize(f Fault) (Fault, error) {
	if m, r, ok := strings.Cut(f.Route, " "); ok && f.Method == "" {
		f.Method, f.Route = m, r
	}
	f.Method = strings.ToUpper(f.Method)
	switch f.Kind {
	case FaultLatency:
		if f.Latency <= 0 {
			return f, fmt.Errorf("latency fault needs a positive latency")
		}
	case FaultRateLimit, FaultDropConnection, FaultHold:
	case FaultHoldResponse:
		if f.Route != "" && !IsCloudflarePath(f.Route) {
			return f, fmt.Errorf("hold_response acts on Cloudflare v4 routes only, not %s", f.Route)
		}
	case FaultServerError:
		if f.Status == 0 {
			f.Status = http.StatusInternalServerError
		}
		if f.Status < 500 || f.Status > 599 {
			return f, fmt.Errorf("server_error status must be 5xx, got %d", f.Status)
		}
	default:
		if s.extraKinds[f.Kind] {
			break
		}
		return f, fmt.Errorf("unknown fault kind %q (want latency, rate_limit, server_error, drop, hold or hold_response)", f.Kind)
	}
	if f.Times < 0 {
		return f, fmt.Errorf("times must be >= 0")
	}
	if f.After < 0 {
		return f, fmt.Errorf("after must be >= 0")
	}
	if f.BodyContains != "" && f.Route != "" && !IsCloudflarePath(f.Route) {
		return f, fmt.Errorf("body_contains matches Cloudflare v4 requests only, not %s", f.Route)
	}
	if s.checkFault == nil {
		return f, nil
	}
	return s.checkFault(f)
}

type activeFault struct {
	Fault
	remaining int // meaningful only when Times > 0
	skip      int // matching requests still to pass untouched (After)
}

// InjectFault adds f; faults apply in the order injected. An invalid fault is
// a bug in the calling test, so it panics rather than being ignored.
func (s *Core) InjectFault(f Fault) {
	if err := s.AddFault(f); err != nil {
		panic("emulator: InjectFault: " + err.Error())
	}
}

// AddFault is InjectFault returning the error instead of panicking, for
// faults that arrive over the admin API.
func (s *Core) AddFault(f Fault) error {
	f, err := s.normalize(f)
	if err != nil {
		return err
	}
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	s.faults = append(s.faults, &activeFault{Fault: f, remaining: f.Times, skip: f.After})
	return nil
}

// ClearFaults removes every fault and releases every held request.
func (s *Core) ClearFaults() {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	s.faults = nil
	s.releaseHoldsLocked()
}

// HoldStats describes FaultHold's requests: how many wait now, and how the
// finished ones ended. The admin API serves it as "holds" in GET
// /__emulator/faults.
type HoldStats struct {
	// Held is how many requests wait for a release now.
	Held int `json:"held"`
	// Released counts held requests that were released and then served.
	Released int `json:"released"`
	// Abandoned counts held requests whose client went away first; they
	// were dropped without being served.
	Abandoned int `json:"abandoned"`
}

// holdGate is what held requests wait on: release is closed (and replaced)
// by ReleaseHolds, so requests held later wait for the next release.
type holdGate struct {
	release chan struct{}
	stats   HoldStats
}

// Holds reports the held requests.
func (s *Core) Holds() HoldStats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	return s.holds.stats
}

// ReleaseHolds lets every request held now proceed; the hold faults stay, so
// later matching requests are held again until the next release (ClearFaults
// removes them and releases too).
func (s *Core) ReleaseHolds() {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	s.releaseHoldsLocked()
}

func (s *Core) releaseHoldsLocked() {
	if s.holds.release != nil {
		close(s.holds.release)
		s.holds.release = nil
	}
}

// holdGateLocked returns the channel a request held now waits on.
func (s *Core) holdGateLocked() <-chan struct{} {
	if s.holds.release == nil {
		s.holds.release = make(chan struct{})
	}
	return s.holds.release
}

// hold blocks a request until a release or until its client goes away, and
// reports whether it should be served (false: the client is gone).
//
// An HTTP/1 server notices a closed connection only once the request body
// has been read to its end, so the body is read (and kept for the handler)
// first; otherwise a killed client's upload would wait, undetected, and be
// served after the release. HTTP/2 (Modal's gRPC) notices a closed
// connection at once and is left streaming.
func (s *Core) hold(w http.ResponseWriter, r *http.Request, release <-chan struct{}) bool {
	if r.ProtoMajor < 2 {
		if _, err := bufferBody(w, r); err != nil {
			s.endHold(false)
			return false
		}
	}
	select {
	case <-release:
		// A release and a disconnect may both have happened; the client's
		// death wins, so a dead client's call is never served.
		if r.Context().Err() != nil {
			s.endHold(false)
			return false
		}
		s.endHold(true)
		return true
	case <-r.Context().Done():
		s.endHold(false)
		return false
	}
}

func (s *Core) endHold(served bool) {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	s.holds.stats.Held--
	if served {
		s.holds.stats.Released++
	} else {
		s.holds.stats.Abandoned++
	}
}

func (s *Core) ActiveFaults() []FaultJSON {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	out := []FaultJSON{}
	for _, f := range s.faults {
		var j FaultJSON
		b, _ := json.Marshal(f.Fault)
		_ = json.Unmarshal(b, &j)
		if f.Times > 0 {
			rem := f.remaining
			j.Remaining = &rem
		}
		out = append(out, j)
	}
	return out
}

// TakeFaults consumes the faults that apply to one request: every matching
// latency fault (delays add up) and at most one terminal fault.
func (s *Core) TakeFaults(method, route string) (delay time.Duration, terminal *Fault) {
	return s.takeFaults(method, route, nil)
}

// takeFaults is TakeFaults for a request whose body is known (faults with
// BodyContains match only such requests).
func (s *Core) takeFaults(method, route string, body []byte) (delay time.Duration, terminal *Fault) {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	kept := s.faults[:0]
	for _, f := range s.faults {
		// "" matches Cloudflare routes only; /__workers/ routes are named.
		matches := (f.Method == "" || f.Method == method) && (f.Route == route || f.Route == "" && IsCloudflarePath(route)) &&
			(f.BodyContains == "" || bytes.Contains(body, []byte(f.BodyContains)))
		if matches && f.skip > 0 {
			f.skip--
			kept = append(kept, f)
			continue
		}
		use := matches && (f.Kind == FaultLatency || terminal == nil)
		if use {
			if f.Kind == FaultLatency {
				delay += f.Latency
			} else {
				t := f.Fault
				if t.Kind == FaultHold || t.Kind == FaultHoldResponse {
					// Counted as held from here, so a test polling Holds
					// sees it as soon as the fault took the request.
					t.release = s.holdGateLocked()
					s.holds.stats.Held++
				}
				terminal = &t
			}
			if f.Times > 0 {
				f.remaining--
				if f.remaining == 0 {
					continue
				}
			}
		}
		kept = append(kept, f)
	}
	clear(s.faults[len(kept):])
	s.faults = kept
	return delay, terminal
}

// ApplyFaults acts on the faults for this request and serves it with serve
// unless a fault answered (or dropped) it.
func (s *Core) ApplyFaults(w http.ResponseWriter, r *http.Request, method, route string, serve http.HandlerFunc) {
	var body []byte
	if s.matchesBodies() { // read only while a fault looks at bodies
		var err error
		if body, err = bufferBody(w, r); err != nil {
			WriteError(w, NewAPIError(http.StatusRequestEntityTooLarge, 6007, "Malformed JSON in request body"))
			return
		}
	}
	delay, f := s.takeFaults(r.Method, route, body)
	if r.Method == http.MethodHead && method == http.MethodGet && delay == 0 && f == nil {
		// Routes registered for GET also serve HEAD; a fault aimed at GET
		// should hit those too.
		delay, f = s.takeFaults(http.MethodGet, route, body)
	}
	if f != nil && f.Kind == FaultHoldResponse {
		if waitOut(r, delay) {
			s.serveThenHold(w, r, f, serve)
		} else {
			s.endHold(false)
		}
		return
	}
	if !s.ServeFault(w, r, delay, f, CloudflareFaultAnswers) {
		serve(w, r)
	}
}

// bufferBody reads the request body to its end (bounded by MaxBody) and
// puts it back for the handler; nil for a request without one.
func bufferBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// matchesBodies reports whether an active fault matches on request bodies.
func (s *Core) matchesBodies() bool {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	return slices.ContainsFunc(s.faults, func(f *activeFault) bool { return f.BodyContains != "" })
}

// serveThenHold serves the request into a recording, then holds the
// recorded answer until the release, dropping it if the client went away.
func (s *Core) serveThenHold(w http.ResponseWriter, r *http.Request, f *Fault, serve http.HandlerFunc) {
	rec := httptest.NewRecorder()
	serve(rec, r)
	// What the handler left unread, so a closed HTTP/1 connection is noticed
	// while the answer is held (see hold).
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
	}
	r.Body = http.NoBody
	if !s.hold(w, r, f.release) {
		return
	}
	maps.Copy(w.Header(), rec.Header())
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// waitOut waits out a fault's latency, reporting false when the client went
// away meanwhile.
func waitOut(r *http.Request, delay time.Duration) bool {
	if delay <= 0 {
		return true
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// FaultAnswers writes a fault's response in the format of a family of routes.
type FaultAnswers struct {
	RateLimited func(w http.ResponseWriter, f *Fault)
	ServerError func(w http.ResponseWriter, f *Fault)
}

// CloudflareFaultAnswers answer in the v4 envelope.
var CloudflareFaultAnswers = FaultAnswers{
	RateLimited: func(w http.ResponseWriter, f *Fault) {
		if f.RetryAfter%time.Second != 0 {
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(f.RetryAfter.Milliseconds(), 10))
		}
		WriteError(w, errRateLimited())
	},
	ServerError: func(w http.ResponseWriter, f *Fault) {
		WriteError(w, NewAPIError(f.Status, 10001, "We encountered an internal error. Please try again."))
	},
}

// ServeFault waits out a fault's latency, then answers or drops the request
// for a terminal fault, and reports whether the request is done with. A held
// request waits for its release and is then served normally.
func (s *Core) ServeFault(w http.ResponseWriter, r *http.Request, delay time.Duration, f *Fault, answers FaultAnswers) bool {
	if f != nil && f.Kind == FaultHold {
		if !s.hold(w, r, f.release) {
			return true
		}
		f = nil
	}
	if !waitOut(r, delay) {
		return true
	}
	if f == nil {
		return false
	}
	switch f.Kind {
	case FaultRateLimit:
		if f.RetryAfter > 0 {
			setRetryAfter(w, f.RetryAfter)
		}
		answers.RateLimited(w, f)
	case FaultServerError:
		answers.ServerError(w, f)
	case FaultDropConnection:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			// HTTP/2 cannot hijack; aborting the handler resets the stream,
			// which a client sees the same way: no response.
			panic(http.ErrAbortHandler)
		}
		_ = conn.Close()
	}
	return true
}

// Hold makes a request that TakeFaults answered with a FaultHold wait for its
// release, for families that serve faults their own way (Modal's gRPC); it
// reports whether the request should now be served.
func (s *Core) Hold(w http.ResponseWriter, r *http.Request, f *Fault) bool {
	return s.hold(w, r, f.release)
}
