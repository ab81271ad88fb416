package emulator

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// authMode says which credential check a route needs.
type authMode int

const (
	// authAccount: the path has {account_id} and the token must own it.
	authAccount authMode = iota
	// authVerify: /user/tokens/verify, which answers an unknown token with
	// its own 401 instead of the generic 403.
	authVerify
	// authToken: a route outside any account (/user, /accounts,
	// /memberships): any accepted token.
	authToken
)

// unmatchedKey is the Counts key for requests no route matched.
const unmatchedKey = "UNMATCHED"

// api registers a Cloudflare route. Every route goes through here so that
// counting, fault injection and auth happen identically and in this order:
// a request is counted even when a fault or an auth error answers it, because
// tests assert on how many calls a client made, not on how many succeeded.
func (s *Server) api(pattern string, mode authMode, h http.HandlerFunc) {
	method, route, ok := strings.Cut(pattern, " ")
	if !ok || !isCloudflarePath(route) {
		panic("emulator: API pattern must be \"METHOD /client/v4/...\": " + pattern)
	}
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s.count(pattern, true)
		if s.applyFaults(w, r, method, route) {
			return
		}
		if !s.authorize(w, r, mode) {
			return
		}
		h(w, r)
	})
}

// bearer extracts the token from an Authorization header, reporting whether
// the header was present at all.
func bearer(r *http.Request) (token string, present, wellFormed bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false, false
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", true, false
	}
	tok = strings.TrimSpace(tok)
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", true, false
	}
	return tok, true, true
}

// authorize enforces the token rules. Only the token and the path's account
// are consulted; the SDK may also send empty X-Auth-* headers when callers
// blank the CLOUDFLARE_* variables, and those are ignored like the real API
// ignores them when a Bearer token is present.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, mode authMode) bool {
	tok, present, ok := bearer(r)
	if !present {
		writeError(w, newAPIError(http.StatusBadRequest, 9106, "Missing X-Auth-Key, X-Auth-Email or Authorization headers"))
		return false
	}
	if !ok {
		writeError(w, &apiError{status: http.StatusBadRequest, errs: []cfError{{
			Code: 6003, Message: "Invalid request headers",
			ErrorChain: []cfError{{Code: 6111, Message: "Invalid format for Authorization header"}},
		}}})
		return false
	}
	acct, known := s.tokens[tok]
	if !known {
		if mode == authVerify {
			writeError(w, newAPIError(http.StatusUnauthorized, 1000, "Invalid API Token"))
		} else {
			writeError(w, newAPIError(http.StatusForbidden, 10000, "Authentication error"))
		}
		return false
	}
	if mode == authAccount && r.PathValue("account_id") != acct {
		writeError(w, newAPIError(http.StatusForbidden, 9109, "Unauthorized to access requested resource"))
		return false
	}
	return true
}

// tokenID derives a stable, non-reversible ID for a token so that verify can
// answer with an id without ever echoing the secret.
func tokenID(tok string) string {
	sum := sha256.Sum256([]byte("openinspect-emulator-token:" + tok))
	return hex.EncodeToString(sum[:16])
}

// unmatched answers everything no route claimed, the way the real API does
// for unknown paths: 400 with 7003 and 7000 under /client/v4/ (a 404 there
// made wrangler, which reads 404 from the R2 object routes as "no such
// bucket", print "The specified bucket does not exist." for any route the
// emulator lacked), and a plain 404 envelope outside it.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request) {
	cf := isCloudflarePath(r.URL.Path)
	s.count(unmatchedKey, cf)
	status := http.StatusNotFound
	if cf {
		status = http.StatusBadRequest
	}
	writeJSON(w, status, envelope{
		Success: false,
		Errors: []cfError{
			{Code: 7003, Message: "Could not route to " + r.URL.Path + ", perhaps your object identifier is invalid?"},
			{Code: 7000, Message: "No route for that URI"},
		},
		Messages: []any{},
	})
}

func (s *Server) count(key string, cloudflare bool) {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	s.counts[key]++
	if key == unmatchedKey && cloudflare {
		s.unmatchedCF++
	}
}

// Counts returns how many requests each route received, keyed by the
// registered pattern ("POST /client/v4/accounts/{account_id}/d1/database"),
// plus "UNMATCHED" for requests no route matched. Admin requests are never
// counted.
func (s *Server) Counts() map[string]int {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	out := make(map[string]int, len(s.counts))
	maps.Copy(out, s.counts)
	return out
}

// CloudflareCalls is the number of requests made to /client/v4/, matched or
// not; "the provider made no API call" is then simply CloudflareCalls() == 0.
func (s *Server) CloudflareCalls() int {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	n := s.unmatchedCF
	for k, v := range s.counts {
		if _, route, ok := strings.Cut(k, " "); ok && isCloudflarePath(route) {
			n += v
		}
	}
	return n
}

// ResetCounts zeroes Counts and CloudflareCalls.
func (s *Server) ResetCounts() {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	s.counts = map[string]int{}
	s.unmatchedCF = 0
}

// sortedKeys is used wherever output order must be deterministic.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
