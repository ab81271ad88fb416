package workers

// Workers' logs, as people read them. Every deployed script runs with
// workerd's tail worker attached (runtime.go, package workerd's tail.js):
// after each invocation, workerd hands it the trace events — the console.*
// calls, the uncaught exceptions, the outcome, the event (request, cron,
// queue batch, Durable Object call) — and it posts them here as the binding
// kind "tail". Each event is
//
//   - appended to the script's log file, <data-dir>/worker-logs/<account>/
//     <script>.log, in the form `wrangler tail --format pretty` prints, with
//     the request's Cf-Ray (serveScript gives every request one, and its
//     response carries it, so a failed request seen in a browser is found
//     in the log by its ray);
//   - streamed to the tails open on the script: Cloudflare's tail API
//     (POST, GET …/workers/scripts/{name}/tails, DELETE …/tails/{id}) hands
//     out a WebSocket URL, and the socket (subprotocol trace-v1, what
//     `wrangler tail` asks for) carries each event as one JSON text message
//     in Cloudflare's shape: outcome, scriptName, scriptVersion, exceptions,
//     logs, eventTimestamp, event;
//   - for an uncaught exception, one line in the emulator's own log naming
//     the script, the request, the ray and the log file (ExceptionLogf).
//
// What is documented, observed or assumed of the tail API is in
// docs/emulator.md ("Workers' logs and wrangler tail").

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/workerd"
)

const (
	// LogDirName is the directory under the data directory that holds the
	// scripts' log files, one per script: <account>/<script>.log.
	LogDirName = "worker-logs"
	// logFileLimit bounds a log file: past it the file is moved to
	// <script>.log.1 (replacing the previous one) and a new one begun, so
	// a chatty script cannot fill the disk of a local cloud left running.
	logFileLimit = 16 << 20
	// tailLifetime is how long a tail lives: Cloudflare's expire after
	// roughly an hour (observed: workers-sdk issue 14427).
	tailLifetime = time.Hour
	// tailProtocol is the WebSocket subprotocol of a tail; wrangler sends it
	// and Cloudflare accepts no other.
	tailProtocol = "trace-v1"
	// tailStreamPath is where a tail's WebSocket is served:
	// <tailStreamPath><id>.
	tailStreamPath = "/__emulator/tails/"
	// tailBacklog bounds the events queued for one slow WebSocket; past it
	// events are dropped for that socket, never held for the others.
	tailBacklog = 256
	// rayHeader is Cloudflare's request ID, on the request the script sees
	// and on the response the client gets.
	rayHeader = "Cf-Ray"
)

// tails are the open tail sessions and the log files' lock.
type tails struct {
	mu       sync.Mutex
	sessions map[string]*tailSession // by ID
	closed   bool                    // Close ran: no new session, no new socket

	files sync.Mutex // serialises appends to the log files
}

// tailSession is one tail: created by POST …/tails, streamed to every
// WebSocket connected to its URL until it is deleted or expires.
type tailSession struct {
	id, account, script string
	created, expires    time.Time
	filters             []tailFilter
	expiry              *time.Timer
	conns               map[*tailConn]struct{}
}

// tailConn is one WebSocket of a session.
type tailConn struct {
	send    chan []byte
	closing chan struct{} // closed to end the socket (delete, expiry, Close)
	once    sync.Once
	mu      sync.Mutex
	debug   bool // the client's {"debug": true}: filtered-out events are sent too
}

func (c *tailConn) end() { c.once.Do(func() { close(c.closing) }) }

func (c *tailConn) isDebug() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.debug
}

// registerTails mounts the tail API, its WebSocket and the log files' list.
func (s *Service) registerTails() {
	const base = "/client/v4/accounts/{account_id}/workers/scripts/{script_name}/tails"
	s.cf.API("POST "+base, cloudflare.AuthAccount, s.tailCreate)
	s.cf.API("GET "+base, cloudflare.AuthAccount, s.tailGet)
	s.cf.API("DELETE "+base+"/{id}", cloudflare.AuthAccount, s.tailDelete)
	s.mux.HandleFunc("GET "+tailStreamPath+"{id}", s.tailStream)
	s.mux.HandleFunc("GET /__emulator/worker-logs", func(w http.ResponseWriter, _ *http.Request) {
		core.WriteJSON(w, http.StatusOK, s.WorkerLogs())
	})
}

