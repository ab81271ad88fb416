package controlplane

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
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
