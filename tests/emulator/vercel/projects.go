package vercel

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// The projects part of Vercel's REST API (the web UI on Vercel): projects
// with their build settings, their environment variables and domains. Each
// project belongs to the token's team; a name is unique in a team. Routes
// and shapes are Vercel's documented ones (POST /v11/projects, GET, PATCH and
// DELETE /v9/projects/{idOrName}, GET and POST /v10/projects/{idOrName}/env,
// PATCH and DELETE /v9/projects/{idOrName}/env/{id}, POST
// /v10/projects/{idOrName}/domains); the error codes and statuses are
// marked in docs/emulator.md as documented or assumed.

// project is one project and what hangs off it.
type project struct {
	ID             string   `json:"id"`
	Team           string   `json:"team"`
	Name           string   `json:"name"`
	Framework      *string  `json:"framework"`
	RootDirectory  *string  `json:"rootDirectory"`
	InstallCommand *string  `json:"installCommand"`
	BuildCommand   *string  `json:"buildCommand"`
	Env            []*env   `json:"env"`
	Domains        []string `json:"domains,omitempty"`
	CreatedAt      int64    `json:"createdAt"`
	UpdatedAt      int64    `json:"updatedAt"`
}

// env is one environment variable. A sensitive value is kept (a build
// reads it) but never answered.
type env struct {
	ID        string   `json:"id"`
	Key       string   `json:"key"`
	Value     string   `json:"value"`
	Type      string   `json:"type"`
	Target    []string `json:"target"`
	CreatedAt int64    `json:"createdAt"`
	UpdatedAt int64    `json:"updatedAt"`
}

var (
	// projectName is Vercel's rule for a project name (lower case, digits
	// and . _ -, at most 100 characters, no "---").
	projectName = regexp.MustCompile(`^[a-z0-9._-]{1,100}$`)
	envKey      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	envTypes    = []string{"plain", "encrypted", "sensitive", "secret", "system"}
	envTargets  = []string{"production", "preview", "development"}
	frameworks  = []string{"nextjs", "vite", "remix", "astro", "nuxtjs", "sveltekit", "gatsby", "create-react-app"}
)

func str(v *string) string {
	if v == nil {
		return ""
	}
	return *v
}

// json answers a project as GET /v9/projects does (the fields a client
// reads), its newest deployments (at most 10) among them.
func (s *Service) projectJSON(p *project) map[string]any {
	var ds []*deployment
	for _, d := range s.st.Deployments {
		if d.Project == p.ID {
			ds = append(ds, d)
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].CreatedAt > ds[j].CreatedAt })
	latest := []map[string]any{}
	for _, d := range ds[:min(len(ds), 10)] {
		latest = append(latest, map[string]any{"id": d.ID, "url": d.Host, "target": d.Target, "createdAt": d.CreatedAt})
	}
	return map[string]any{"id": p.ID, "name": p.Name, "accountId": p.Team, "framework": p.Framework,
		"rootDirectory": p.RootDirectory, "installCommand": p.InstallCommand, "buildCommand": p.BuildCommand,
		"createdAt": p.CreatedAt, "updatedAt": p.UpdatedAt, "latestDeployments": latest}
}

// json answers a variable; a sensitive one without its value, as Vercel
// never returns one.
func (e *env) json() map[string]any {
	m := map[string]any{"id": e.ID, "key": e.Key, "type": e.Type, "target": e.Target, "createdAt": e.CreatedAt,
		"updatedAt": e.UpdatedAt, "value": e.Value}
	if e.Type == "sensitive" {
		m["value"] = ""
	}
	return m
}

// projectLocked finds a team's project by ID or name.
func (s *Service) projectLocked(team, idOrName string) (*project, error) {
	if p, ok := s.st.Projects[idOrName]; ok && p.Team == team {
		return p, nil
	}
	for _, p := range s.st.Projects {
		if p.Team == team && p.Name == idOrName {
			return p, nil
		}
	}
	return nil, notFound("Project not found")
}

