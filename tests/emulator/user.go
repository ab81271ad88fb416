package emulator

import (
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
	"net/http"
	"sort"
	"time"
)

// epoch is the creation time the emulator reports for users and accounts.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func (s *Server) registerUser() {
	s.api("GET /client/v4/user/tokens/verify", authVerify, s.verifyToken)
	s.api("GET /client/v4/user", authToken, s.userGet)
	s.api("GET /client/v4/accounts", authToken, s.accountsList)
	s.api("GET /client/v4/memberships", authToken, s.membershipsList)
}

// verifyToken answers like the real endpoint, including its informational
// message; the id is derived from the token so it is stable but reveals
// nothing.
func (s *Server) verifyToken(w http.ResponseWriter, r *http.Request) {
	tok, _, _ := bearer(r)
	core.WriteEnvelope(w, http.StatusOK,
		map[string]any{"id": tokenID(tok), "status": "active"}, nil,
		[]any{map[string]any{"code": 10000, "message": "This API Token is valid and active", "type": nil}})
}

// accountName is the name the emulator gives every account.
func accountName(id string) string { return "OpenInspect emulator (" + id[:8] + ")" }

// userGet is GET /user: one user per token. wrangler whoami reads email.
func (s *Server) userGet(w http.ResponseWriter, r *http.Request) {
	tok, _, _ := bearer(r)
	core.WriteResult(w, map[string]any{
		"id": tokenID(tok), "email": authorEmail, "first_name": "Emulator", "last_name": "User",
		"username": tokenID(tok)[:12], "telephone": nil, "country": nil, "zipcode": nil,
		"two_factor_authentication_enabled": false, "two_factor_authentication_locked": false,
		"has_pro_zones": false, "has_business_zones": false, "has_enterprise_zones": false,
		"suspended": false, "betas": []string{}, "organizations": []any{},
		"created_on": apiTime(epoch), "modified_on": apiTime(epoch),
	})
}

// tokenAccounts is the accounts the caller's token may access (one: tokens
// are scoped to a single account here).
func (s *Server) tokenAccounts(r *http.Request) []string {
	tok, _, _ := bearer(r)
	if acct, ok := s.tokens[tok]; ok {
		return []string{acct}
	}
	return nil
}

func accountJSON(id string) map[string]any {
	return map[string]any{
		"id": id, "name": accountName(id), "type": "standard", "created_on": apiTime(epoch),
		"settings": map[string]any{"enforce_twofactor": false, "api_access_enabled": nil, "abuse_contact_email": nil},
	}
}

// accountsList is GET /accounts, page-numbered like the other v4 lists.
func (s *Server) accountsList(w http.ResponseWriter, r *http.Request) {
	ids := s.tokenAccounts(r)
	sort.Strings(ids)
	out := make([]map[string]any, len(ids))
	for i, id := range ids {
		out[i] = accountJSON(id)
	}
	page, perPage := core.PageParams(r, 20, 50)
	items, info := core.Paginate(out, page, perPage)
	core.WriteEnvelope(w, http.StatusOK, items, info, nil)
}

// membershipsList is GET /memberships: the token's account, accepted, with
// the Administrator role (wrangler lists these to pick an account when
// CLOUDFLARE_ACCOUNT_ID is unset).
func (s *Server) membershipsList(w http.ResponseWriter, r *http.Request) {
	ids := s.tokenAccounts(r)
	out := make([]map[string]any, len(ids))
	for i, id := range ids {
		out[i] = map[string]any{
			"id": tokenID("membership:" + id), "status": "accepted", "account": accountJSON(id),
			"roles": []string{"Administrator"}, "permissions": map[string]any{},
		}
	}
	page, perPage := core.PageParams(r, 20, 50)
	items, info := core.Paginate(out, page, perPage)
	core.WriteEnvelope(w, http.StatusOK, items, info, nil)
}
