package core

import (
	"fmt"
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

// Credentials is a family's accepted keys, each with its owner (team,
// organization, account): given, every key and owner checked non-empty, or
// defKey -> defOwner when given is nil. what names them in the error ("E2B
// API keys and teams").
func Credentials(given map[string]string, defKey, defOwner, what string) (map[string]string, error) {
	if given == nil {
		return map[string]string{defKey: defOwner}, nil
	}
	out := make(map[string]string, len(given))
	for k, owner := range given {
		if k == "" || owner == "" {
			return nil, fmt.Errorf("emulator: %s must be non-empty", what)
		}
		out[k] = owner
	}
	return out, nil
}
