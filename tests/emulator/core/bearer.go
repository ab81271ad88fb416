package core

import (
	"net/http"
	"strings"
)

// Bearer extracts the token from an Authorization header, reporting whether
// the header was present at all and whether it was a well-formed
// "Bearer <token>". Every family's credentials arrive this way.
func Bearer(r *http.Request) (token string, present, wellFormed bool) {
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
