package workers

// The backends of the scripts' bindings. workerd sends a binding's
// operations to a service; the configuration (runtime.go) points each
// binding at this emulator with X-Emulator-Binding naming the store, and
// each kind is answered in the protocol workerd's binding speaks:
//
//   - d1: POST /query or /execute?resultsFormat=..., a JSON {sql, params}
//     or an array of them, run in one transaction on the database's SQLite
//     file (the same one the D1 API's /query serves); one result per item;
//   - kv: GET/PUT/DELETE /<key> (?urlencoded=true: the key percent-encoded),
//     GET / to list (prefix, key_count_limit, cursor), POST /bulk/get;
//     metadata in CF-KV-Metadata, expiry in CF-Expiration;
//   - queue: POST /message (X-Msg-Fmt, X-Msg-Delay-Secs) and POST /batch,
//     into the queue's backlog (broker.go);
//   - r2: the bucket's objects (r2_binding.go);
//   - assets: the script's static assets at the request's path;
//   - tail: not a binding but the tail worker's posts of the scripts'
//     trace events (tails.go).

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/assets"
)

// bindingBackend answers one binding request for the store id of account.
type bindingBackend func(w http.ResponseWriter, r *http.Request, account, id string)

// bindingBackends is the table of binding kinds (the first segment of
// X-Emulator-Binding, as runtime.go writes it) to the API serving them.
func (s *Service) bindingBackends() map[string]bindingBackend {
	return map[string]bindingBackend{
		"d1":     s.d1.ServeBinding,
		"kv":     s.kv.ServeBinding,
		"queue":  s.queues.ServeBinding,
		"r2":     s.r2.ServeBinding,
		"assets": s.bindAssets,
		"tail":   s.serveTailEvents,
	}
}

// withBindings answers the requests workerd makes for bindings before the
// routes see them: their paths (/query, /<key>) are the protocol's own. A
// script's outbound fetch() goes to the outbound gateway, which hands it
// back to next rewritten for the family or address that answers it.
func (s *Service) withBindings(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if script := r.Header.Get(outboundHeader); script != "" && s.outbound != nil {
			r.Header.Del(outboundHeader)
			s.outbound.ServeOutbound(w, r, script, s.IsLocalHost, next)
			return
		}
		target := r.Header.Get(bindingHeader)
		if target == "" {
			next.ServeHTTP(w, r)
			return
		}
		kind, rest, _ := strings.Cut(target, "/")
		acct, id, _ := strings.Cut(rest, "/")
		serve, ok := s.backends[kind]
		if !ok {
			http.Error(w, "unknown binding kind "+kind, http.StatusBadRequest)
			return
		}
		serve(w, r, acct, id)
	})
}

func (s *Service) bindAssets(w http.ResponseWriter, r *http.Request, acct, script string) {
	p, err := url.PathUnescape(r.URL.EscapedPath())
	if err != nil {
		p = r.URL.Path
	}
	s.mu.Lock()
	var served *assets.Assets
	if ws := s.st.Workers[wkKey(acct, script)]; ws != nil {
		served = ws.Assets
	}
	s.mu.Unlock()
	if !s.assets.Serve(w, r, acct, served, false, p, true, "") {
		http.NotFound(w, r)
	}
}
