package emulator_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
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
	assert.Panics(t, func() { s.InjectFault(emulator.Fault{Kind: emulator.FaultHold, After: -1}) })
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

// waitHeld waits until the emulator reports n held requests.
func waitHeld(t *testing.T, s *emulator.Server, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return s.Holds().Held == n }, 10*time.Second, 5*time.Millisecond,
		"want %d held requests, have %+v", n, s.Holds())
}

func TestFaultHoldBlocksUntilRelease(t *testing.T) {
	s := start(t, emulator.Options{})
	s.InjectFault(emulator.Fault{Route: d1Create, Kind: emulator.FaultHold, Times: 1})
	c := newClient(s)
	done := make(chan error, 1)
	go func() {
		_, err := c.D1.Database.New(context.Background(), d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("held")})
		done <- err
	}()
	waitHeld(t, s, 1)
	select {
	case err := <-done:
		t.Fatalf("the held create returned before its release: %v", err)
	default:
	}
	assert.Empty(t, s.Inventory().D1, "a held request has not reached its handler")
	// Other routes, and the admin API, are unaffected while one request waits.
	_, err := c.KV.Namespaces.New(context.Background(), kv.NamespaceNewParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("free")})
	require.NoError(t, err)

	s.ReleaseHolds()
	require.NoError(t, <-done, "a released request is served normally")
	assert.Len(t, s.Inventory().D1, 1)
	assert.Equal(t, emulator.HoldStats{Released: 1}, s.Holds())

	// Times: 1 is used up: the next create is not held.
	createDB(t, c, "not-held")
	assert.Equal(t, emulator.HoldStats{Released: 1}, s.Holds())
}

// TestFaultHoldDropsAbandonedRequest: a held request whose client goes away
// (here: cancels, which closes its connection, as a killed process's kernel
// does) is never served, even once released: the emulator then holds what
// Cloudflare would hold had the call never arrived. The request has a body,
// which the hold reads first: an HTTP/1 server notices a closed connection
// only after the body.
func TestFaultHoldDropsAbandonedRequest(t *testing.T) {
	s := start(t, emulator.Options{})
	s.InjectFault(emulator.Fault{Route: d1Create, Kind: emulator.FaultHold})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := newClient(s).D1.Database.New(ctx, d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("abandoned")})
		done <- err
	}()
	waitHeld(t, s, 1)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Eventually(t, func() bool { return s.Holds() == emulator.HoldStats{Abandoned: 1} }, 10*time.Second, 5*time.Millisecond,
		"the held request noticed its client left: %+v", s.Holds())
	s.ReleaseHolds()
	assert.Empty(t, s.Inventory().D1, "an abandoned request is never served")
	assert.Equal(t, 1, s.Counts()[d1Create])
}