// tailJSON is a tail as the API answers it.
type tailJSON struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	ExpiresAt string `json:"expires_at"`
}

func (s *Service) tailJSON(t *tailSession) tailJSON {
	base := strings.TrimPrefix(s.baseURL(), "http://")
	// The emulator serves plain HTTP on loopback, so its tail URL is ws://
	// where Cloudflare's is wss://; wrangler takes either.
	return tailJSON{ID: t.id, URL: "ws://" + base + tailStreamPath + t.id, ExpiresAt: cloudflare.Time(t.expires)}
}

// tailCreate starts a tail: POST …/tails with {"filters": [...]} (what
// wrangler sends; an empty body or {} is no filter).
func (s *Service) tailCreate(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Filters []json.RawMessage `json:"filters"`
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		err = core.NewAPIError(http.StatusBadRequest, 6007, "Malformed JSON in request body")
	}
	if err == nil && len(bytes.TrimSpace(raw)) > 0 {
		if json.Unmarshal(raw, &body) != nil {
			err = core.NewAPIError(http.StatusBadRequest, 6007, "Malformed JSON in request body")
		}
	}
	var filters []tailFilter
	if err == nil {
		filters, err = parseTailFilters(body.Filters)
	}
	if err == nil {
		s.mu.Lock()
		_, err = s.wkLookupLocked(r)
		s.mu.Unlock()
	}
	if err != nil {
		core.WriteError(w, err)
		return
	}
	now := time.Now().UTC()
	t := &tailSession{id: core.NewHexID(), account: r.PathValue("account_id"), script: r.PathValue("script_name"),
		created: now, expires: now.Add(tailLifetime), filters: filters, conns: map[*tailConn]struct{}{}}
	s.tails.mu.Lock()
	if s.tails.closed {
		s.tails.mu.Unlock()
		core.WriteError(w, errors.New("the emulator is closing"))
		return
	}
	if s.tails.sessions == nil {
		s.tails.sessions = map[string]*tailSession{}
	}
	s.tails.sessions[t.id] = t
	t.expiry = time.AfterFunc(tailLifetime, func() { s.endTail(t.id) })
	s.tails.mu.Unlock()
	core.WriteResult(w, s.tailJSON(t))
}

// tailGet answers the script's newest open tail, as Cloudflare's API
// reference declares it (one object, not a list), or null when it has none.
func (s *Service) tailGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	_, err := s.wkLookupLocked(r)
	s.mu.Unlock()
	if err != nil {
		core.WriteError(w, err)
		return
	}
	acct, script := r.PathValue("account_id"), r.PathValue("script_name")
	var newest *tailSession
	s.tails.mu.Lock()
	for _, t := range s.tails.sessions {
		if t.account == acct && t.script == script && (newest == nil || t.created.After(newest.created)) {
			newest = t
		}
	}
	var out any
	if newest != nil {
		out = s.tailJSON(newest)
	}
	s.tails.mu.Unlock()
	core.WriteResult(w, out)
}

// tailDelete ends a tail and closes its sockets; the answer is the bare
// envelope (result null).
func (s *Service) tailDelete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	_, err := s.wkLookupLocked(r)
	s.mu.Unlock()
	if err == nil {
		s.tails.mu.Lock()
		t := s.tails.sessions[r.PathValue("id")]
		if t == nil || t.account != r.PathValue("account_id") || t.script != r.PathValue("script_name") {
			err = core.NewAPIError(http.StatusNotFound, 10007, "workers.api.error.tail_not_found")
		}
		s.tails.mu.Unlock()
	}
	if err != nil {
		core.WriteError(w, err)
		return
	}
	s.endTail(r.PathValue("id"))
	core.WriteResult(w, nil)
}

