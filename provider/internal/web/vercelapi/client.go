// Package vercelapi is the part of Vercel's REST API the web UI on Vercel
// needs: projects and their settings, a project's environment variables,
// the files API (content addressed by SHA-1) and deployments with their
// build events and production aliases. There is no Go SDK; the routes and
// shapes are those of Vercel's REST reference (docs/emulator.md lists each,
// documented or assumed). Every call carries the bearer token and, when a
// team is set, ?teamId=.
//
// It imports restjson and the standard library only.
package vercelapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/internal/restjson"
)

// DefaultAPIURL is Vercel's REST API.
const DefaultAPIURL = "https://api.vercel.com"

// Targets are the environments upstream's variables apply to.
var Targets = []string{"production", "preview"}

// Errors a caller branches on.
var (
	// ErrNotFound: the project, variable or deployment does not exist.
	ErrNotFound = errors.New("vercel: not found")
	// ErrConflict: a project of that name exists in the team.
	ErrConflict = errors.New("vercel: a project of that name already exists")
)

// Client calls Vercel's REST API with one token, in one team.
type Client struct {
	api  *restjson.Client
	team string
	// Base is the API URL the client was made for.
	Base string
}

// New returns a client for apiURL ("" = DefaultAPIURL).
func New(apiURL, token, teamID string) (*Client, error) {
	if strings.TrimSpace(token) == "" {
		return nil, errors.New("vercel: a token is required")
	}
	base, err := restjson.BaseURL(apiURL, DefaultAPIURL)
	if err != nil {
		return nil, fmt.Errorf("vercel: %w", err)
	}
	header := http.Header{"Authorization": {"Bearer " + token}}
	return &Client{api: restjson.New("vercel", base, header, message), team: teamID, Base: base}, nil
}

// CheckAPIURL accepts an http(s) URL.
func CheckAPIURL(apiURL string) error { return restjson.CheckURL(apiURL) }

// apiError is Vercel's error body: {error: {code, message, ...}}; a
// missing_files answer also lists the digests Vercel lacks.
type apiError struct {
	Error struct {
		Code    string   `json:"code"`
		Message string   `json:"message"`
		Missing []string `json:"missing"`
	} `json:"error"`
}

func message(body []byte) string {
	var e apiError
	_ = json.Unmarshal(body, &e)
	if e.Error.Code != "" && e.Error.Message != "" {
		return e.Error.Message + " (" + e.Error.Code + ")"
	}
	return e.Error.Message
}

// decodeError is the code (and missing digests) of a failed call's answer.
func decodeError(err error) (status int, code string, missing []string) {
	var re *restjson.Error
	if !errors.As(err, &re) {
		return 0, "", nil
	}
	var e apiError
	_ = json.Unmarshal(re.Body, &e)
	return re.Status, e.Error.Code, e.Error.Missing
}

// send adds the team to the query and, with in, a JSON body.
func (c *Client) send(ctx context.Context, method, path string, q url.Values, in, out any, ok ...int) (int, error) {
	path = c.withTeam(path, q)
	if in == nil {
		return c.api.Do(ctx, method, path, out, ok...)
	}
	body, err := json.Marshal(in)
	if err != nil {
		return 0, fmt.Errorf("vercel: %w", err)
	}
	return c.api.Send(ctx, method, path, body, http.Header{"Content-Type": {"application/json"}}, out, ok...)
}

// withTeam is path with q and the team as its query.
func (c *Client) withTeam(path string, q url.Values) string {
	return restjson.WithQuery(path, q, "teamId", c.team)
}

// ProjectSettings are the build settings upstream's Terraform gives the
// project.
type ProjectSettings struct {
	Framework      string `json:"framework"`
	RootDirectory  string `json:"rootDirectory"`
	InstallCommand string `json:"installCommand"`
	BuildCommand   string `json:"buildCommand"`
}

// Project is a project as the API answers it (the fields read here).
type Project struct {
	ID             string  `json:"id"`
	Name           string  `json:"name"`
	AccountID      string  `json:"accountId"`
	Framework      *string `json:"framework"`
	RootDirectory  *string `json:"rootDirectory"`
	InstallCommand *string `json:"installCommand"`
	BuildCommand   *string `json:"buildCommand"`
	// LatestDeployments are the project's newest deployments.
	LatestDeployments []struct {
		ID string `json:"id"`
	} `json:"latestDeployments"`
}

// Settings are the project's build settings; a null one reads as "".
func (p *Project) Settings() ProjectSettings {
	s := func(v *string) string {
		if v == nil {
			return ""
		}
		return *v
	}
	return ProjectSettings{Framework: s(p.Framework), RootDirectory: s(p.RootDirectory),
		InstallCommand: s(p.InstallCommand), BuildCommand: s(p.BuildCommand)}
}

