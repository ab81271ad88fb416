package emulator

import (
	"crypto/sha256"
	"encoding/hex"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
	"net/http"
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

// api registers a Cloudflare route through core.API, which counts it, applies
// faults and then runs the token check of mode, in that order.
func (s *Server) api(pattern string, mode authMode, h http.HandlerFunc) {
	s.core.API(pattern, func(w http.ResponseWriter, r *http.Request) bool { return s.authorize(w, r, mode) }, h)
}

// bearer is core.Bearer: the token of an Authorization header, whether the
// header was present and whether it was well formed.
func bearer(r *http.Request) (token string, present, wellFormed bool) { return core.Bearer(r) }

// authorize enforces the token rules. Only the token and the path's account
// are consulted; the SDK may also send empty X-Auth-* headers when callers
// blank the CLOUDFLARE_* variables, and those are ignored like the real API
// ignores them when a Bearer token is present.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, mode authMode) bool {
	tok, present, ok := bearer(r)
	if !present {
		core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 9106, "Missing X-Auth-Key, X-Auth-Email or Authorization headers"))
		return false
	}
	if !ok {
		core.WriteError(w, &core.APIError{Status: http.StatusBadRequest, Errs: []core.CFError{{
			Code: 6003, Message: "Invalid request headers",
			ErrorChain: []core.CFError{{Code: 6111, Message: "Invalid format for Authorization header"}},
		}}})
		return false
	}
	acct, known := s.tokens[tok]
	if !known {
		if mode == authVerify {
			core.WriteError(w, core.NewAPIError(http.StatusUnauthorized, 1000, "Invalid API Token"))
		} else {
			core.WriteError(w, core.NewAPIError(http.StatusForbidden, 10000, "Authentication error"))
		}
		return false
	}
	if mode == authAccount && r.PathValue("account_id") != acct {
		core.WriteError(w, core.NewAPIError(http.StatusForbidden, 9109, "Unauthorized to access requested resource"))
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
