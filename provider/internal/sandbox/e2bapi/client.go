// Package e2bapi is the small part of E2B's REST API the provider calls
// itself: finding a template by name, listing its builds, deleting it, and
// listing and killing sandboxes. Templates are built by upstream's builder (the Python SDK),
// never here. Routes and status codes are those of SDK e2b 2.29.1.
package e2bapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/internal/restjson"
)

// DefaultAPIURL is E2B's API.
const DefaultAPIURL = "https://api.e2b.app"

// Client calls one E2B API with one key.
type Client struct{ api *restjson.Client }

// New returns a client for apiURL ("" = DefaultAPIURL).
func New(apiURL, apiKey string) (*Client, error) {
	if strings.TrimSpace(apiKey) == "" {
		return nil, errors.New("e2b: an API key is required")
	}
	base, err := restjson.BaseURL(apiURL, DefaultAPIURL)
	if err != nil {
		return nil, fmt.Errorf("e2b: API URL %w", err)
	}
	header := http.Header{"X-Api-Key": {apiKey}, "Accept": {"application/json"}}
	// E2B's error body is {code, message}.
	return &Client{api: restjson.New("e2b", base, header, restjson.MessageAt("message"))}, nil
}

func (c *Client) do(ctx context.Context, method, path string, out any, ok ...int) (int, error) {
	return c.api.Do(ctx, method, path, out, ok...)
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

// Build is one build of a template as GET /templates/{templateID} lists it.
type Build struct {
	ID     string `json:"buildID"`
	Status string `json:"status"` // waiting | building | ready | error
}

// TemplateBuilds lists a template's builds (the newest 100, newest
// first); a template that is gone has none.
func (c *Client) TemplateBuilds(ctx context.Context, templateID string) ([]Build, error) {
	var out struct {
		Builds []Build `json:"builds"`
	}
	status, err := c.do(ctx, http.MethodGet, "/templates/"+url.PathEscape(templateID), &out, http.StatusOK, http.StatusNotFound)
	if err != nil || status == http.StatusNotFound {
		return nil, err
	}
	return out.Builds, nil
}

// DeleteTemplate deletes a template by ID or name; one already gone is no
// error. E2B refuses (400) while running or paused sandboxes use it.
func (c *Client) DeleteTemplate(ctx context.Context, idOrName string) error {
	return c.api.Delete(ctx, "/templates/"+url.PathEscape(idOrName))
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
	return c.api.Delete(ctx, "/sandboxes/"+url.PathEscape(id))
}
