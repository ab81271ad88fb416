package controlplane

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
)

// Header names of the service signature.
const (
	HeaderService   = "X-OpenInspect-Service"
	HeaderSignature = "X-OpenInspect-Service-Signature"
)

// Client signs requests as one service (e.g. "slack-bot") with that
// service's shared secret (the control plane's SERVICE_AUTH_SECRET_<SERVICE>).
type Client struct {
	base    *url.URL
	service string
	key     []byte
	http    *http.Client
	now     func() time.Time
	retries int
}

// New returns a client for the control plane at baseURL. baseURL may carry a
// path prefix (a gateway, or the emulator's older /__workers/<script>);
// signatures cover only the control plane's own path.
//
// The signed requests carry the platform's secrets, so the URL must be https
// (plain http only to a loopback host, the local emulator, whose workers
// answer on http://<script>.workers.localhost:PORT), and redirects are never
// followed: a redirect would re-send the body and its signature to another
// host.
func New(baseURL, service, key string) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("control plane URL %q is not an http(s) URL", baseURL)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && loopback.IsHost(u.Hostname()):
	case u.Scheme == "http":
		return nil, fmt.Errorf("control plane URL %q: plain http is accepted only for a loopback host; use https", baseURL)
	default:
		return nil, fmt.Errorf("control plane URL %q is not an http(s) URL", baseURL)
	}
	if service == "" || key == "" {
		return nil, errors.New("control plane client needs a service name and its secret")
	}
	// loopback's transport dials *.localhost on 127.0.0.1, which is what
	// makes plain http to those names loopback-only.
	noRedirects := loopback.Client(30 * time.Second)
	noRedirects.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		return fmt.Errorf("%w to %s; signed requests are not re-sent elsewhere", errRedirect, req.URL.Redacted())
	}
	return &Client{base: u, service: service, key: []byte(key), http: noRedirects, now: time.Now, retries: 3}, nil
}

// errRedirect is a redirect the client refused to follow; trying again
// would only be redirected again.
var errRedirect = errors.New("the control plane answered with a redirect")

// Canonical is the string a sig1 signature covers.
func Canonical(service string, unixMs int64, nonce, method, path, rawQuery string, body []byte, actor string) string {
	sum := sha256.Sum256(body)
	return strings.Join([]string{"sig1", service, strconv.FormatInt(unixMs, 10), nonce, method, path,
		canonicalQuery(rawQuery), hex.EncodeToString(sum[:]), actor}, "\n")
}

// canonicalQuery is the decoded k=v pairs sorted and joined with '&'.
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	values, err := url.ParseQuery(raw)
	if err != nil {
		return raw
	}
	var pairs []string
	for k, vs := range values {
		for _, v := range vs {
			pairs = append(pairs, k+"="+v)
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

// Sign returns the signature header value for one request.
func Sign(key []byte, service string, unixMs int64, nonce, method, path, rawQuery string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(Canonical(service, unixMs, nonce, method, path, rawQuery, body, "")))
	return fmt.Sprintf("sig1.%d.%s.%s", unixMs, nonce, hex.EncodeToString(mac.Sum(nil)))
}

// StatusError is a non-2xx answer. It carries the status and the response
// body, never the request body (which holds secret values).
type StatusError struct {
	Method, Path string
	StatusCode   int
	Body         string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("control plane %s %s: HTTP %d: %s", e.Method, e.Path, e.StatusCode, strings.TrimSpace(e.Body))
}

// IsNotFound reports whether the control plane (or the object) is not there.
func IsNotFound(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.StatusCode == http.StatusNotFound
}

// do sends one signed request, retrying transport errors, 429 and 5xx with
// backoff; each attempt gets a fresh timestamp and nonce.
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	var lastErr error
	for attempt := 0; attempt <= c.retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt*attempt) * 250 * time.Millisecond):
			}
		}
		retry, err := c.once(ctx, method, path, body, out)
		if err == nil || !retry {
			return err
		}
		lastErr = err
	}
	return lastErr
}

func (c *Client) once(ctx context.Context, method, path string, body []byte, out any) (retry bool, err error) {
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return false, err
	}
	target := *c.base
	target.Path = c.base.Path + path
	req, err := http.NewRequestWithContext(ctx, method, target.String(), bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(HeaderService, c.service)
	req.Header.Set(HeaderSignature, Sign(c.key, c.service, c.now().UnixMilli(), hex.EncodeToString(nonce), method, path, "", body))
	resp, err := c.http.Do(req)
	if err != nil {
		return !errors.Is(err, errRedirect), fmt.Errorf("control plane %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 300 {
		retry = resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		return retry, &StatusError{Method: method, Path: path, StatusCode: resp.StatusCode, Body: string(raw)}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return false, fmt.Errorf("control plane %s %s: decoding the answer: %w", method, path, err)
		}
	}
	return false, nil
}

// PutSecrets upserts global secrets.
func (c *Client) PutSecrets(ctx context.Context, secrets map[string]string) error {
	body, err := json.Marshal(map[string]any{"secrets": secrets})
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPut, "/secrets", body, nil)
}

// ListSecrets returns the keys in the store; the API never returns values.
func (c *Client) ListSecrets(ctx context.Context) ([]string, error) {
	var out struct {
		Secrets []json.RawMessage `json:"secrets"`
	}
	if err := c.do(ctx, http.MethodGet, "/secrets", nil, &out); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(out.Secrets))
	for _, raw := range out.Secrets {
		// Entries are key strings, or objects carrying a key.
		var key string
		if json.Unmarshal(raw, &key) != nil {
			var obj struct {
				Key string `json:"key"`
			}
			if err := json.Unmarshal(raw, &obj); err != nil {
				return nil, fmt.Errorf("control plane GET /secrets: unexpected entry %s", raw)
			}
			key = obj.Key
		}
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys, nil
}

// DeleteSecret removes one key; a missing key is fine.
func (c *Client) DeleteSecret(ctx context.Context, key string) error {
	err := c.do(ctx, http.MethodDelete, "/secrets/"+url.PathEscape(key), nil, nil)
	if IsNotFound(err) {
		return nil
	}
	return err
}
