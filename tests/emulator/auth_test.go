package emulator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/d1"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

func TestAuthErrors(t *testing.T) {
	const other = "ffffffffffffffffffffffffffffffff"
	s := start(t, emulator.Options{Tokens: map[string]string{"tok-a": acct, "tok-b": other}})
	ctx := context.Background()
	listURL := s.CloudflareBaseURL() + "accounts/" + acct + "/d1/database"

	t.Run("unknown token", func(t *testing.T) {
		c := newClient(s, option.WithAPIToken("nope"))
		_, err := c.D1.Database.List(ctx, d1.DatabaseListParams{AccountID: cloudflare.F(acct)})
		apiErr := requireAPIError(t, err, http.StatusForbidden, 10000)
		assert.Equal(t, "Authentication error", apiErr.Errors[0].Message)
		assert.NotContains(t, apiErr.JSON.RawJSON(), "nope", "the token is never echoed")
	})
	t.Run("default token is not accepted when Tokens is set", func(t *testing.T) {
		_, err := newClient(s).D1.Database.List(ctx, d1.DatabaseListParams{AccountID: cloudflare.F(acct)})
		requireAPIError(t, err, http.StatusForbidden, 10000)
	})
	t.Run("other account", func(t *testing.T) {
		c := newClient(s, option.WithAPIToken("tok-b"))
		_, err := c.D1.Database.New(ctx, d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("x")})
		apiErr := requireAPIError(t, err, http.StatusForbidden, 9109)
		assert.Equal(t, "Unauthorized to access requested resource", apiErr.Errors[0].Message)
		assert.True(t, s.Inventory().Empty(), "a rejected request changes nothing")
		_, err = c.D1.Database.New(ctx, d1.DatabaseNewParams{AccountID: cloudflare.F(other), Name: cloudflare.F("x")})
		require.NoError(t, err, "its own account works")
	})
	t.Run("missing header", func(t *testing.T) {
		resp, body := do(t, http.MethodGet, listURL, "", "")
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		assert.JSONEq(t, `{"success":false,"errors":[{"code":9106,"message":"Missing X-Auth-Key, X-Auth-Email or Authorization headers"}],"messages":[],"result":null}`, body)
	})
	t.Run("malformed header", func(t *testing.T) {
		for _, h := range []string{"tok-a", "Basic dG9rLWE=", "Bearer", "Bearer a b"} {
			resp, body := do(t, http.MethodGet, listURL, h, "")
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, h)
			assert.JSONEq(t, `{"success":false,"errors":[{"code":6003,"message":"Invalid request headers",
				"error_chain":[{"code":6111,"message":"Invalid format for Authorization header"}]}],"messages":[],"result":null}`, body, h)
		}
	})
	t.Run("auth failures are counted", func(t *testing.T) {
		s.ResetCounts()
		do(t, http.MethodGet, listURL, "", "")
		assert.Equal(t, 1, s.Counts()["GET /client/v4/accounts/{account_id}/d1/database"])
		assert.Equal(t, 1, s.CloudflareCalls())
	})
}

func TestTokenVerify(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	res, err := c.User.Tokens.Verify(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "active", string(res.Status))
	assert.Regexp(t, `^[0-9a-f]{32}$`, res.ID)
	assert.NotContains(t, res.ID, emulator.DefaultToken)

	_, err = newClient(s, option.WithAPIToken("wrong")).User.Tokens.Verify(context.Background())
	requireAPIError(t, err, http.StatusUnauthorized, 1000)
}

func TestUnmatchedRoutes(t *testing.T) {
	s := start(t, emulator.Options{})
	resp, body := do(t, http.MethodGet, s.CloudflareBaseURL()+"zones/abc/dns_records", "Bearer "+emulator.DefaultToken, "")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "what Cloudflare answers; a 404 reads as a missing bucket to wrangler")
	var env struct {
		Success bool `json:"success"`
		Errors  []struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &env))
	assert.False(t, env.Success)
	require.NotEmpty(t, env.Errors)
	assert.Equal(t, 7003, env.Errors[0].Code)
	assert.Equal(t, "Could not route to /client/v4/zones/abc/dns_records, perhaps your object identifier is invalid?", env.Errors[0].Message)

	// A known path with a method it does not serve is unmatched too.
	resp, _ = do(t, http.MethodPatch, s.CloudflareBaseURL()+"accounts/"+acct+"/r2/buckets", "Bearer "+emulator.DefaultToken, "")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, map[string]int{"UNMATCHED": 2}, s.Counts())
	assert.Equal(t, 2, s.CloudflareCalls())

	// Outside /client/v4/ is unmatched but is not a Cloudflare call.
	do(t, http.MethodGet, s.URL()+"/favicon.ico", "", "")
	assert.Equal(t, 3, s.Counts()["UNMATCHED"])
	assert.Equal(t, 2, s.CloudflareCalls())
}

func TestCountsAreKeyedByPattern(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	a := createDB(t, c, "a")
	b := createDB(t, c, "b")
	query(t, c, a.UUID, "SELECT 1")
	query(t, c, b.UUID, "SELECT 1")
	query(t, c, b.UUID, "SELECT 1")
	assert.Equal(t, map[string]int{
		"POST /client/v4/accounts/{account_id}/d1/database":                     2,
		"POST /client/v4/accounts/{account_id}/d1/database/{database_id}/query": 3,
	}, s.Counts())
	assert.Equal(t, 5, s.CloudflareCalls())
	for k := range s.Counts() {
		assert.False(t, strings.Contains(k, a.UUID), "keys are patterns, not paths: %s", k)
	}
	s.ResetCounts()
	assert.Empty(t, s.Counts())
	assert.Zero(t, s.CloudflareCalls())
}
