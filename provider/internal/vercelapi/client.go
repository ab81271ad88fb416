// Package vercelapi is the small part of the Vercel Sandbox REST API the
// provider calls itself: listing and deleting a project's base snapshots
// and the sandboxes they were taken from. Snapshots are built by
// upstream's builder (the control plane's build-vercel-base-snapshot
// script), never here. Routes are those of upstream's fetch client
// (packages/control-plane/src/sandbox/providers/vercel/client.ts at the
// pin): Bearer token, ?teamId= when a team is set, every list scoped by
// ?project=.
package vercelapi

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

// DefaultAPIURL is Vercel's API (upstream's VERCEL_SANDBOX_API_BASE_URL default).
const DefaultAPIURL = "https://vercel.com/api"

// Client calls one project's Sandbox API with one token.
type Client struct {
	base, token, project, team string
	http                       *http.Client
}

// New returns a client for apiURL ("" = DefaultAPIURL).
func New(apiURL, token, projectID, teamID string) (*Client, error) {
	if strings.TrimSpace(token) == "" {
		return nil, errors.New("vercel: a token is required")
	}
	if strings.TrimSpace(projectID) == "" {
		return nil, errors.New("vercel: a project ID is required (every Sandbox API list is scoped by project)")
	}
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	if err := CheckAPIURL(apiURL); err != nil {
		return nil, fmt.Errorf("vercel: %w", err)
	}
	return &Client{base: strings.TrimRight(apiURL, "/"), token: token, project: projectID, team: teamID,
		http: &http.Client{Timeout: time.Minute}}, nil
}

// CheckAPIURL accepts an http(s) URL.
func CheckAPIURL(apiURL string) error {
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", apiURL)
	}
	return nil
}

// APIError is an answer other than the expected one; Vercel's body is
// {error: {code, message}}.
type APIError struct {
	Method, Path string
	Status       int
	Message      string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("vercel: %s %s: %d %s", e.Method, e.Path, e.Status, e.Message)
}

func (c *Client) do(ctx context.Context, method, path string, q url.Values, out any, ok ...int) (int, error) {
	if q == nil {
		q = url.Values{}
	}
	if c.team != "" {
		q.Set("teamId", c.team)
	}
	full := c.base + path
	if len(q) > 0 {
		full += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, full, nil)
	if err != nil {
		return 0, fmt.Errorf("vercel: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("vercel: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("vercel: %s %s: %w", method, path, err)
	}
	for _, s := range ok {
		if resp.StatusCode == s {
			if out != nil && len(body) > 0 {
				if err := json.Unmarshal(body, out); err != nil {
					return s, fmt.Errorf("vercel: %s %s: decoding the answer: %w", method, path, err)
				}
			}
			return s, nil
		}
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	msg := e.Error.Message
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return resp.StatusCode, &APIError{Method: method, Path: path, Status: resp.StatusCode, Message: msg}
}

// Snapshot is a snapshot as the API lists it.
type Snapshot struct {
	ID              string `json:"id"`
	SourceSessionID string `json:"sourceSessionId"`
	Status          string `json:"status"` // created | deleted | failed
	CreatedAt       int64  `json:"createdAt"`
}

// Snapshots lists the project's snapshots taken from the sandbox named
// sandboxName ("" = all), newest first.
func (c *Client) Snapshots(ctx context.Context, sandboxName string) ([]Snapshot, error) {
	q := url.Values{"project": {c.project}}
	if sandboxName != "" {
		q.Set("name", sandboxName)
	}
	var out struct {
		Snapshots []Snapshot `json:"snapshots"`
	}
	_, err := c.do(ctx, http.MethodGet, "/v2/sandboxes/snapshots", q, &out, http.StatusOK)
	return out.Snapshots, err
}

// DeleteSnapshot deletes a snapshot; one already gone is no error.
func (c *Client) DeleteSnapshot(ctx context.Context, id string) error {
	_, err := c.do(ctx, http.MethodDelete, "/v2/sandboxes/snapshots/"+url.PathEscape(id), nil, nil, http.StatusOK, http.StatusNoContent, http.StatusNotFound)
	return err
}

// DeleteSandbox deletes the project's sandbox of that name (and stops its
// session); one already gone is no error.
func (c *Client) DeleteSandbox(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodDelete, "/v2/sandboxes/"+url.PathEscape(name), url.Values{"project": {c.project}}, nil,
		http.StatusOK, http.StatusNoContent, http.StatusNotFound)
	return err
}