// endTail removes a session and closes its sockets (delete, expiry).
func (s *Service) endTail(id string) {
	s.tails.mu.Lock()
	t := s.tails.sessions[id]
	delete(s.tails.sessions, id)
	s.tails.mu.Unlock()
	if t == nil {
		return
	}
	t.expiry.Stop()
	s.tails.mu.Lock()
	conns := make([]*tailConn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	s.tails.mu.Unlock()
	for _, c := range conns {
		c.end()
	}
}

// closeTails ends every session (Close).
func (s *Service) closeTails() {
	s.tails.mu.Lock()
	s.tails.closed = true
	ids := make([]string, 0, len(s.tails.sessions))
	for id := range s.tails.sessions {
		ids = append(ids, id)
	}
	s.tails.mu.Unlock()
	for _, id := range ids {
		s.endTail(id)
	}
}

// tailStream serves a tail's WebSocket (tails_ws.go): the client sends
// {"debug": bool} once open (wrangler does) and pings; the emulator sends
// one text message per trace event.
func (s *Service) tailStream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.tails.mu.Lock()
	t := s.tails.sessions[id]
	closed := s.tails.closed
	s.tails.mu.Unlock()
	if t == nil || closed {
		core.WriteJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no tail %q: it expired, was deleted, or never existed", id)})
		return
	}
	ws, err := acceptWebSocket(w, r, tailProtocol)
	if err != nil {
		var hs *errWSHandshake
		if errors.As(err, &hs) {
			core.WriteJSON(w, hs.status, map[string]string{"error": hs.msg})
		} else if s.logf != nil {
			s.logf("tail %s: %v", id, err)
		}
		return
	}
	s.serveTailConn(t, ws)
}

func (s *Service) serveTailConn(t *tailSession, ws *wsConn) {
	defer ws.Close()
	c := &tailConn{send: make(chan []byte, tailBacklog), closing: make(chan struct{})}
	s.tails.mu.Lock()
	_, open := s.tails.sessions[t.id]
	if open && !s.tails.closed {
		t.conns[c] = struct{}{}
	}
	s.tails.mu.Unlock()
	if !open {
		return
	}
	defer func() {
		s.tails.mu.Lock()
		delete(t.conns, c)
		s.tails.mu.Unlock()
	}()
	// The reader answers pings and takes the client's settings; its end is
	// the client's going away.
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		for {
			msg, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var settings struct {
				Debug bool `json:"debug"`
			}
			if json.Unmarshal(msg, &settings) == nil {
				c.mu.Lock()
				c.debug = settings.Debug
				c.mu.Unlock()
			}
		}
	}()
	for {
		select {
		case b := <-c.send:
			if err := ws.WriteText(b); err != nil {
				return
			}
		case <-c.closing:
			return
		case <-gone:
			return
		}
	}
}

// traceEvent is one trace item as the tail worker posts it and as the tail
// WebSocket sends it, in Cloudflare's shape; workerd's other fields (its
// wall and CPU time, always 0 here) are left out.
type traceEvent struct {
	Outcome                  string           `json:"outcome"`
	ScriptName               string           `json:"scriptName"`
	ScriptVersion            *traceVersion    `json:"scriptVersion,omitempty"`
	Entrypoint               string           `json:"entrypoint,omitempty"`
	DiagnosticsChannelEvents json.RawMessage  `json:"diagnosticsChannelEvents"`
	Exceptions               []traceException `json:"exceptions"`
	Logs                     []traceLog       `json:"logs"`
	EventTimestamp           int64            `json:"eventTimestamp"`
	Event                    json.RawMessage  `json:"event"`
}

type traceVersion struct {
	ID string `json:"id"`
}

type traceException struct {
	Name      string `json:"name"`
	Message   string `json:"message"`
	Timestamp int64  `json:"timestamp"`
	Stack     string `json:"stack,omitempty"`
}