// CreateProject creates a project; ErrConflict when the name is taken in
// the team.
func (c *Client) CreateProject(ctx context.Context, name string, s ProjectSettings) (*Project, error) {
	in := struct {
		Name string `json:"name"`
		ProjectSettings
	}{name, s}
	var out Project
	status, err := c.send(ctx, http.MethodPost, "/v11/projects", nil, in, &out, http.StatusOK, http.StatusCreated)
	if status == http.StatusConflict {
		return nil, fmt.Errorf("%w: %q: %w", ErrConflict, name, err)
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// GetProject reads a project by ID or name; ErrNotFound when it is gone.
func (c *Client) GetProject(ctx context.Context, idOrName string) (*Project, error) {
	return get[Project](ctx, c, "/v9/projects/"+url.PathEscape(idOrName))
}

// get reads what path names into a T; ErrNotFound when it is gone.
func get[T any](ctx context.Context, c *Client, path string) (*T, error) {
	var out T
	status, err := c.send(ctx, http.MethodGet, path, nil, nil, &out, http.StatusOK)
	if status == http.StatusNotFound {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateProject sets the project's build settings.
func (c *Client) UpdateProject(ctx context.Context, id string, s ProjectSettings) (*Project, error) {
	var out Project
	if _, err := c.send(ctx, http.MethodPatch, "/v9/projects/"+url.PathEscape(id), nil, s, &out, http.StatusOK); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteProject deletes a project with its variables and deployments; one
// already gone is no error.
func (c *Client) DeleteProject(ctx context.Context, id string) error {
	return c.api.Delete(ctx, c.withTeam("/v9/projects/"+url.PathEscape(id), nil))
}

// Env is one environment variable of a project. Value is empty for a
// sensitive one as read back: Vercel never returns it.
type Env struct {
	ID     string   `json:"id,omitempty"`
	Key    string   `json:"key"`
	Value  string   `json:"value"`
	Type   string   `json:"type"` // plain | sensitive | encrypted | secret | system
	Target []string `json:"target"`
}

// ListEnv lists the project's variables, plain values decrypted.
func (c *Client) ListEnv(ctx context.Context, project string) ([]Env, error) {
	var out struct {
		Envs []Env `json:"envs"`
	}
	_, err := c.send(ctx, http.MethodGet, "/v10/projects/"+url.PathEscape(project)+"/env", url.Values{"decrypt": {"true"}}, nil, &out, http.StatusOK)
	return out.Envs, err
}

// CreateEnv adds a variable and returns its ID. A key already set for one
// of the targets answers ENV_CONFLICT, which is returned as is: the caller
// reads the project's variables and updates in place instead.
func (c *Client) CreateEnv(ctx context.Context, project string, e Env) (string, error) {
	e.ID = ""
	var out struct {
		Created json.RawMessage `json:"created"`
	}
	if _, err := c.send(ctx, http.MethodPost, "/v10/projects/"+url.PathEscape(project)+"/env", nil, e, &out,
		http.StatusOK, http.StatusCreated); err != nil {
		return "", err
	}
	// created is one object for one variable (an array for several).
	var one Env
	if err := json.Unmarshal(out.Created, &one); err == nil && one.ID != "" {
		return one.ID, nil
	}
	var many []Env
	if err := json.Unmarshal(out.Created, &many); err == nil && len(many) == 1 {
		return many[0].ID, nil
	}
	return "", fmt.Errorf("vercel: creating variable %s: the answer names no created variable", e.Key)
}

// IsEnvConflict says whether err is Vercel's ENV_CONFLICT.
func IsEnvConflict(err error) bool {
	_, code, _ := decodeError(err)
	return strings.EqualFold(code, "ENV_CONFLICT")
}

// UpdateEnv changes a variable in place (value, type and targets).
func (c *Client) UpdateEnv(ctx context.Context, project, id string, e Env) error {
	in := struct {
		Value  string   `json:"value"`
		Type   string   `json:"type"`
		Target []string `json:"target"`
	}{e.Value, e.Type, e.Target}
	status, err := c.send(ctx, http.MethodPatch, "/v9/projects/"+url.PathEscape(project)+"/env/"+url.PathEscape(id), nil, in, nil, http.StatusOK)
	if status == http.StatusNotFound {
		return ErrNotFound
	}
	return err
}

// DeleteEnv removes a variable; one already gone is no error.
func (c *Client) DeleteEnv(ctx context.Context, project, id string) error {
	return c.api.Delete(ctx, c.withTeam("/v9/projects/"+url.PathEscape(project)+"/env/"+url.PathEscape(id), nil))
}

// AddDomain attaches a domain to the project; one it already has is no
// error.
func (c *Client) AddDomain(ctx context.Context, project, domain string) error {
	in := struct {
		Name string `json:"name"`
	}{domain}
	status, err := c.send(ctx, http.MethodPost, "/v10/projects/"+url.PathEscape(project)+"/domains", nil, in, nil, http.StatusOK, http.StatusCreated)
	if status == http.StatusConflict {
		if _, code, _ := decodeError(err); code == "domain_already_in_use_by_project" || code == "domain_already_exists" {
			return nil
		}
	}
	return err
}

// UploadFile uploads one file, named by its SHA-1 (x-vercel-digest).
func (c *Client) UploadFile(ctx context.Context, sha1 string, content []byte) error {
	path := "/v2/files"
	if c.team != "" {
		path += "?" + url.Values{"teamId": {c.team}}.Encode()
	}
	header := http.Header{"Content-Type": {"application/octet-stream"}, "X-Vercel-Digest": {sha1}}
	_, err := c.api.Send(ctx, http.MethodPost, path, content, header, nil, http.StatusOK, http.StatusCreated)
	return err
}

// DeploymentFile is one file of a deployment, by path and SHA-1.
type DeploymentFile struct {
	File string `json:"file"`
	SHA  string `json:"sha"`
	Size int64  `json:"size"`
}

// Deployment is a deployment as the API answers it (the fields read here).
type Deployment struct {
	ID            string   `json:"id"`
	URL           string   `json:"url"`
	ReadyState    string   `json:"readyState"` // QUEUED | INITIALIZING | BUILDING | READY | ERROR | CANCELED
	Target        string   `json:"target"`
	Alias         []string `json:"alias"`
	AliasAssigned bool     `json:"aliasAssigned"`
	ErrorCode     string   `json:"errorCode"`
	ErrorMessage  string   `json:"errorMessage"`
	ProjectID     string   `json:"projectId"`
}

// MissingFilesError is a create refused because Vercel lacks some files.
type MissingFilesError struct{ SHAs []string }

func (e *MissingFilesError) Error() string {
	return fmt.Sprintf("vercel: %d file(s) of the deployment are not uploaded", len(e.SHAs))
}

// CreateDeployment creates a production deployment of project from files
// already uploaded, carrying meta (Vercel's deployment metadata, which a
// list can filter on); a *MissingFilesError lists the files Vercel lacks.
func (c *Client) CreateDeployment(ctx context.Context, name, project string, meta map[string]string, files []DeploymentFile) (*Deployment, error) {
	in := struct {
		Name    string            `json:"name"`
		Project string            `json:"project"`
		Target  string            `json:"target"`
		Meta    map[string]string `json:"meta,omitempty"`
		Files   []DeploymentFile  `json:"files"`
	}{name, project, "production", meta, files}
	var out Deployment
	_, err := c.send(ctx, http.MethodPost, "/v13/deployments", url.Values{"skipAutoDetectionConfirmation": {"1"}}, in, &out,
		http.StatusOK, http.StatusCreated)
	if _, code, missing := decodeError(err); code == "missing_files" && len(missing) > 0 {
		return nil, &MissingFilesError{SHAs: missing}
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// GetDeployment reads a deployment; ErrNotFound when it is gone.
func (c *Client) GetDeployment(ctx context.Context, id string) (*Deployment, error) {
	return get[Deployment](ctx, c, "/v13/deployments/"+url.PathEscape(id))
}

// ListedDeployment is a deployment as GET /v6/deployments lists it (the
// fields read here).
type ListedDeployment struct {
	UID        string            `json:"uid"`
	State      string            `json:"state"` // as ReadyState
	ReadyState string            `json:"readyState"`
	Target     string            `json:"target"`
	Created    int64             `json:"created"`
	Meta       map[string]string `json:"meta"`
}

// Status is the deployment's state, whichever field the answer filled.
func (d ListedDeployment) Status() string {
	if d.ReadyState != "" {
		return d.ReadyState
	}
	return d.State
}

// DeploymentQuery filters a deployment list; empty fields filter nothing.
type DeploymentQuery struct {
	ProjectID string
	Target    string
	// States are readyState values, any of which matches.
	States []string
	// Meta are key/values every listed deployment's meta holds
	// (meta-<key>=<value>, as Vercel's CLI filters).
	Meta map[string]string
	// Limit bounds the list (zero: Vercel's default, 20).
	Limit int
}

// Deployments lists the deployments q matches, newest first (one page).
func (c *Client) Deployments(ctx context.Context, q DeploymentQuery) ([]ListedDeployment, error) {
	v := url.Values{}
	if q.ProjectID != "" {
		v.Set("projectId", q.ProjectID)
	}
	if q.Target != "" {
		v.Set("target", q.Target)
	}
	if len(q.States) > 0 {
		v.Set("state", strings.Join(q.States, ","))
	}
	for k, val := range q.Meta {
		v.Set("meta-"+k, val)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out struct {
		Deployments []ListedDeployment `json:"deployments"`
	}
	_, err := c.send(ctx, http.MethodGet, "/v6/deployments", v, nil, &out, http.StatusOK)
	return out.Deployments, err
}

// Event is one build event of a deployment.
type Event struct {
	Type    string `json:"type"` // stdout | stderr | command | ...
	Created int64  `json:"created"`
	Text    string `json:"text"`
}

// Events are the deployment's build events so far, oldest first.
func (c *Client) Events(ctx context.Context, id string) ([]Event, error) {
	var out []Event
	_, err := c.send(ctx, http.MethodGet, "/v3/deployments/"+url.PathEscape(id)+"/events", url.Values{"builds": {"1"}}, nil, &out, http.StatusOK)
	return out, err
}
