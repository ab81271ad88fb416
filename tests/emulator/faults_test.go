package emulator_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/d1"
	"github.com/cloudflare/cloudflare-go/v4/kv"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

const d1Create = "POST /client/v4/accounts/{account_id}/d1/database"

func TestFaultRateLimitIsRetried(t *testing.T) {
	s := start(t, emulator.Options{})
	s.InjectFault(emulator.Fault{Method: http.MethodPost, Route: "/client/v4/accounts/{account_id}/d1/database",
		Kind: emulator.FaultRateLimit, RetryAfter: time.Second, Times: 2})
	c := newClient(s, option.WithMaxRetries(2))
	begin := time.Now()
	db, err := c.D1.Database.New(context.Background(), d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("retried")})
	require.NoError(t, err)
	assert.Equal(t, "retried", db.Name)
	assert.Equal(t, 3, s.Counts()[d1Create], "two 429s, then success")
	assert.GreaterOrEqual(t, time.Since(begin), 2*time.Second, "the SDK honoured Retry-After: 1")
	assert.Len(t, s.Inventory().D1, 1, "rate-limited attempts created nothing")

	// Exhausted faults are gone.
	_, err = c.D1.Database.New(context.Background(), d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("again")})
	require.NoError(t, err)
	assert.Equal(t, 4, s.Counts()[d1Create])
}

func TestFaultRateLimitResponse(t *testing.T) {
	s := start(t, emulator.Options{})
	s.InjectFault(emulator.Fault{Kind: emulator.FaultRateLimit, RetryAfter: 1500 * time.Millisecond, Times: 1})
	resp, body := do(t, http.MethodGet, s.CloudflareBaseURL()+"accounts/"+acct+"/d1/database", "Bearer "+emulator.DefaultToken, "")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "2", resp.Header.Get("Retry-After"), "rounded up to whole seconds")
	assert.Equal(t, "1500", resp.Header.Get("Retry-After-Ms"))
	assert.JSONEq(t, `{"success":false,"errors":[{"code":971,"message":"Please wait and consider throttling your request speed"}],"messages":[],"result":null}`, body)
}

func TestFaultDropConnection(t *testing.T) {
	s := start(t, emulator.Options{})
	s.InjectFault(emulator.Fault{Route: "GET /client/v4/accounts/{account_id}/d1/database", Kind: emulator.FaultDropConnection})
	c := newClient(s, option.WithMaxRetries(1))
	_, err := c.D1.Database.List(context.Background(), d1.DatabaseListParams{AccountID: cloudflare.F(acct)})
	require.Error(t, err)
	var apiErr *cloudflare.Error
	assert.False(t, errors.As(err, &apiErr), "a dropped connection is a transport error, not an API error: %v", err)
	assert.GreaterOrEqual(t, s.Counts()["GET /client/v4/accounts/{account_id}/d1/database"], 2, "the SDK retried")

	// Other routes are unaffected; after ClearFaults the route works again.
	_, err = c.KV.Namespaces.New(context.Background(), kv.NamespaceNewParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("fine")})
	require.NoError(t, err)
	s.ClearFaults()
	_, err = c.D1.Database.List(context.Background(), d1.DatabaseListParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
}

func TestFaultServerError(t *testing.T) {
	s := start(t, emulator.Options{})
	s.InjectFault(emulator.Fault{Kind: emulator.FaultServerError, Status: http.StatusServiceUnavailable})
	_, err := newClient(s).D1.Database.List(context.Background(), d1.DatabaseListParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusServiceUnavailable, 10001)

	// A fault that already answered does not also run the handler.
	_, err = newClient(s).D1.Database.New(context.Background(), d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("x")})
	requireAPIError(t, err, http.StatusServiceUnavailable, 10001)
	assert.True(t, s.Inventory().Empty())
}

func TestFaultLatency(t *testing.T) {
	s := start(t, emulator.Options{})
	s.InjectFault(emulator.Fault{Kind: emulator.FaultLatency, Latency: 300 * time.Millisecond, Times: 1})
	c := newClient(s)
	begin := time.Now()
	_, err := c.D1.Database.List(context.Background(), d1.DatabaseListParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(begin), 300*time.Millisecond)

	begin = time.Now()
	_, err = c.D1.Database.List(context.Background(), d1.DatabaseListParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Less(t, time.Since(begin), 300*time.Millisecond, "Times: 1 affects one request only")
}

func TestInjectFaultRejectsNonsense(t *testing.T) {
	s := start(t, emulator.Options{})
	assert.Panics(t, func() { s.InjectFault(emulator.Fault{Kind: "explode"}) })
	assert.Panics(t, func() { s.InjectFault(emulator.Fault{Kind: emulator.FaultServerError, Status: 404}) })
	assert.Panics(t, func() { s.InjectFault(emulator.Fault{Kind: emulator.FaultLatency}) })
}

func TestRequestLogNeverShowsSecrets(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	s := start(t, emulator.Options{Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}})
	c := newClient(s)
	db := createDB(t, c, "logged")
	query(t, c, db.UUID, "SELECT 'secret-sql-literal'")
	// A POST, because net/http itself silently resends an idempotent GET
	// whose reused connection closed without a response.
	s.InjectFault(emulator.Fault{Kind: emulator.FaultDropConnection, Times: 1})
	_, err := c.D1.Database.Query(context.Background(), db.UUID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct), Sql: cloudflare.F("SELECT 1")})
	require.Error(t, err, "dropped through the logging wrapper too")

	// The dropped request is logged when its handler returns, which can be
	// just after the client already saw the connection close.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(lines) == 3
	}, 5*time.Second, 5*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	log := strings.Join(lines, "\n")
	assert.Contains(t, lines[0], "POST /client/v4/accounts/"+acct+"/d1/database -> 200")
	assert.Contains(t, lines[2], "-> dropped")
	assert.NotContains(t, log, emulator.DefaultToken)
	assert.NotContains(t, log, "secret-sql-literal")
}
