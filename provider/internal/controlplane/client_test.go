package controlplane

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A vector computed by hand from the documented construction.
func TestCanonicalAndSign(t *testing.T) {
	body := []byte(`{"secrets":{"A":"1"}}`)
	got := Canonical("slack-bot", 1700000000000, "abc123", "PUT", "/secrets", "b=2&a=1", body, "")
	bodySum := sha256.Sum256(body)
	want := "sig1\nslack-bot\n1700000000000\nabc123\nPUT\n/secrets\na=1&b=2\n" + hex.EncodeToString(bodySum[:]) + "\n"
	assert.Equal(t, want, got)

	mac := hmac.New(sha256.New, []byte("k"))
	mac.Write([]byte(Canonical("slack-bot", 1700000000000, "abc123", "PUT", "/secrets", "", body, "")))
	assert.Equal(t, "sig1.1700000000000.abc123."+hex.EncodeToString(mac.Sum(nil)),
		Sign([]byte("k"), "slack-bot", 1700000000000, "abc123", "PUT", "/secrets", "", body))
}

func TestCanonicalQueryDecodesAndSorts(t *testing.T) {
	assert.Equal(t, "", canonicalQuery(""))
	assert.Equal(t, "a=x y&b=2&b=3", canonicalQuery("b=3&a=x%20y&b=2"))
}

func TestNewRejectsBadInput(t *testing.T) {
	_, err := New("ftp://x", "slack-bot", "k")
	assert.Error(t, err)
	_, err = New("https://cp.example", "", "k")
	assert.Error(t, err)
}

// TestNewRequiresHTTPSBeyondLoopback: the signed requests carry secrets.
func TestNewRequiresHTTPSBeyondLoopback(t *testing.T) {
	for _, ok := range []string{"https://cp.example.workers.dev", "http://127.0.0.1:8787/__workers/cp", "http://localhost:1", "http://[::1]:2",
		"http://cp.workers.localhost:8787", "http://cp.acct.workers.localhost:8787"} {
		_, err := New(ok, "slack-bot", "k")
		assert.NoError(t, err, ok)
	}
	for _, bad := range []string{"http://cp.example.workers.dev", "http://10.0.0.1", "http://127.0.0.1.nip.io", "http://cp.workers.localhost.example.test"} {
		_, err := New(bad, "slack-bot", "k")
		if assert.Error(t, err, bad) {
			assert.Contains(t, err.Error(), "use https")
		}
	}
}

// TestRedirectsAreNotFollowed: a redirect would re-send the secrets and their
// signature to another host, which must never see a request.
func TestRedirectsAreNotFollowed(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	cp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer cp.Close()
	c, err := New(cp.URL, "slack-bot", "key")
	require.NoError(t, err)
	err = c.PutSecrets(t.Context(), map[string]string{"A": "secret-value-never-forwarded"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "redirect")
	assert.NotContains(t, err.Error(), "secret-value-never-forwarded")
	assert.Zero(t, elsewhere.Load(), "nothing reached the redirect's target")
}