type traceLog struct {
	Message   []json.RawMessage `json:"message"`
	Level     string            `json:"level"`
	Timestamp int64             `json:"timestamp"`
}

// traceEventInfo is what the log file and the filters read of an event.
type traceEventInfo struct {
	Request *struct {
		URL     string            `json:"url"`
		Method  string            `json:"method"`
		Headers map[string]string `json:"headers"`
	} `json:"request"`
	Response *struct {
		Status int `json:"status"`
	} `json:"response"`
	Cron          string          `json:"cron"`
	ScheduledTime json.RawMessage `json:"scheduledTime"`
	Queue         string          `json:"queue"`
	BatchSize     int             `json:"batchSize"`
	RPCMethod     string          `json:"rpcMethod"`
}

// tailProps are the props runtime.go attaches the tail worker with.
type tailProps struct {
	Account string `json:"account"`
	Script  string `json:"script"`
	Version string `json:"version"`
}

func (p tailProps) asMap() map[string]string {
	return map[string]string{"account": p.Account, "script": p.Script, "version": p.Version}
}

// tailSinkHeaderValue is the X-Emulator-Binding value of the tail worker's
// posts (bindings.go dispatches on its first segment).
const tailSinkHeaderValue = "tail/all/all"

// tailSink is where the configuration's tail worker posts: this emulator.
func (s *Service) tailSink() *workerd.TailSink {
	return &workerd.TailSink{Address: strings.TrimPrefix(s.baseURL(), "http://"), Header: bindingHeader, Value: tailSinkHeaderValue}
}

