// Package vercelapi is the small part of the Vercel Sandbox REST API the
// provider calls itself: listing and deleting a project's base snapshots
// and the sandboxes they were taken from, and finding sessions' sandboxes
// by tag; and reading the project, which the preflight checks. Snapshots
// are built by upstream's builder (the control plane's
// build-vercel-base-snapshot script), never here. Routes are those of
// upstream's fetch client
// (packages/control-plane/src/sandbox/providers/vercel/client.ts at the
// pin): Bearer token, ?teamId= when a team is set, every list scoped by
// ?project=.
package vercelapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/internal/restjson"
)

// DefaultAPIURL is Vercel's API (upstream's VERCEL_SANDBOX_API_BASE_URL default).
const DefaultAPIURL = "https://vercel.com/api"

// Client calls one project's Sandbox API with one token.
type Client struct {
	api           *restjson.Client
	project, team string
}

// New returns a client for apiURL ("" = DefaultAPIURL).
func New(apiURL, token, projectID, teamID string) (*Client, error) {
	if strings.TrimSpace(token) == "" {
		return nil, errors.New("vercel: a token is required")
	}
	if strings.TrimSpace(projectID) == "" {
		return nil, errors.New("vercel: a project ID is required (every Sandbox API list is scoped by project)")
	}
	base, err := restjson.BaseURL(apiURL, DefaultAPIURL)
	if err != nil {
		return nil, fmt.Errorf("vercel: %w", err)
	}
	header := http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}
	// Vercel's error body is {error: {code, message}}.
	return &Client{api: restjson.New("vercel", base, header, restjson.MessageAt("error.message")), project: projectID, team: teamID}, nil
}

// CheckAPIURL accepts an http(s) URL.
func CheckAPIURL(apiURL string) error { return restjson.CheckURL(apiURL) }

// do adds the team to the query, as upstream's client does for every call.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, out any, ok ...int) (int, error) {
	return c.api.Do(ctx, method, c.withTeam(path, q), out, ok...)
}

// withTeam is path with q and the team as its query.
func (c *Client) withTeam(path string, q url.Values) string {
	return restjson.WithQuery(path, q, "teamId", c.team)
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
	return c.api.Delete(ctx, c.withTeam("/v2/sandboxes/snapshots/"+url.PathEscape(id), nil))
}

// DeleteSandbox deletes the project's sandbox of that name (and stops its
// session); one already gone is no error.
func (c *Client) DeleteSandbox(ctx context.Context, name string) error {
	return c.api.Delete(ctx, c.withTeam("/v2/sandboxes/"+url.PathEscape(name), url.Values{"project": {c.project}}))
}

// Sandbox is a named sandbox as the API lists it.
type Sandbox struct {
	Name string            `json:"name"`
	Tags map[string]string `json:"tags"`
}

// maxListLimit is the most sandboxes one list answers (the API's cap).
const maxListLimit = 50

// SandboxesTagged lists the project's sandboxes carrying the tag key:value,
// the one tag filter the API supports. Upstream names one sandbox per
// session, so a page of 50 holds a session's.
func (c *Client) SandboxesTagged(ctx context.Context, key, value string) ([]Sandbox, error) {
	q := url.Values{"project": {c.project}, "tags": {key + ":" + value}, "limit": {fmt.Sprint(maxListLimit)}}
	var out struct {
		Sandboxes []Sandbox `json:"sandboxes"`
	}
	_, err := c.do(ctx, http.MethodGet, "/v2/sandboxes", q, &out, http.StatusOK)
	return out.Sandboxes, err
}

// CheckProject reads the client's project through Vercel's projects API
// (GET /v9/projects/{idOrName}, served on the Sandbox API's host): Vercel
// answers it only for a token it accepts (401 otherwise), in a team the
// token belongs to (403) that has the project (404), the three things
// every Sandbox API call needs.
func (c *Client) CheckProject(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodGet, "/v9/projects/"+url.PathEscape(c.project), nil, nil, http.StatusOK)
	return err
}
