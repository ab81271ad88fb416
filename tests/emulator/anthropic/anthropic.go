// Package anthropic is the local cloud's model stand-in: Anthropic's
// Messages API (POST /v1/messages, streamed as server-sent events or
// answered whole, with tool use) reached as https://api.anthropic.com
// through the outbound gateway, and the model catalogue OpenCode fetches at
// start (models.dev's api.json), served from data written here.
//
// It is no model: a deterministic agent script (script.go) reads the
// conversation and the tools the client offers (their names and input
// schemas), and answers the next step of one plan: read the repository's
// README, write a file quoting the prompt, commit it, open the pull request
// with the create-pull-request tool when it is offered, then finish with a
// summary. A request without tools (OpenCode's title generation) gets a
// short title.
//
// The API key is checked as Anthropic checks it: x-api-key (or a bearer
// token) must equal a key the installation seeded, which the root learns
// from the Modal secret llm-api-keys (Options.APIKeys); anything else is
// Anthropic's 401 authentication_error.
//
// It imports core and the standard library only.
package anthropic

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// Prefix is where api.anthropic.com's paths are served on the emulator;
// CataloguePrefix where models.dev's are.
const (
	Prefix          = "/anthropic"
	CataloguePrefix = "/models-dev"
)

// RealHosts are the hosts the outbound gateway sends here: the Messages
// API, and the model catalogue under both names OpenCode 1.18.18 knows it
// by (models.dev, and models.opencode.ai which the notes observed).
var RealHosts = map[string]string{"api.anthropic.com": Prefix, "models.dev": CataloguePrefix, "models.opencode.ai": CataloguePrefix}

// Options configures the stand-in.
type Options struct {
	// APIKeys are the keys a request may carry; nil or empty refuses every
	// request, as Anthropic refuses a key it never issued.
	APIKeys func() []string
	Logf    func(format string, args ...any)
	// Keep is how many exchanges Exchanges keeps (default 200).
	Keep int
	// PassThrough, when its URL is set, sends model calls on to a real
	// Messages API with the person's own key instead of the script
	// (opt-in, for a machine that reaches the API; passthrough.go).
	PassThrough PassThrough
}

// Exchange is one answered request, for tests and the inventory: no key,
// no conversation text.
type Exchange struct {
	At         time.Time `json:"at"`
	Model      string    `json:"model"`
	Stream     bool      `json:"stream"`
	Tools      []string  `json:"tools,omitempty"`
	Status     int       `json:"status"`
	Kind       string    `json:"kind,omitempty"` // "title", a tool's name, or "summary"
	StopReason string    `json:"stop_reason,omitempty"`
	Error      string    `json:"error,omitempty"` // the error type, when refused
}

// Service is the stand-in. Safe for concurrent use.
type Service struct {
	core *core.Core
	opts Options

	mu        sync.Mutex
	exchanges []Exchange
}

// Secrets is where the installation's seeded key is read: the Modal
// family's SecretValues.
type Secrets interface {
	SecretValues(workspace, environment, name string) (map[string]string, bool)
}

// New makes the stand-in; its routes go on c's mux. Unless opts names its
// keys, the key accepted is the one the installation seeded: the
// ANTHROPIC_API_KEY of the Modal secret llm-api-keys in the default
// workspace and environment (where the provider writes it), read from
// seeded at each request.
func New(opts Options, seeded Secrets, c *core.Core) *Service {
	if opts.Keep <= 0 {
		opts.Keep = 200
	}
	if opts.APIKeys == nil && seeded != nil {
		opts.APIKeys = func() []string {
			if v, ok := seeded.SecretValues("", "", "llm-api-keys"); ok && v["ANTHROPIC_API_KEY"] != "" {
				return []string{v["ANTHROPIC_API_KEY"]}
			}
			return nil
		}
	}
	return &Service{core: c, opts: opts}
}