// serveTailEvents takes one post of the tail worker: {props, events}.
func (s *Service) serveTailEvents(w http.ResponseWriter, r *http.Request, _, _ string) {
	var post struct {
		Props  tailProps    `json:"props"`
		Events []traceEvent `json:"events"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, core.MaxBody)).Decode(&post); err != nil {
		http.Error(w, "tail events: "+err.Error(), http.StatusBadRequest)
		return
	}
	if post.Props.Account == "" || post.Props.Script == "" {
		http.Error(w, "tail events: props name no script", http.StatusBadRequest)
		return
	}
	for _, ev := range post.Events {
		ev.ScriptName = post.Props.Script
		if post.Props.Version != "" {
			ev.ScriptVersion = &traceVersion{ID: post.Props.Version}
		}
		if ev.Exceptions == nil {
			ev.Exceptions = []traceException{}
		}
		if ev.Logs == nil {
			ev.Logs = []traceLog{}
		}
		if len(ev.DiagnosticsChannelEvents) == 0 {
			ev.DiagnosticsChannelEvents = json.RawMessage("[]")
		}
		var info traceEventInfo
		_ = json.Unmarshal(ev.Event, &info) // an event of a kind not read here still goes out as it came
		if err := s.appendWorkerLog(post.Props.Account, post.Props.Script, ev, info); err != nil && s.logf != nil {
			s.logf("worker %s: its log: %v", post.Props.Script, err)
		}
		if ev.Outcome == "exception" && s.exceptionLogf != nil {
			s.exceptionLogf("%s", exceptionLine(ev, info, s.LogFile(post.Props.Account, post.Props.Script)))
		}
		s.publishTraceEvent(post.Props.Account, post.Props.Script, ev, info)
	}
	w.WriteHeader(http.StatusNoContent)
}

// publishTraceEvent sends ev to the sockets of the script's tails whose
// filters it passes (or whose client asked for debug).
func (s *Service) publishTraceEvent(acct, script string, ev traceEvent, info traceEventInfo) {
	var msg []byte
	s.tails.mu.Lock()
	defer s.tails.mu.Unlock()
	for _, t := range s.tails.sessions {
		if t.account != acct || t.script != script || len(t.conns) == 0 {
			continue
		}
		pass := passesTailFilters(t.filters, ev, info)
		for c := range t.conns {
			if !pass && !c.isDebug() {
				continue
			}
			if msg == nil {
				var err error
				if msg, err = json.Marshal(ev); err != nil {
					return // plain data: cannot fail
				}
			}
			select {
			case c.send <- msg:
			default: // a socket this far behind loses events, not the others
			}
		}
	}
}

// tailFilter is one of Cloudflare's tail filters, each matching an event:
// all of a tail's filters must match.
type tailFilter func(ev traceEvent, info traceEventInfo) bool

func passesTailFilters(filters []tailFilter, ev traceEvent, info traceEventInfo) bool {
	for _, f := range filters {
		if !f(ev, info) {
			return false
		}
	}
	return true
}

// parseTailFilters reads the filters wrangler sends (its
// translateCLICommandToFilterMessage): sampling_rate, outcome, method,
// header {key, query}, client_ip, query, scriptVersion.
func parseTailFilters(raw []json.RawMessage) ([]tailFilter, error) {
	out := make([]tailFilter, 0, len(raw))
	for i, r := range raw {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(r, &f); err != nil || len(f) != 1 {
			return nil, wkInvalid("filters[%d]: want an object with one of sampling_rate, outcome, method, header, client_ip, query, scriptVersion", i)
		}
		for kind, v := range f {
			filter, err := parseTailFilter(kind, v)
			if err != nil {
				return nil, wkInvalid("filters[%d].%s: %v", i, kind, err)
			}
			out = append(out, filter)
		}
	}
	return out, nil
}

func parseTailFilter(kind string, v json.RawMessage) (tailFilter, error) {
	strs := func() ([]string, error) {
		var list []string
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, errors.New("want a list of strings")
		}
		return list, nil
	}
	switch kind {
	case "sampling_rate":
		var rate float64
		if err := json.Unmarshal(v, &rate); err != nil || rate <= 0 || rate >= 1 {
			return nil, errors.New("want a number between 0 and 1")
		}
		return func(traceEvent, traceEventInfo) bool { return sample(rate) }, nil
	case "outcome":
		list, err := strs()
		return func(ev traceEvent, _ traceEventInfo) bool { return slices.Contains(list, ev.Outcome) }, err
	case "method":
		list, err := strs()
		return func(_ traceEvent, info traceEventInfo) bool {
			return info.Request != nil && slices.ContainsFunc(list, func(m string) bool { return strings.EqualFold(m, info.Request.Method) })
		}, err
	case "client_ip":
		// Every request to the local cloud comes from this machine: "self"
		// is all of them; an address matches the request's cf-connecting-ip.
		list, err := strs()
		return func(_ traceEvent, info traceEventInfo) bool {
			if slices.Contains(list, "self") {
				return true
			}
			return info.Request != nil && slices.Contains(list, header(info.Request.Headers, "cf-connecting-ip"))
		}, err
	case "header":
		var h struct {
			Key   string  `json:"key"`
			Query *string `json:"query"`
		}
		if err := json.Unmarshal(v, &h); err != nil || h.Key == "" {
			return nil, errors.New("want {key, query}")
		}
		return func(_ traceEvent, info traceEventInfo) bool {
			if info.Request == nil {
				return false
			}
			got, ok := lookupHeader(info.Request.Headers, h.Key)
			return ok && (h.Query == nil || got == *h.Query)
		}, nil
	case "query":
		var q string
		if err := json.Unmarshal(v, &q); err != nil {
			return nil, errors.New("want a string")
		}
		return func(ev traceEvent, _ traceEventInfo) bool {
			for _, l := range ev.Logs {
				if strings.Contains(logText(l.Message), q) {
					return true
				}
			}
			for _, e := range ev.Exceptions {
				if strings.Contains(e.Name+": "+e.Message, q) {
					return true
				}
			}
			return false
		}, nil
	case "scriptVersion":
		var id string
		if err := json.Unmarshal(v, &id); err != nil {
			return nil, errors.New("want a version ID")
		}
		return func(ev traceEvent, _ traceEventInfo) bool {
			return ev.ScriptVersion != nil && ev.ScriptVersion.ID == id
		}, nil
	}
	return nil, errors.New("not a tail filter")
}

// sample is true with probability rate.
func sample(rate float64) bool {
	n, err := rand.Int(rand.Reader, big.NewInt(1<<30))
	if err != nil {
		return true
	}
	return float64(n.Int64()) < rate*(1<<30)
}

func lookupHeader(h map[string]string, key string) (string, bool) {
	for k, v := range h {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

func header(h map[string]string, key string) string {
	v, _ := lookupHeader(h, key)
	return v
}

// newRay is a Cf-Ray value: 16 hex digits and a location, as Cloudflare's
// (whose location is the answering data centre's code; here "EMU").
func newRay() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + "-EMU"
}

// LogFile is the path of a script's log file (it exists once the script
// has run in workerd).
func (s *Service) LogFile(account, script string) string {
	return filepath.Join(s.dataDir, LogDirName, account, script+".log")
}

// WorkerLogs says where the scripts' logs are: the directory, and each
// deployed script's file by "<account>/<script>".
type WorkerLogs struct {
	Dir   string            `json:"dir"`
	Files map[string]string `json:"files"`
}

// WorkerLogs lists the log files of the scripts that run (GET
// /__emulator/worker-logs).
func (s *Service) WorkerLogs() WorkerLogs {
	out := WorkerLogs{Dir: filepath.Join(s.dataDir, LogDirName), Files: map[string]string{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ws := range s.st.Workers {
		if len(ws.Modules) > 0 {
			out.Files[ws.AccountID+"/"+ws.Name] = s.LogFile(ws.AccountID, ws.Name)
		}
	}
	return out
}

// ensureLogFiles creates the log files of the workers in cfg, so each
// exists (and can be followed with tail -f) before its script first logs.
func (s *Service) ensureLogFiles(cfg workerd.Config) {
	s.tails.files.Lock()
	defer s.tails.files.Unlock()
	for _, w := range cfg.Workers {
		acct, script := w.TailProps["account"], w.TailProps["script"]
		if acct == "" || script == "" {
			continue
		}
		path := s.LogFile(acct, script)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			continue
		}
		if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
			_ = f.Close()
		}
	}
}

// appendWorkerLog writes one event to the script's log file.
func (s *Service) appendWorkerLog(acct, script string, ev traceEvent, info traceEventInfo) error {
	text := logEntry(ev, info)
	path := s.LogFile(acct, script)
	s.tails.files.Lock()
	defer s.tails.files.Unlock()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if st, err := os.Stat(path); err == nil && st.Size()+int64(len(text)) > logFileLimit {
		if err := os.Rename(path, path+".1"); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(text)
	return errors.Join(werr, f.Close())
}

// logEntry renders an event as `wrangler tail --format pretty` does, with
// a UTC timestamp first and the request's ray last:
//
//	2026-01-02T03:04:05.678Z GET http://app.workers.localhost:8787/x - Exception Thrown (cf-ray 0123456789abcdef-EMU)
//	  (log) hello {"n":1}
//	  TypeError: kaboom
//	      at Object.fetch (index.js:5:11)
func logEntry(ev traceEvent, info traceEventInfo) string {
	var b strings.Builder
	b.WriteString(time.UnixMilli(ev.EventTimestamp).UTC().Format("2006-01-02T15:04:05.000Z"))
	b.WriteString(" ")
	b.WriteString(eventSummary(ev, info))
	b.WriteString("\n")
	for _, l := range ev.Logs {
		fmt.Fprintf(&b, "  (%s) %s\n", l.Level, indentLines(logText(l.Message), "    "))
	}
	for _, e := range ev.Exceptions {
		fmt.Fprintf(&b, "  %s: %s\n", e.Name, indentLines(e.Message, "    "))
		if e.Stack != "" {
			fmt.Fprintf(&b, "    %s\n", indentLines(strings.TrimSpace(e.Stack), "    "))
		}
	}
	return b.String()
}

// eventSummary is an event's first line: what ran and how it ended.
func eventSummary(ev traceEvent, info traceEventInfo) string {
	outcome := outcomeText(ev.Outcome)
	who := ""
	if ev.Entrypoint != "" {
		who = ev.Entrypoint + " "
	}
	switch {
	case info.Request != nil:
		line := fmt.Sprintf("%s%s %s - %s", who, strings.ToUpper(info.Request.Method), redactQuery(info.Request.URL), outcome)
		if info.Response != nil && info.Response.Status != 0 {
			line += fmt.Sprintf(" (%d)", info.Response.Status)
		}
		if ray := header(info.Request.Headers, rayHeader); ray != "" {
			line += " (cf-ray " + ray + ")"
		}
		return line
	case info.Cron != "":
		return fmt.Sprintf("%q - %s", info.Cron, outcome)
	case info.Queue != "":
		plural := "s"
		if info.BatchSize == 1 {
			plural = ""
		}
		return fmt.Sprintf("Queue %s (%d message%s) - %s", info.Queue, info.BatchSize, plural, outcome)
	case info.RPCMethod != "":
		return fmt.Sprintf("%s%s - %s", who, info.RPCMethod, outcome)
	case len(info.ScheduledTime) > 0:
		return fmt.Sprintf("%sAlarm - %s", who, outcome)
	}
	return fmt.Sprintf("%sUnknown Event - %s", who, outcome)
}

// sensitiveParam names the query parameters whose values a log file
// does not keep: OAuth codes and states, tokens, keys, signatures.
var sensitiveParam = regexp.MustCompile(`(?i)code|token|secret|key|password|passwd|auth|sig|state|session|credential`)

// redactQuery is u with the values of its sensitive query parameters
// replaced by REDACTED, as workerd redacts authorization and cookie
// headers: the log files outlive the requests (the tail's sockets still
// carry the URL as the script saw it, as Cloudflare's do).
func redactQuery(u string) string {
	base, query, ok := strings.Cut(u, "?")
	if !ok {
		return u
	}
	pairs := strings.Split(query, "&")
	for i, p := range pairs {
		name, _, hasValue := strings.Cut(p, "=")
		if decoded, err := url.QueryUnescape(name); err == nil {
			name = decoded
		}
		if hasValue && sensitiveParam.MatchString(name) {
			pairs[i] = strings.SplitN(p, "=", 2)[0] + "=REDACTED"
		}
	}
	return base + "?" + strings.Join(pairs, "&")
}

// outcomeText is an outcome as wrangler prints it.
func outcomeText(o string) string {
	switch o {
	case "ok":
		return "Ok"
	case "canceled":
		return "Canceled"
	case "exceededCpu":
		return "Exceeded CPU Limit"
	case "exceededMemory":
		return "Exceeded Memory Limit"
	case "exception":
		return "Exception Thrown"
	}
	return "Unknown"
}

// logText is a console call's arguments as one line: strings as they are,
// anything else as JSON, separated by spaces (as console.log joins them).
func logText(msg []json.RawMessage) string {
	parts := make([]string, len(msg))
	for i, m := range msg {
		var s string
		if json.Unmarshal(m, &s) == nil {
			parts[i] = s
			continue
		}
		var buf bytes.Buffer
		if json.Compact(&buf, m) == nil {
			parts[i] = buf.String()
		} else {
			parts[i] = string(m)
		}
	}
	return strings.Join(parts, " ")
}

// indentLines indents every line after the first, so a multi-line message
// stays inside its entry.
func indentLines(s, indent string) string {
	return strings.ReplaceAll(s, "\n", "\n"+indent)
}

// exceptionLine is the emulator log's line for an invocation that threw.
func exceptionLine(ev traceEvent, info traceEventInfo, logFile string) string {
	var names []string
	for _, e := range ev.Exceptions {
		names = append(names, e.Name+": "+strings.SplitN(e.Message, "\n", 2)[0])
	}
	what := "threw"
	if len(names) > 0 {
		what = "threw " + strings.Join(names, "; ")
	}
	return fmt.Sprintf("worker %s: %s %s (log: %s)", ev.ScriptName, eventSummary(ev, info), what, logFile)
}
