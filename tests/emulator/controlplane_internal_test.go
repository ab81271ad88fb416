package emulator

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sig1Vectors are input/output pairs of upstream's published sig1 golden
// vectors (packages/shared/test-fixtures/service-auth-vectors.json at
// ecc3d7b8): the request, and the pathname, canonical query and signature
// upstream's signer produces for it. They pin the verifier to upstream's
// exact canonicalization, independently of the HTTP tests' own signer.
var sig1Vectors = []struct {
	name, service, secret          string
	ts                             int64
	nonce, method, rawPath, rawQry string
	body, actor                    string
	pathname, query, signature     string
}{
	{"slack-bot POST with actor", "slack-bot", "slack-secret-0002", 1753142400001, "00ff00ff00ff00ff", "POST", "/sessions", "",
		`{"prompt":"fix the bug","repoOwner":"acme","repoName":"app"}`, "slack:U0123456",
		"/sessions", "", "8eed0bf0933ab3b21c1a6a19b5f7cb7f377b6d01b128973b19fa8a768d4d2c23"},
	{"query params sorted", "linear-bot", "linear-secret-0004", 1753142400003, "1234abcd5678ef90", "PUT", "/integration-config", "workspace=w1&team=t2",
		`{"enabled":true}`, "linear:usr_42",
		"/integration-config", "team=t2&workspace=w1", "3e9ddc2b5c9af4b503e44ea4f177a7343a62ea8fcc023888e9bef29bc7fcdbdc"},
	{"duplicate keys sort by value; space and plus", "web", "web-secret-0001", 1753142400006, "0000000000000002", "GET", "/search",
		"tag=zeta&tag=alpha&q=hello%20world&note=a+b", "", "",
		"/search", "note=a%20b&q=hello%20world&tag=alpha&tag=zeta", "0fdd2e98b94d65b314d5c1539dddcbe326d718415af0908be1b4bb7e634f2ac6"},
	{"empty value and bare key", "web", "web-secret-0001", 1753142400007, "0000000000000003", "GET", "/sessions", "empty=&bare", "", "",
		"/sessions", "bare=&empty=", "00cf563c4250f0e85c6521faadc02e8e16cc285179f762ceb166b49683b47ce2"},
	{"raw unicode path is percent-encoded", "web", "web-secret-0001", 1753142400009, "0000000000000005", "GET", "/repos/ünïcode/sessions", "", "", "",
		"/repos/%C3%BCn%C3%AFcode/sessions", "", "aa9134635475e2801e447fa261390e0903be7215d9f2ab9e9d6a885358219692"},
	{"pre-encoded path passes through", "web", "web-secret-0001", 1753142400009, "0000000000000005", "GET", "/repos/%C3%BCn%C3%AFcode/sessions", "", "", "",
		"/repos/%C3%BCn%C3%AFcode/sessions", "", "aa9134635475e2801e447fa261390e0903be7215d9f2ab9e9d6a885358219692"},
	{"lower-case method", "slack-bot", "slack-secret-0002", 1753142400010, "0000000000000006", "post", "/sessions/sess-2/prompt", "",
		`{"prompt":"hi"}`, "slack:U0999999",
		"/sessions/sess-2/prompt", "", "8bfa989aeacd18ed8cd2d54cce2b18cf907a97895edfa1b39e57d474cf9feb75"},
	{"unicode query values sort bytewise", "web", "web-secret-0001", 1753142400011, "0000000000000007", "GET", "/sessions",
		"name=%C3%A9clair&name=zebra&x=%E2%9C%93", "", "",
		"/sessions", "name=zebra&name=%C3%A9clair&x=%E2%9C%93", "06143b5e9a9605973b270317443ead8f675a9e70cd36439c4882d02c8091570b"},
}

func TestSig1GoldenVectors(t *testing.T) {
	for _, v := range sig1Vectors {
		t.Run(v.name, func(t *testing.T) {
			if got := cpPathname(v.rawPath); got != v.pathname {
				t.Fatalf("pathname %q, want %q", got, v.pathname)
			}
			if got := cpCanonicalQuery(v.rawQry); got != v.query {
				t.Fatalf("canonical query %q, want %q", got, v.query)
			}
			sum := sha256.Sum256([]byte(v.body))
			mac := hmac.New(sha256.New, []byte(v.secret))
			mac.Write([]byte(sig1Canonical(v.service, v.ts, v.nonce, v.method, v.pathname, v.query, hex.EncodeToString(sum[:]), v.actor)))
			if got := hex.EncodeToString(mac.Sum(nil)); got != v.signature {
				t.Fatalf("signature %s, want %s", got, v.signature)
			}
		})
	}
}