// Register mounts POST /v1/messages under Prefix, GET /api.json under
// CataloguePrefix and GET /__emulator/anthropic (the exchanges).
func (s *Service) Register() {
	s.route("POST "+Prefix+"/v1/messages", s.messages)
	s.route("GET "+CataloguePrefix+"/api.json", s.catalogue)
	s.core.Mux().HandleFunc("GET /__emulator/anthropic", func(w http.ResponseWriter, _ *http.Request) {
		core.WriteJSON(w, http.StatusOK, map[string]any{"exchanges": s.Exchanges()})
	})
}

func (s *Service) route(pattern string, h http.HandlerFunc) {
	method, path, _ := strings.Cut(pattern, " ")
	s.core.Mux().HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(pattern, false)
		delay, f := s.core.TakeFaults(method, path)
		if s.core.ServeFault(w, r, delay, f, faultAnswers) {
			return
		}
		w.Header().Set("request-id", "req_"+randomID(24))
		h(w, r)
	})
}

// faultAnswers are Anthropic's forms for an injected fault: 429
// rate_limit_error, and 529 overloaded_error (or the fault's 5xx as
// api_error).
var faultAnswers = core.FaultAnswers{
	RateLimited: func(w http.ResponseWriter, _ *core.Fault) {
		writeError(w, http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
	},
	ServerError: func(w http.ResponseWriter, f *core.Fault) {
		if f.Status == 529 {
			writeError(w, f.Status, "overloaded_error", "Overloaded")
			return
		}
		writeError(w, f.Status, "api_error", "Internal server error")
	},
}

// Exchanges are the answered requests, oldest first.
func (s *Service) Exchanges() []Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Exchange{}, s.exchanges...)
}

func (s *Service) record(e Exchange) {
	s.mu.Lock()
	s.exchanges = append(s.exchanges, e)
	if len(s.exchanges) > s.opts.Keep {
		s.exchanges = s.exchanges[len(s.exchanges)-s.opts.Keep:]
	}
	s.mu.Unlock()
	if s.opts.Logf != nil {
		if e.Error != "" {
			s.opts.Logf("anthropic: %s refused: %d %s", e.Model, e.Status, e.Error)
		} else {
			s.opts.Logf("anthropic: %s answered %s (stop_reason %s)", e.Model, e.Kind, e.StopReason)
		}
	}
}

// writeError answers Anthropic's error shape.
func writeError(w http.ResponseWriter, status int, typ, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": message}})
}

// presentedKey is the request's key: x-api-key, else a bearer token (what
// clients send for ANTHROPIC_AUTH_TOKEN).
func presentedKey(r *http.Request) string {
	if k := r.Header.Get("x-api-key"); k != "" {
		return k
	}
	if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "bearer") {
		return strings.TrimSpace(tok)
	}
	return ""
}

// keyAccepted compares k with every seeded key in constant time.
func (s *Service) keyAccepted(k string) bool {
	if k == "" || s.opts.APIKeys == nil {
		return false
	}
	ok := false
	for _, want := range s.opts.APIKeys() {
		if want != "" && subtle.ConstantTimeCompare([]byte(k), []byte(want)) == 1 {
			ok = true
		}
	}
	return ok
}

