// Package opencomputerapi is the small part of OpenComputer's REST API the provider
// calls itself: reading, listing and deleting snapshots, and listing and
// deleting the running sandboxes at teardown. Snapshots are built
// by upstream's builder (build-template.ts with @opencomputer/sdk), never
// here. Routes are the SDK's (0.12.4, whose Snapshots code is 0.9.1's):
// under an API URL ending in /api, header X-API-Key.
package opencomputerapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/internal/restjson"
)

// Client calls one OpenComputer API with one key.
type Client struct{ api *restjson.Client }

// New returns a client for apiURL, which must end in /api (as upstream's
// control plane requires of OPENCOMPUTER_API_URL).
func New(apiURL, apiKey string) (*Client, error) {
	if strings.TrimSpace(apiKey) == "" {
		return nil, errors.New("opencomputer: an API key is required")
	}
	if err := CheckAPIURL(apiURL); err != nil {
		return nil, fmt.Errorf("opencomputer: %w", err)
	}
	header := http.Header{"X-Api-Key": {apiKey}, "Accept": {"application/json"}}
	// OpenComputer's error body is {error} (or {message}).
	return &Client{api: restjson.New("opencomputer", strings.TrimRight(apiURL, "/"), header, restjson.MessageAt("error", "message"))}, nil
}

// CheckAPIURL accepts an http(s) URL whose path ends in /api.
func CheckAPIURL(apiURL string) error {
	if err := restjson.CheckURL(apiURL); err != nil {
		return err
	}
	u, _ := url.Parse(apiURL)
	if !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/api") {
		return fmt.Errorf("%q must end in /api: upstream's control plane calls <url>/sandboxes and <url>/snapshots as given", apiURL)
	}
	return nil
}

func (c *Client) do(ctx context.Context, method, path string, out any, ok ...int) (int, error) {
	return c.api.Do(ctx, method, path, out, ok...)
}

// Snapshot is a snapshot as the API answers it.
type Snapshot struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Status      string `json:"status"` // building | ready | failed
	ContentHash string `json:"contentHash"`
}

// Snapshots lists the org's snapshots.
func (c *Client) Snapshots(ctx context.Context) ([]Snapshot, error) {
	var out []Snapshot
	_, err := c.do(ctx, http.MethodGet, "/snapshots", &out, http.StatusOK)
	return out, err
}

// Snapshot reads one snapshot by name; found is false when there is none
// (or, as the API answers it, while it is still building).
func (c *Client) Snapshot(ctx context.Context, name string) (snap Snapshot, found bool, err error) {
	status, err := c.do(ctx, http.MethodGet, "/snapshots/"+url.PathEscape(name), &snap, http.StatusOK, http.StatusNotFound)
	return snap, err == nil && status == http.StatusOK, err
}

// DeleteSnapshot deletes a snapshot by name; one already gone is no error.
func (c *Client) DeleteSnapshot(ctx context.Context, name string) error {
	return c.api.Delete(ctx, "/snapshots/"+url.PathEscape(name))
}

// Sandbox is a sandbox as the API answers it.
type Sandbox struct {
	ID       string            `json:"sandboxID"`
	Status   string            `json:"status"`
	Snapshot string            `json:"snapshot"`
	Metadata map[string]string `json:"metadata"`
}

// RunningSandboxes lists the org's running sandboxes. OpenComputer lists no
// hibernated ones and at most 100, so this finds only what is running now.
func (c *Client) RunningSandboxes(ctx context.Context) ([]Sandbox, error) {
	var out []Sandbox
	_, err := c.do(ctx, http.MethodGet, "/sandboxes", &out, http.StatusOK)
	return out, err
}

// DeleteSandbox kills a sandbox; one already gone is no error.
func (c *Client) DeleteSandbox(ctx context.Context, id string) error {
	return c.api.Delete(ctx, "/sandboxes/"+url.PathEscape(id))
}