// settings are the build settings a create or update may carry.
type settings struct {
	Framework      *string `json:"framework"`
	RootDirectory  *string `json:"rootDirectory"`
	InstallCommand *string `json:"installCommand"`
	BuildCommand   *string `json:"buildCommand"`
}

func (st settings) check() error {
	if f := st.Framework; f != nil && *f != "" && !slices.Contains(frameworks, *f) {
		return badRequest("Invalid request: `framework` should be equal to one of the allowed values")
	}
	if d := st.RootDirectory; d != nil && (strings.HasPrefix(*d, "/") || strings.Contains(*d, "..")) {
		return badRequest("Invalid request: `rootDirectory` must be a relative path inside the repository")
	}
	return nil
}

func (st settings) apply(p *project) {
	if st.Framework != nil {
		p.Framework = st.Framework
	}
	if st.RootDirectory != nil {
		p.RootDirectory = st.RootDirectory
	}
	if st.InstallCommand != nil {
		p.InstallCommand = st.InstallCommand
	}
	if st.BuildCommand != nil {
		p.BuildCommand = st.BuildCommand
	}
}

// createProject is POST /v11/projects {name, framework?, rootDirectory?,
// installCommand?, buildCommand?}: 409 conflict when the team has a
// project of that name.
func (s *Service) createProject(w http.ResponseWriter, r *http.Request, team string) {
	var req struct {
		Name string `json:"name"`
		settings
	}
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if !projectName.MatchString(req.Name) || strings.Contains(req.Name, "---") {
		writeError(w, badRequest("Invalid request: `name` must be at most 100 lower-case letters, digits, '.', '_' or '-', without '---'"))
		return
	}
	if err := req.settings.check(); err != nil {
		writeError(w, err)
		return
	}
	now := nowMillis()
	s.mu.Lock()
	if _, err := s.projectLocked(team, req.Name); err == nil {
		s.mu.Unlock()
		writeError(w, errorf(http.StatusConflict, "conflict", "A project with the name %q already exists.", req.Name))
		return
	}
	p := &project{ID: newID("prj"), Team: team, Name: req.Name, Env: []*env{}, CreatedAt: now, UpdatedAt: now}
	req.settings.apply(p)
	s.st.Projects[p.ID] = p
	body := s.projectJSON(p)
	s.mu.Unlock()
	s.saveAndAnswer(w, http.StatusOK, body)
}

// getProject is GET /v9/projects/{idOrName}.
func (s *Service) getProject(w http.ResponseWriter, r *http.Request, team string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.projectLocked(team, r.PathValue("idOrName"))
	if err != nil {
		writeError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, s.projectJSON(p))
}

// updateProject is PATCH /v9/projects/{idOrName} with build settings.
func (s *Service) updateProject(w http.ResponseWriter, r *http.Request, team string) {
	var req settings
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := req.check(); err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	p, err := s.projectLocked(team, r.PathValue("idOrName"))
	if err != nil {
		s.mu.Unlock()
		writeError(w, err)
		return
	}
	req.apply(p)
	p.UpdatedAt = nowMillis()
	body := s.projectJSON(p)
	s.mu.Unlock()
	s.saveAndAnswer(w, http.StatusOK, body)
}

// deleteProject is DELETE /v9/projects/{idOrName}: the project, its
// variables, domains and deployments go; 204.
func (s *Service) deleteProject(w http.ResponseWriter, r *http.Request, team string) {
	s.mu.Lock()
	p, err := s.projectLocked(team, r.PathValue("idOrName"))
	if err != nil {
		s.mu.Unlock()
		writeError(w, err)
		return
	}
	delete(s.st.Projects, p.ID)
	for id, d := range s.st.Deployments {
		if d.Project == p.ID {
			delete(s.st.Deployments, id)
		}
	}
	s.mu.Unlock()
	s.saveAndAnswer(w, http.StatusNoContent, nil)
}

