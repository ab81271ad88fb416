// Package cloudflare is what every emulated Cloudflare API shares: the
// accounts and the API tokens that may reach them, the check of a request's
// token against the account in its path, the registration of a v4 route
// (core.API with that check), the user, accounts and memberships routes
// wrangler reads, and the v4 API's time format.
//
// Each Cloudflare API is a package below this one (d1, kv, r2, queues,
// zones, workers, assets) that imports this package and core, never the
// root or a sibling: an API reaches another through a small interface its
// constructor is given by the composition root (tests/emulator).
package cloudflare

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"regexp"
	"sort"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// DefaultToken is the API token accepted when no tokens are configured. It
// is also the token the standalone binary documents for demos, so it must
// never be mistaken for a secret.
const DefaultToken = "emulator-token"

// DefaultAccountID is the account DefaultToken may access. It has the shape
// of a real account ID (32 hex digits) so client-side validation passes.
const DefaultAccountID = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"

// RealHosts are Cloudflare's hosts the outbound gateway sends here: the v4
// API's paths are the emulator's own.
var RealHosts = map[string]string{"api.cloudflare.com": ""}

// AuthorEmail is who the emulator says made versions and deployments, and
// the user GET /user describes.
const AuthorEmail = "emulator@openinspect.invalid"

// DNSLabel is one DNS label of [a-z0-9-], as workers.dev subdomains and
// queue names must be.
var DNSLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// epoch is the creation time the emulator reports for users and accounts.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Time formats timestamps the way the v4 API does (UTC, microseconds).
func Time(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// AuthMode says which credential check a route needs.
type AuthMode int

const (
	// AuthAccount: the path has {account_id} and the token must own it.
	AuthAccount AuthMode = iota
	// AuthVerify: /user/tokens/verify, which answers an unknown token with
	// its own 401 instead of the generic 403.
	AuthVerify
	// AuthToken: a route outside any account (/user, /accounts,
	// /memberships, zones): any accepted token.
	AuthToken
)

// Accounts maps each accepted API token to the one account it may access.
// It is fixed at construction and read without a lock.
type Accounts struct {
	core   *core.Core
	tokens map[string]string
}

// NewAccounts checks tokens (nil means DefaultToken -> DefaultAccountID).
func NewAccounts(c *core.Core, tokens map[string]string) (*Accounts, error) {
	toks, err := core.Credentials(tokens, DefaultToken, DefaultAccountID, "tokens and account IDs")
	if err != nil {
		return nil, err
	}
	a := &Accounts{core: c, tokens: toks}
	return a, nil
}

// IDs lists the accounts some token may access, sorted.
func (a *Accounts) IDs() []string {
	seen := map[string]bool{}
	for _, acct := range a.tokens {
		seen[acct] = true
	}
	return core.SortedKeys(seen)
}

// Of is the account the request's token owns ("" for none): what a route
// registered with AuthToken serves.
func (a *Accounts) Of(r *http.Request) string {
	tok, _, _ := core.Bearer(r)
	return a.tokens[tok]
}

// API registers a Cloudflare v4 route through core.API, which counts it,
// applies faults and then runs the token check of mode, in that order.
func (a *Accounts) API(pattern string, mode AuthMode, h http.HandlerFunc) {
	a.core.API(pattern, func(w http.ResponseWriter, r *http.Request) bool { return a.authorize(w, r, mode) }, h)
}

// authorize enforces the token rules. Only the token and the path's account
// are consulted; the SDK may also send empty X-Auth-* headers when callers
// blank the CLOUDFLARE_* variables, and those are ignored like the real API
// ignores them when a Bearer token is present.
func (a *Accounts) authorize(w http.ResponseWriter, r *http.Request, mode AuthMode) bool {
	tok, present, ok := core.Bearer(r)
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
	acct, known := a.tokens[tok]
	if !known {
		if mode == AuthVerify {
			core.WriteError(w, core.NewAPIError(http.StatusUnauthorized, 1000, "Invalid API Token"))
		} else {
			core.WriteError(w, core.NewAPIError(http.StatusForbidden, 10000, "Authentication error"))
		}
		return false
	}
	if mode == AuthAccount && r.PathValue("account_id") != acct {
		core.WriteError(w, core.NewAPIError(http.StatusForbidden, 9109, "Unauthorized to access requested resource"))
		return false
	}
	return true
}

// TokenID derives a stable, non-reversible ID for a token so that verify
// can answer with an id without ever echoing the secret.
func TokenID(tok string) string {
	sum := sha256.Sum256([]byte("openinspect-emulator-token:" + tok))
	return hex.EncodeToString(sum[:16])
}

// Register mounts the token, user, accounts and memberships routes.
func (a *Accounts) Register() {
	a.API("GET /client/v4/user/tokens/verify", AuthVerify, a.verifyToken)
	a.API("GET /client/v4/user", AuthToken, a.userGet)
	a.API("GET /client/v4/accounts", AuthToken, a.accountsList)
	a.API("GET /client/v4/memberships", AuthToken, a.membershipsList)
}

// verifyToken answers like the real endpoint, including its informational
// message; the id is derived from the token so it is stable but reveals
// nothing.
func (a *Accounts) verifyToken(w http.ResponseWriter, r *http.Request) {
	tok, _, _ := core.Bearer(r)
	core.WriteEnvelope(w, http.StatusOK,
		map[string]any{"id": TokenID(tok), "status": "active"}, nil,
		[]any{map[string]any{"code": 10000, "message": "This API Token is valid and active", "type": nil}})
}

// accountName is the name the emulator gives every account.
func accountName(id string) string { return "OpenInspect emulator (" + id[:8] + ")" }

// AccountName is accountName for the other APIs' answers (a zone's account
// and owner), so every route names an account alike.
func AccountName(id string) string { return accountName(id) }

// userGet is GET /user: one user per token. wrangler whoami reads email.
func (a *Accounts) userGet(w http.ResponseWriter, r *http.Request) {
	tok, _, _ := core.Bearer(r)
	core.WriteResult(w, map[string]any{
		"id": TokenID(tok), "email": AuthorEmail, "first_name": "Emulator", "last_name": "User",
		"username": TokenID(tok)[:12], "telephone": nil, "country": nil, "zipcode": nil,
		"two_factor_authentication_enabled": false, "two_factor_authentication_locked": false,
		"has_pro_zones": false, "has_business_zones": false, "has_enterprise_zones": false,
		"suspended": false, "betas": []string{}, "organizations": []any{},
		"created_on": Time(epoch), "modified_on": Time(epoch),
	})
}

// tokenAccounts is the accounts the caller's token may access (one: tokens
// are scoped to a single account here).
func (a *Accounts) tokenAccounts(r *http.Request) []string {
	if acct := a.Of(r); acct != "" {
		return []string{acct}
	}
	return nil
}

func accountJSON(id string) map[string]any {
	return map[string]any{
		"id": id, "name": accountName(id), "type": "standard", "created_on": Time(epoch),
		"settings": map[string]any{"enforce_twofactor": false, "api_access_enabled": nil, "abuse_contact_email": nil},
	}
}

// accountsList is GET /accounts, page-numbered like the other v4 lists.
func (a *Accounts) accountsList(w http.ResponseWriter, r *http.Request) {
	ids := a.tokenAccounts(r)
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
func (a *Accounts) membershipsList(w http.ResponseWriter, r *http.Request) {
	ids := a.tokenAccounts(r)
	out := make([]map[string]any, len(ids))
	for i, id := range ids {
		out[i] = map[string]any{
			"id": TokenID("membership:" + id), "status": "accepted", "account": accountJSON(id),
			"roles": []string{"Administrator"}, "permissions": map[string]any{},
		}
	}
	page, perPage := core.PageParams(r, 20, 50)
	items, info := core.Paginate(out, page, perPage)
	core.WriteEnvelope(w, http.StatusOK, items, info, nil)
}

// ScriptRoute is a zone route as the Workers script list shows it under
// its script (package zones stores routes, package workers lists scripts).
type ScriptRoute struct {
	ID      string `json:"id"`
	Pattern string `json:"pattern"`
	Script  string `json:"script,omitempty"`
}