// TestFaultHoldAdminAPI drives a hold through the admin API as a crash test
// against the standalone binary does: "after" lets the first query through
// and holds the second; GET reports it held; POST .../release lets it go;
// DELETE releases what a still-active hold keeps holding.
func TestFaultHoldAdminAPI(t *testing.T) {
	s := start(t, emulator.Options{})
	admin := s.URL() + "/__emulator/"
	c := newClient(s)
	db := createDB(t, c, "ledger")
	resp, body := do(t, http.MethodPost, admin+"faults", "",
		`{"route":"POST /client/v4/accounts/{account_id}/d1/database/{database_id}/query","kind":"hold","after":1}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, body)

	query(t, c, db.UUID, "CREATE TABLE t (n INTEGER)")
	assert.Zero(t, s.Holds().Held, "after: 1 lets the first matching request through")
	done := make(chan error, 2)
	insert := func(n int) {
		_, err := c.D1.Database.Query(context.Background(), db.UUID, d1.DatabaseQueryParams{
			AccountID: cloudflare.F(acct), Sql: cloudflare.F(fmt.Sprintf("INSERT INTO t VALUES (%d)", n))})
		done <- err
	}
	go insert(1)
	waitHeld(t, s, 1)
	_, body = do(t, http.MethodGet, admin+"faults", "", "")
	assert.JSONEq(t, `{"faults":[{"method":"POST","route":"/client/v4/accounts/{account_id}/d1/database/{database_id}/query","kind":"hold","after":1}],`+
		`"holds":{"held":1,"released":0,"abandoned":0}}`, body)
	resp, _ = do(t, http.MethodPost, admin+"faults/release", "", "")
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.NoError(t, <-done)

	// The fault stays (times: 0): the next query is held again, until the
	// faults are cleared.
	go insert(2)
	waitHeld(t, s, 1)
	resp, _ = do(t, http.MethodDelete, admin+"faults", "", "")
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.NoError(t, <-done)
	assert.Equal(t, [][]map[string]any{{{"n": 1.0}, {"n": 2.0}}}, query(t, c, db.UUID, "SELECT n FROM t ORDER BY n"))
	assert.Equal(t, emulator.HoldStats{Released: 2}, s.Holds())
}

// TestFaultHoldResponse: the request is served (the database exists while
// the answer is held), the answer reaches a client that waited for the
// release, and a client that went away first never gets one, while the
// object it created stays: what a create leaves when its caller dies after
// Cloudflare acted and before the answer arrived.
func TestFaultHoldResponse(t *testing.T) {
	s := start(t, emulator.Options{})
	s.InjectFault(emulator.Fault{Route: d1Create, Kind: emulator.FaultHoldResponse, Times: 2})
	create := func(ctx context.Context, name string, done chan<- error) {
		_, err := newClient(s).D1.Database.New(ctx, d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F(name)})
		done <- err
	}

	served := make(chan error, 1)
	go create(context.Background(), "answered", served)
	waitHeld(t, s, 1)
	require.Eventually(t, func() bool { return len(s.Inventory().D1) == 1 }, 10*time.Second, 5*time.Millisecond,
		"the held request was served before its answer was held")
	select {
	case err := <-served:
		t.Fatalf("the answer arrived before its release: %v", err)
	default:
	}
	s.ReleaseHolds()
	require.NoError(t, <-served, "the released answer is the handler's")

	ctx, cancel := context.WithCancel(context.Background())
	abandoned := make(chan error, 1)
	go create(ctx, "unanswered", abandoned)
	waitHeld(t, s, 1)
	require.Eventually(t, func() bool { return len(s.Inventory().D1) == 2 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-abandoned, context.Canceled)
	require.Eventually(t, func() bool { return s.Holds() == emulator.HoldStats{Released: 1, Abandoned: 1} }, 10*time.Second,
		5*time.Millisecond, "the held answer noticed its client left: %+v", s.Holds())
	var names []string
	for _, db := range s.Inventory().D1 {
		names = append(names, db.Name)
	}
	assert.ElementsMatch(t, []string{"answered", "unanswered"}, names, "the unanswered create's database stays")
	assert.Panics(t, func() {
		s.InjectFault(emulator.Fault{Route: "PUT /__workers/{script_name}/secrets", Kind: emulator.FaultHoldResponse})
	},
		"hold_response is for Cloudflare v4 routes")
}

// TestFaultBodyContains: a fault with body_contains acts on the one request
// whose body names the object, among others on the same route.
func TestFaultBodyContains(t *testing.T) {
	s := start(t, emulator.Options{})
	resp, body := do(t, http.MethodPost, s.URL()+"/__emulator/faults", "",
		`{"route":"`+d1Create+`","kind":"server_error","status":503,"body_contains":"\"doomed\""}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, body)
	c := newClient(s, option.WithMaxRetries(0))
	createDB(t, c, "spared")
	_, err := c.D1.Database.New(context.Background(), d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("doomed")})
	requireAPIError(t, err, http.StatusServiceUnavailable, 10001)
	createDB(t, c, "doomed-not") // the quoted name does not match
	assert.Len(t, s.Inventory().D1, 2)
	assert.Panics(t, func() {
		s.InjectFault(emulator.Fault{Route: "PUT /__workers/{script_name}/secrets", Kind: emulator.FaultHold, BodyContains: "x"})
	})
}

// TestRateLimitAnswersAsCloudflare: past the enforced limit a call gets
// Cloudflare's 429, code 971 and Retry-After; the admin API sets and
// reports it, and {"requests": 0} turns it off.
func TestRateLimitAnswersAsCloudflare(t *testing.T) {
	s := start(t, emulator.Options{})
	admin := s.URL() + "/__emulator/ratelimit"
	resp, body := do(t, http.MethodPost, admin, "", `{"requests": 2, "window": "1h"}`)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
	c := newClient(s, option.WithMaxRetries(0))
	createDB(t, c, "one")
	createDB(t, c, "two")
	_, err := c.D1.Database.New(context.Background(), d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("three")})
	apiErr := requireAPIError(t, err, http.StatusTooManyRequests, 971)
	retry, convErr := strconv.Atoi(apiErr.Response.Header.Get("Retry-After"))
	require.NoError(t, convErr)
	assert.InDelta(t, 3600, retry, 5, "Retry-After: until the oldest call leaves the window")
	_, body = do(t, http.MethodGet, admin, "", "")
	assert.JSONEq(t, `{"requests": 2, "window": "1h0m0s", "refused": 1}`, body)
	resp, _ = do(t, http.MethodPost, admin, "", `{"requests": 0}`)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	createDB(t, c, "three")
	resp, body = do(t, http.MethodPost, admin, "", `{"requests": 5, "window": "-1s"}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
}