// listEnv is GET /v10/projects/{idOrName}/env: {envs: [...]}, sorted by key.
func (s *Service) listEnv(w http.ResponseWriter, r *http.Request, team string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.projectLocked(team, r.PathValue("idOrName"))
	if err != nil {
		writeError(w, err)
		return
	}
	envs := []map[string]any{}
	for _, e := range p.Env {
		envs = append(envs, e.json())
	}
	sort.Slice(envs, func(i, j int) bool { return envs[i]["key"].(string) < envs[j]["key"].(string) })
	core.WriteJSON(w, http.StatusOK, map[string]any{"envs": envs})
}

type envRequest struct {
	Key    string   `json:"key"`
	Value  *string  `json:"value"`
	Type   string   `json:"type"`
	Target []string `json:"target"`
}

func (e envRequest) check(create bool) error {
	if create && !envKey.MatchString(e.Key) {
		return badRequest("Invalid request: `key` %q is not a valid environment variable name", e.Key)
	}
	if create && e.Value == nil {
		return badRequest("Invalid request: missing required property `value`")
	}
	if e.Type != "" && !slices.Contains(envTypes, e.Type) {
		return badRequest("Invalid request: `type` should be equal to one of the allowed values")
	}
	if create && len(e.Target) == 0 {
		return badRequest("Invalid request: missing required property `target`")
	}
	for _, t := range e.Target {
		if !slices.Contains(envTargets, t) {
			return badRequest("Invalid request: `target` %q should be production, preview or development", t)
		}
	}
	if e.Type == "sensitive" && slices.Contains(e.Target, "development") {
		return badRequest("Invalid request: a sensitive variable cannot target development")
	}
	return nil
}

// conflictLocked is the variable of p with key sharing a target with
// targets, other than skip.
func (p *project) conflictLocked(key string, targets []string, skip string) *env {
	for _, e := range p.Env {
		if e.Key != key || e.ID == skip {
			continue
		}
		for _, t := range targets {
			if slices.Contains(e.Target, t) {
				return e
			}
		}
	}
	return nil
}

// createEnv is POST /v10/projects/{idOrName}/env with one variable (or an
// array): 400 ENV_CONFLICT when the key is already set for one of its
// targets, unless ?upsert=true, which updates that variable instead.
func (s *Service) createEnv(w http.ResponseWriter, r *http.Request, team string) {
	var raw json.RawMessage
	if err := decodeBody(w, r, &raw); err != nil {
		writeError(w, err)
		return
	}
	// One variable is an object, several an array.
	var many []envRequest
	single := !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("["))
	if single {
		var one envRequest
		if err := json.Unmarshal(raw, &one); err != nil {
			writeError(w, badRequest("invalid JSON body: %v", err))
			return
		}
		many = []envRequest{one}
	} else if err := json.Unmarshal(raw, &many); err != nil || len(many) == 0 {
		writeError(w, badRequest("Invalid request: the body must be one variable or a non-empty array of them"))
		return
	}
	for _, e := range many {
		if err := e.check(true); err != nil {
			writeError(w, err)
			return
		}
	}
	upsert := r.URL.Query().Get("upsert") == "true"
	now := nowMillis()
	s.mu.Lock()
	p, err := s.projectLocked(team, r.PathValue("idOrName"))
	if err != nil {
		s.mu.Unlock()
		writeError(w, err)
		return
	}
	var created []map[string]any
	for _, req := range many {
		typ := req.Type
		if typ == "" {
			typ = "encrypted"
		}
		if old := p.conflictLocked(req.Key, req.Target, ""); old != nil {
			if !upsert {
				s.mu.Unlock()
				writeError(w, errorf(http.StatusBadRequest, "ENV_CONFLICT",
					"A variable with the name `%s` already exists for the target %s", req.Key, strings.Join(old.Target, ", ")))
				return
			}
			old.Value, old.Type, old.Target, old.UpdatedAt = *req.Value, typ, slices.Clone(req.Target), now
			created = append(created, old.json())
			continue
		}
		e := &env{ID: newID("env"), Key: req.Key, Value: *req.Value, Type: typ, Target: slices.Clone(req.Target), CreatedAt: now, UpdatedAt: now}
		p.Env = append(p.Env, e)
		created = append(created, e.json())
	}
	p.UpdatedAt = now
	s.mu.Unlock()
	var answer any = created
	if single {
		answer = created[0]
	}
	s.saveAndAnswer(w, http.StatusCreated, map[string]any{"created": answer, "failed": []any{}})
}

