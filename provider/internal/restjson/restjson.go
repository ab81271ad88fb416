// Package restjson is the one way the provider calls a platform's JSON REST
// API itself (E2B, OpenComputer, Vercel Sandbox, Vercel's projects and
// deployments): fixed headers,
// a bounded body, the answer decoded only for the statuses the caller
// expects, and any other answer an *Error carrying the platform's own
// message.
package restjson

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
)

// Client calls one API.
type Client struct {
	// API names the platform in errors ("e2b").
	API string
	// Base is the API's URL, without a trailing slash.
	Base string
	// Header is sent with every request (the credentials among them).
	Header http.Header
	// Message reads the platform's message from an error body ("" when it
	// has none); nil means the body is not read for one.
	Message func(body []byte) string
	// HTTP is the client requests go through; nil means one with a
	// minute's timeout. New's client dials localhost names (the local
	// emulators' *.localhost) on loopback.
	HTTP *http.Client
}

// New returns a client for base with header.
func New(api, base string, header http.Header, message func([]byte) string) *Client {
	return &Client{API: api, Base: base, Header: header, Message: message, HTTP: loopback.Client(time.Minute)}
}

// Error is an answer other than the expected ones.
type Error struct {
	API, Method, Path string
	Status            int
	Message           string
	// Body is the answer as sent (bounded), for an API whose errors carry
	// more than a message (Vercel's missing_files lists the digests).
	Body []byte
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s %s: %d %s", e.API, e.Method, e.Path, e.Status, e.Message)
}

// maxBody bounds what is read of an answer.
const maxBody = 16 << 20

// Do sends a request without a body to path (query included) and, when the
// status is one of ok, decodes a JSON answer into out (when not nil).
func (c *Client) Do(ctx context.Context, method, path string, out any, ok ...int) (int, error) {
	return c.Send(ctx, method, path, nil, nil, out, ok...)
}

// Delete deletes what path names; one already gone (404) is no error.
func (c *Client) Delete(ctx context.Context, path string) error {
	_, err := c.Do(ctx, http.MethodDelete, path, nil, http.StatusOK, http.StatusNoContent, http.StatusNotFound)
	return err
}

// WithQuery is path with q as its query, plus name=value when value is not
// empty: a parameter every call of an API carries (Vercel's teamId). q
// itself is left as it was.
func WithQuery(path string, q url.Values, name, value string) string {
	all := maps.Clone(q)
	if value != "" {
		if all == nil {
			all = url.Values{}
		}
		all.Set(name, value)
	}
	if len(all) == 0 {
		return path
	}
	return path + "?" + all.Encode()
}

// Send is Do with a request body (nil: none) and headers beyond the
// client's (a content type, a digest); extra wins over the client's.
func (c *Client) Send(ctx context.Context, method, path string, body []byte, extra http.Header, out any, ok ...int) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c.API, err)
	}
	for k, vs := range c.Header {
		req.Header[k] = vs
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	hc := c.HTTP
	if hc == nil {
		hc = loopback.Client(0)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %s %s: %w", c.API, method, path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s: %s %s: %w", c.API, method, path, err)
	}
	for _, s := range ok {
		if resp.StatusCode != s {
			continue
		}
		if out != nil && len(answer) > 0 {
			if err := json.Unmarshal(answer, out); err != nil {
				return s, fmt.Errorf("%s: %s %s: decoding the answer: %w", c.API, method, path, err)
			}
		}
		return s, nil
	}
	msg := ""
	if c.Message != nil {
		msg = c.Message(answer)
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return resp.StatusCode, &Error{API: c.API, Method: method, Path: path, Status: resp.StatusCode, Message: msg, Body: answer}
}

// BaseURL is the base of a client's requests: apiURL, or fallback (the
// platform's public API) when it is empty, checked by CheckURL and without a
// trailing slash.
func BaseURL(apiURL, fallback string) (string, error) {
	base := cmp.Or(apiURL, fallback)
	if err := CheckURL(base); err != nil {
		return "", err
	}
	return strings.TrimRight(base, "/"), nil
}

// CheckURL accepts an absolute http(s) URL, the form every API URL input
// takes.
func CheckURL(apiURL string) error {
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", apiURL)
	}
	return nil
}

// MessageAt is a Message reader for an API whose error body is a JSON
// object carrying its message as a string at one of paths (dot-separated
// keys: "message", "error.message"); the first non-empty one is taken.
func MessageAt(paths ...string) func(body []byte) string {
	return func(body []byte) string {
		var doc any
		if json.Unmarshal(body, &doc) != nil {
			return ""
		}
		for _, path := range paths {
			v := doc
			for _, key := range strings.Split(path, ".") {
				obj, _ := v.(map[string]any)
				v = obj[key]
			}
			if s, _ := v.(string); s != "" {
				return s
			}
		}
		return ""
	}
}