// request is the part of a Messages request the stand-in reads.
type request struct {
	Model     string          `json:"model"`
	MaxTokens *int            `json:"max_tokens"`
	Messages  []message       `json:"messages"`
	System    json.RawMessage `json:"system"`
	Tools     []tool          `json:"tools"`
	Stream    bool            `json:"stream"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or blocks
}

type tool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// block is a content block of a message, in or out.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // a tool_result's: a string or blocks
	IsError   bool            `json:"is_error,omitempty"`
}

// blocks reads a message's content, a string being one text block.
func (m message) blocks() []block {
	var text string
	if json.Unmarshal(m.Content, &text) == nil {
		return []block{{Type: "text", Text: text}}
	}
	var bs []block
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

// messages is POST /v1/messages.
func (s *Service) messages(w http.ResponseWriter, r *http.Request) {
	ex := Exchange{At: time.Now().UTC()}
	refuse := func(status int, typ, msg string) {
		ex.Status, ex.Error = status, typ
		s.record(ex)
		writeError(w, status, typ, msg)
	}
	key := presentedKey(r)
	switch {
	case key == "":
		refuse(http.StatusUnauthorized, "authentication_error", "x-api-key header is required")
		return
	case !s.keyAccepted(key):
		refuse(http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return
	case r.Header.Get("anthropic-version") == "":
		refuse(http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		refuse(http.StatusBadRequest, "invalid_request_error", "could not read the request body")
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		refuse(http.StatusBadRequest, "invalid_request_error", "The request body is not valid JSON: "+err.Error())
		return
	}
	ex.Model, ex.Stream = req.Model, req.Stream
	for _, t := range req.Tools {
		ex.Tools = append(ex.Tools, t.Name)
	}
	switch {
	case req.Model == "":
		refuse(http.StatusBadRequest, "invalid_request_error", "model: Field required")
		return
	case req.MaxTokens == nil:
		refuse(http.StatusBadRequest, "invalid_request_error", "max_tokens: Field required")
		return
	case len(req.Messages) == 0:
		refuse(http.StatusBadRequest, "invalid_request_error", "messages: at least one message is required")
		return
	case req.Messages[0].Role != "user":
		refuse(http.StatusBadRequest, "invalid_request_error", "messages: first message must use the \"user\" role")
		return
	}
	if s.opts.PassThrough.URL != "" {
		ex.Kind = "passthrough"
		s.passThrough(w, r, body, ex)
		return
	}
	turn := nextTurn(req)
	ex.Kind, ex.StopReason, ex.Status = turn.kind, turn.stopReason, http.StatusOK
	msg := map[string]any{"id": "msg_" + randomID(24), "type": "message", "role": "assistant", "model": req.Model,
		"stop_sequence": nil, "usage": map[string]int{"input_tokens": len(body)/4 + 1, "output_tokens": 0}}
	if !req.Stream {
		content := make([]map[string]any, 0, len(turn.blocks))
		for _, b := range turn.blocks {
			content = append(content, b.final())
		}
		msg["content"], msg["stop_reason"] = content, turn.stopReason
		msg["usage"] = map[string]int{"input_tokens": len(body)/4 + 1, "output_tokens": turn.outputTokens()}
		s.record(ex)
		core.WriteJSON(w, http.StatusOK, msg)
		return
	}
	s.record(ex)
	streamTurn(w, msg, turn)
}

// streamTurn writes turn as Anthropic's event stream: message_start, ping,
// per block content_block_start, its deltas (text_delta or
// input_json_delta, in small pieces as the API sends them) and
// content_block_stop, then message_delta with the stop reason and
// message_stop.
func streamTurn(w http.ResponseWriter, msg map[string]any, turn turn) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) {
		data["type"] = event
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	msg["content"], msg["stop_reason"] = []any{}, nil
	send("message_start", map[string]any{"message": msg})
	send("ping", map[string]any{})
	for i, b := range turn.blocks {
		send("content_block_start", map[string]any{"index": i, "content_block": b.start()})
		for _, piece := range pieces(b.payload(), 24) {
			delta := map[string]any{"type": "text_delta", "text": piece}
			if b.kind == "tool_use" {
				delta = map[string]any{"type": "input_json_delta", "partial_json": piece}
			}
			send("content_block_delta", map[string]any{"index": i, "delta": delta})
		}
		send("content_block_stop", map[string]any{"index": i})
	}
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": turn.stopReason, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": turn.outputTokens()}})
	send("message_stop", map[string]any{})
}

// pieces splits s into runs of at most n runes (at least one piece).
func pieces(s string, n int) []string {
	rs := []rune(s)
	if len(rs) == 0 {
		return []string{""}
	}
	var out []string
	for len(rs) > 0 {
		k := min(n, len(rs))
		out = append(out, string(rs[:k]))
		rs = rs[k:]
	}
	return out
}

// randomID is n characters of the alphabet Anthropic's IDs use.
func randomID(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
