// Package e2bapi is the small part of E2B's REST API the provider calls
// itself: finding a template by name, deleting it, and listing and killing
// sandboxes. Templates are built by upstream's builder (the Python SDK),
// never here. Routes and status codes are those of SDK e2b 2.29.1.
package e2bapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultAPIURL is E2B's API.
const DefaultAPIURL = "https://api.e2b.app"

// Client calls one E2B API with one key.
type Client struct {
	base string
	key  string
	http *http.Client
}

// New returns a client for apiURL ("" = DefaultAPIURL).
func New(apiURL, apiKey string) (*Client, error) {
	if strings.TrimSpace(apiKey) == "" {
		return nil, errors.New("e2b: an API key is required")
	}
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("e2b: API URL %q is not an http(s) URL", apiURL)
	}
	return &Client{base: strings.TrimRight(apiURL, "/"), key: apiKey, http: &http.Client{Timeout: time.Minute}}, nil
}

// APIError is an answer other than the expected one; E2B's body is
// {code, message}.
type APIError struct {
	Method, Path string
	Status       int
	Message      string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("e2b: %s %s: %d %s", e.Method, e.Path, e.Status, e.Message)
}

// do sends a request and decodes a JSON answer into out (when not nil)
// if the status is one of ok.
func (c *Client) do(ctx context.Context, method, path string, out any, ok ...int) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return 0, fmt.Errorf("e2b: %w", err)
	}
	req.Header.Set("X-API-Key", c.key)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("e2b: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("e2b: %s %s: %w", method, path, err)
	}
	for _, s := range ok {
		if resp.StatusCode == s {
			if out != nil && len(body) > 0 {
				if err := json.Unmarshal(body, out); err != nil {
					return s, fmt.Errorf("e2b: %s %s: decoding the answer: %w", method, path, err)
				}
			}
			return s, nil
		}
	}
	var e struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(body, &e)
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return resp.StatusCode, &APIError{Method: method, Path: path, Status: resp.StatusCode, Message: e.Message}
}

// Template is a template as GET /templates lists it.
type Template struct {
	ID          string   `json:"templateID"`
	BuildID     string   `json:"buildID"`
	BuildStatus string   `json:"buildStatus"` // waiting | building | ready | error
	Names       []string `json:"names"`
}

// Templates lists the team's templates.
func (c *Client) Templates(ctx context.Context) ([]Template, error) {
	var out []Template
	_, err := c.do(ctx, http.MethodGet, "/templates", &out, http.StatusOK)
	return out, err
}

// TemplateByName finds a template by its name.
func (c *Client) TemplateByName(ctx context.Context, name string) (Template, bool, error) {
	list, err := c.Templates(ctx)
	if err != nil {
		return Template{}, false, err
	}
	for _, t := range list {
		for _, n := range t.Names {
			if n == name {
				return t, true, nil
			}
		}
	}
	return Template{}, false, nil
}

// DeleteTemplate deletes a template by ID or name; one already gone is no
// error. E2B refuses (400) while running or paused sandboxes use it.
func (c *Client) DeleteTemplate(ctx context.Context, idOrName string) error {
	status, err := c.do(ctx, http.MethodDelete, "/templates/"+url.PathEscape(idOrName), nil, http.StatusNoContent, http.StatusOK, http.StatusNotFound)
	if err == nil && status == http.StatusNotFound {
		return nil
	}
	return err
}

// Sandbox is a running or paused sandbox.
type Sandbox struct {
	ID         string            `json:"sandboxID"`
	TemplateID string            `json:"templateID"`
	State      string            `json:"state"`
	Metadata   map[string]string `json:"metadata"`
}

// Sandboxes lists the running and paused sandboxes whose metadata has
// every pair of match (nil: all).
func (c *Client) Sandboxes(ctx context.Context, match map[string]string) ([]Sandbox, error) {
	q := url.Values{"state": {"running,paused"}}
	if len(match) > 0 {
		md := url.Values{}
		for k, v := range match {
			md.Set(k, v)
		}
		q.Set("metadata", md.Encode())
	}
	var out []Sandbox
	_, err := c.do(ctx, http.MethodGet, "/v2/sandboxes?"+q.Encode(), &out, http.StatusOK)
	return out, err
}

// KillSandbox kills a sandbox; one already gone is no error.
func (c *Client) KillSandbox(ctx context.Context, id string) error {
	_, err := c.do(ctx, http.MethodDelete, "/sandboxes/"+url.PathEscape(id), nil, http.StatusNoContent, http.StatusOK, http.StatusNotFound)
	return err
}