func TestSig1HeaderGrammar(t *testing.T) {
	const mac = "abababababababababababababababababababababababababababababababab"
	now := time.UnixMilli(1753142400000)
	bad := []string{
		"", "sig1", "sig2.1753142400000.0123456789abcdef." + mac,
		"sig1.1753142400000.0123456789abcdef",
		"sig1.1753142400000.0123456789abcdef." + mac + ".extra",
		"sig1.1e3.0123456789abcdef." + mac, "sig1.0x10.0123456789abcdef." + mac,
		"sig1. 1753142400000 .0123456789abcdef." + mac, "sig1.١٢٣.0123456789abcdef." + mac,
		"sig1.-1.0123456789abcdef." + mac, "sig1.0.0123456789abcdef." + mac,
		"sig1.99999999999999999.0123456789abcdef." + mac,
		"sig1.1753142400000.0123456789ABCDEF." + mac,
		"sig1.1753142400000.0123456789abcdef.ABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABAB",
		"sig1.1753142400000.0123456789abcdef.abababababababababababababababab",
		"sig1.1753142400000.." + mac,
	}
	for _, h := range bad {
		if _, _, _, reason := parseSig1(h, now); reason != "format" {
			t.Errorf("%q: reason %q, want format", h, reason)
		}
	}
	// The window is inclusive at exactly five minutes either way.
	for _, tc := range []struct {
		ts   int64
		want string
	}{
		{1753142400000 - 300000, ""}, {1753142400000 + 300000, ""},
		{1753142400000 - 300001, "expired"}, {1753142400000 + 300001, "expired"},
	} {
		h := "sig1." + strconv.FormatInt(tc.ts, 10) + ".a." + mac
		if _, _, _, reason := parseSig1(h, now); reason != tc.want {
			t.Errorf("ts %d: reason %q, want %q", tc.ts, reason, tc.want)
		}
	}
	// Leading zeros are accepted; the canonical string has the number.
	ts, nonce, _, reason := parseSig1("sig1.01753142400000."+"a"+"."+mac, now)
	if reason != "" || ts != 1753142400000 || nonce != "a" {
		t.Errorf("leading zero: %d %q %q", ts, nonce, reason)
	}
}

func TestCanonicalQueryEdges(t *testing.T) {
	for raw, want := range map[string]string{
		"":                "",
		"&&":              "",
		"b=2&a=1":         "a=1&b=2",
		"a=1=2":           "a=1%3D2",
		"k=%zz":           "k=%25zz",              // an invalid escape is literal
		"k=%E2%9C":        "k=%EF%BF%BD",          // a truncated sequence is one U+FFFD
		"k=%C0%80":        "k=%EF%BF%BD%EF%BF%BD", // overlong: each byte invalid
		"k=!~*'()":        "k=!~*'()",
		"k=a;b":           "k=a%3Bb",
		"a=2&a=10&a=1":    "a=1&a=10&a=2",
		"a=2&a%00=1":      "a%00=1&a=2", // sorted on key NUL value: "a\0" NUL "1" < "a" NUL "2"
		"%E2%9C%93=x&z=y": "z=y&%E2%9C%93=x",
	} {
		if got := cpCanonicalQuery(raw); got != want {
			t.Errorf("cpCanonicalQuery(%q) = %q, want %q", raw, got, want)
		}
	}
	for raw, want := range map[string]string{
		"":               "/",
		"/secrets":       "/secrets",
		"/a b":           "/a%20b",
		"/a\\b":          "/a/b",
		"/{x}`\"<>":      "/%7Bx%7D%60%22%3C%3E",
		"/%2f%2F":        "/%2f%2F",
		"/~!$&'()*+,;=:": "/~!$&'()*+,;=:",
	} {
		if got := cpPathname(raw); got != want {
			t.Errorf("cpPathname(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestEncryptionKeyUsable(t *testing.T) {
	key := func(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, n)) }
	k32 := key(32)
	for k, want := range map[string]bool{
		k32:                                     true,
		strings.TrimRight(k32, "="):             true, // padding is optional for atob
		" " + k32[:10] + "\n" + k32[10:] + "\t": true, // ASCII whitespace is stripped
		key(16):                                 true,
		key(24):                                 true,
		key(31):                                 false,
		key(48):                                 false,
		k32[:20] + "=" + k32[21:]:               false,                                    // '=' inside
		k32 + "=":                               false,                                    // 45 characters
		strings.ReplaceAll(k32, "+", "-"):       strings.ReplaceAll(k32, "+", "-") == k32, // no base64url
		"not base64!":                           false,
		"":                                      false,
	} {
		if got := encryptionKeyUsable(k); got != want {
			t.Errorf("encryptionKeyUsable(%q) = %v, want %v", k, got, want)
		}
	}
}
