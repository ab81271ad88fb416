package emulator_test

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

const acct = emulator.DefaultAccountID

// TestMain clears CLOUDFLARE_* so cloudflare.NewClient cannot pick up a
// developer's real credentials or base URL. Unsetting (rather than
// t.Setenv(k, "")) matters: the SDK treats a present-but-empty variable as a
// value and would send empty auth headers.
func TestMain(m *testing.M) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CLOUDFLARE_") {
			_ = os.Unsetenv(k)
		}
	}
	os.Exit(m.Run())
}

func start(t *testing.T, opts emulator.Options) *emulator.Server {
	t.Helper()
	s, err := emulator.Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// newClient is the official client pointed at s, retries disabled by default
// because several checks expect 409s, which the SDK would otherwise retry
// with back-off.
func newClient(s *emulator.Server, opts ...option.RequestOption) *cloudflare.Client {
	base := []option.RequestOption{
		option.WithBaseURL(s.CloudflareBaseURL()),
		option.WithAPIToken(emulator.DefaultToken),
		option.WithMaxRetries(0),
	}
	return cloudflare.NewClient(append(base, opts...)...)
}

// requireAPIError asserts err is the SDK's API error with that status and
// first error code, and returns it.
func requireAPIError(t *testing.T, err error, status, code int) *cloudflare.Error {
	t.Helper()
	require.Error(t, err)
	var apiErr *cloudflare.Error
	require.True(t, errors.As(err, &apiErr), "want *cloudflare.Error, got %T: %v", err, err)
	require.Equal(t, status, apiErr.StatusCode, "status; body: %s", apiErr.JSON.RawJSON())
	require.NotEmpty(t, apiErr.Errors, "errors array")
	require.EqualValues(t, code, apiErr.Errors[0].Code, "code; body: %s", apiErr.JSON.RawJSON())
	return apiErr
}

// do sends a raw request, for what the SDK cannot express (missing or
// malformed auth, raw bodies, admin routes, worker URLs, whose *.localhost
// names it dials on loopback).
func do(t *testing.T, method, url, auth, body string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := loopback.Client(0).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// port is the port s listens on.
func port(t *testing.T, s *emulator.Server) string {
	t.Helper()
	u, err := url.Parse(s.URL())
	require.NoError(t, err)
	return u.Port()
}