// updateEnv is PATCH /v9/projects/{idOrName}/env/{id} {value?, type?,
// target?}: in place, the ID kept.
func (s *Service) updateEnv(w http.ResponseWriter, r *http.Request, team string) {
	var req envRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := req.check(false); err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	p, err := s.projectLocked(team, r.PathValue("idOrName"))
	if err != nil {
		s.mu.Unlock()
		writeError(w, err)
		return
	}
	i := slices.IndexFunc(p.Env, func(e *env) bool { return e.ID == r.PathValue("id") })
	if i < 0 {
		s.mu.Unlock()
		writeError(w, notFound("Environment variable not found"))
		return
	}
	e := p.Env[i]
	if req.Target != nil {
		if old := p.conflictLocked(e.Key, req.Target, e.ID); old != nil {
			s.mu.Unlock()
			writeError(w, errorf(http.StatusBadRequest, "ENV_CONFLICT",
				"A variable with the name `%s` already exists for the target %s", e.Key, strings.Join(old.Target, ", ")))
			return
		}
		e.Target = slices.Clone(req.Target)
	}
	if req.Value != nil {
		e.Value = *req.Value
	}
	if req.Type != "" {
		e.Type = req.Type
	}
	e.UpdatedAt = nowMillis()
	body := e.json()
	s.mu.Unlock()
	s.saveAndAnswer(w, http.StatusOK, body)
}

// deleteEnv is DELETE /v9/projects/{idOrName}/env/{id}.
func (s *Service) deleteEnv(w http.ResponseWriter, r *http.Request, team string) {
	s.mu.Lock()
	p, err := s.projectLocked(team, r.PathValue("idOrName"))
	if err != nil {
		s.mu.Unlock()
		writeError(w, err)
		return
	}
	i := slices.IndexFunc(p.Env, func(e *env) bool { return e.ID == r.PathValue("id") })
	if i < 0 {
		s.mu.Unlock()
		writeError(w, notFound("Environment variable not found"))
		return
	}
	body := p.Env[i].json()
	p.Env = slices.Delete(p.Env, i, i+1)
	s.mu.Unlock()
	s.saveAndAnswer(w, http.StatusOK, body)
}

// hostnamePattern is a lower-case DNS name of at least two labels.
var hostnamePattern = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)

// addDomain is POST /v10/projects/{idOrName}/domains {name}: 409
// domain_already_in_use_by_project when this project has it, 409
// domain_already_in_use when another project of any team has it.
func (s *Service) addDomain(w http.ResponseWriter, r *http.Request, team string) {
	var req struct {
		Name string `json:"name"`
	}
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if !hostnamePattern.MatchString(req.Name) {
		writeError(w, badRequest("Invalid request: `name` %q is not a domain", req.Name))
		return
	}
	s.mu.Lock()
	p, err := s.projectLocked(team, r.PathValue("idOrName"))
	if err != nil {
		s.mu.Unlock()
		writeError(w, err)
		return
	}
	for _, other := range s.st.Projects {
		if slices.Contains(other.Domains, req.Name) {
			s.mu.Unlock()
			if other == p {
				writeError(w, errorf(http.StatusConflict, "domain_already_in_use_by_project", "The domain %s is already assigned to this project", req.Name))
			} else {
				writeError(w, errorf(http.StatusConflict, "domain_already_in_use", "The domain %s is already in use by another project", req.Name))
			}
			return
		}
	}
	p.Domains = append(p.Domains, req.Name)
	s.mu.Unlock()
	s.saveAndAnswer(w, http.StatusOK, map[string]any{"name": req.Name, "projectId": p.ID, "verified": true})
}

// saveAndAnswer persists, then answers body with status (no body for 204).
func (s *Service) saveAndAnswer(w http.ResponseWriter, status int, body any) {
	if err := s.save(); err != nil {
		writeError(w, err)
		return
	}
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	core.WriteJSON(w, status, body)
}
