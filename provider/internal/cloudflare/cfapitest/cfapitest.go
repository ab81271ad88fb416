// Package cfapitest gives the provider's tests a Cloudflare client of their
// own on a test cloud (the emulator the tests/providertest harness starts),
// for arranging and inspecting what the provider sees. It lives here, not
// in tests/providertest, because cfapi is internal to the provider; it
// imports only cfapi and testing helpers, never tests/, and only tests
// import it.
package cfapitest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
)

// Cloud is where and as whom the client talks: an emulator's
// CloudflareBaseURL and one of its tokens with that token's account
// (tests/providertest's Harness is one).
type Cloud interface {
	Cloudflare() (baseURL, token, accountID string)
}

// Client is a Cloudflare client on the endpoint's account.
func Client(t testing.TB, at Cloud) *cfapi.Client {
	t.Helper()
	baseURL, token, account := at.Cloudflare()
	client, err := cfapi.New(cfapi.Options{APIToken: token, AccountID: account, BaseURL: baseURL})
	require.NoError(t, err)
	return client
}

// databases numbers the databases NewDatabase creates, so names never
// collide within one test binary.
var databases atomic.Int64

// NewDatabase creates a D1 database directly (not through the provider) and
// returns a client and its ID.
func NewDatabase(t testing.TB, at Cloud) (*cfapi.Client, string) {
	t.Helper()
	client := Client(t, at)
	db, err := client.CreateDatabase(t.Context(), fmt.Sprintf("oi-migrations-%d", databases.Add(1)), "")
	require.NoError(t, err)
	return client, db.ID
}

// NewMigratedDatabase is NewDatabase with a checkout's D1 migrations
// (terraform/d1/migrations/*.sql) applied directly, file by file, so a
// control plane built from that checkout finds its tables.
func NewMigratedDatabase(t testing.TB, at Cloud, checkout string) (*cfapi.Client, string) {
	t.Helper()
	client, id := NewDatabase(t, at)
	files, err := filepath.Glob(filepath.Join(checkout, "terraform", "d1", "migrations", "*.sql"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		sql, err := os.ReadFile(f)
		require.NoError(t, err)
		_, err = client.Query(t.Context(), id, string(sql))
		require.NoError(t, err, f)
	}
	return client, id
}
