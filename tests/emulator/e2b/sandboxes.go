package e2b

import (
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

func (s *Service) registerSandboxes() {
	s.route("POST /sandboxes", false, s.createSandbox)
	s.route("GET /v2/sandboxes", false, s.listSandboxes)
	s.route("GET /sandboxes/{id}", false, s.getSandbox)
	s.route("POST /sandboxes/{id}/timeout", false, s.setTimeout)
	s.route("POST /sandboxes/{id}/pause", false, s.pauseSandbox)
	s.route("POST /sandboxes/{id}/connect", false, s.connectSandbox)
	s.route("DELETE /sandboxes/{id}", false, s.killSandbox)
}

// Timeouts as E2B applies them: 15 s when the create names none, at most
// 24 hours (the Pro tier's limit).
const (
	defaultSandboxTimeout = 15
	maxSandboxTimeout     = 24 * 60 * 60
)

// envdVersion is what every sandbox reports its envd as; upstream's client
// only passes it on.
const envdVersion = "0.2.0"

// createSandbox is POST /sandboxes: a sandbox from the template's newest
// ready build (the template named by ID or alias, as upstream's pre-warm and
// control plane pass it). 201 with the create shape the SDKs parse; 404 when
// the team has no such template or it has no ready build, as E2B refuses a
// spawn from a template that never built.
func (s *Service) createSandbox(w http.ResponseWriter, r *http.Request, team string) {
	var body struct {
		TemplateID string            `json:"templateID"`
		Timeout    *int              `json:"timeout"`
		Metadata   map[string]string `json:"metadata"`
		EnvVars    map[string]string `json:"envVars"`
		Secure     bool              `json:"secure"`
		AutoPause  bool              `json:"autoPause"`
	}
	if err := decode(w, r, &body); err != nil {
		writeError(w, err)
		return
	}
	if body.TemplateID == "" {
		writeError(w, errorf(http.StatusBadRequest, "templateID is required"))
		return
	}
	timeout, err := sandboxTimeout(body.Timeout)
	if err != nil {
		writeError(w, err)
		return
	}
	now := time.Now().UTC()
	s.mu.Lock()
	t := s.lookupLocked(team, body.TemplateID)
	if t == nil {
		s.mu.Unlock()
		writeError(w, errorf(http.StatusNotFound, "template '%s' not found", body.TemplateID))
		return
	}
	if s.readyBuildLocked(t, now) == nil {
		s.mu.Unlock()
		writeError(w, errorf(http.StatusNotFound, "template '%s' has no successful build", body.TemplateID))
		return
	}
	sb := &sandbox{ID: newSandboxID(), Team: team, TemplateID: t.ID, Alias: t.Name, State: "running",
		Metadata: map[string]string{}, StartedAt: now, EndAt: now.Add(timeout), AutoPause: body.AutoPause, Secure: body.Secure}
	for k, v := range body.Metadata {
		sb.Metadata[k] = v
	}
	for k := range body.EnvVars {
		sb.EnvVarNames = append(sb.EnvVarNames, k)
	}
	sort.Strings(sb.EnvVarNames)
	s.st.Sandboxes[sb.ID] = sb
	answer := createdJSON(sb)
	s.mu.Unlock()
	if err := s.save(); err != nil {
		writeError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusCreated, answer)
}

func sandboxTimeout(seconds *int) (time.Duration, error) {
	if seconds == nil {
		return defaultSandboxTimeout * time.Second, nil
	}
	if *seconds < 0 || *seconds > maxSandboxTimeout {
		return 0, errorf(http.StatusBadRequest, "timeout must be between 0 and %d seconds, not %d", maxSandboxTimeout, *seconds)
	}
	return time.Duration(*seconds) * time.Second, nil
}

// readyBuildLocked is the template's newest ready build: a newer build still
// running does not stop sandboxes from starting on the last good one.
func (s *Service) readyBuildLocked(t *template, now time.Time) *build {
	for i := len(t.Builds) - 1; i >= 0; i-- {
		if b := s.st.Builds[t.Builds[i]]; b != nil && b.status(now) == statusReady {
			return b
		}
	}
	return nil
}

// createdJSON is the Sandbox shape create and connect answer with.
func createdJSON(sb *sandbox) map[string]any {
	out := map[string]any{"sandboxID": sb.ID, "templateID": sb.TemplateID, "clientID": "emulator", "envdVersion": envdVersion}
	if sb.Alias != "" {
		out["alias"] = sb.Alias
	}
	if sb.Secure {
		// Not a credential anything checks: the emulator runs no envd.
		out["envdAccessToken"] = "emulator-envd-" + sb.ID
	}
	return out
}

// detailJSON is the SandboxDetail shape get and list answer with.
func detailJSON(sb *sandbox) map[string]any {
	end := sb.EndAt
	if end.IsZero() {
		end = sb.StartedAt.Add(idleTimeout)
	}
	e := createdJSON(sb)
	for k, v := range map[string]any{
		"state": sb.State, "cpuCount": 2, "memoryMB": 4096, "diskSizeMB": 10240,
		"startedAt": sb.StartedAt.Format(time.RFC3339Nano), "endAt": end.Format(time.RFC3339Nano), "metadata": sb.Metadata,
	} {
		e[k] = v
	}
	return e
}

// idleTimeout is how long a sandbox a test added says it has left: such
// sandboxes never time out.
const idleTimeout = time.Hour

// expireLocked applies timeouts as of now: a running sandbox past its end
// is paused (autoPause) or gone. It reports whether anything changed.
func (s *Service) expireLocked(now time.Time) bool {
	changed := false
	for id, sb := range s.st.Sandboxes {
		if sb.State != "running" || sb.EndAt.IsZero() || now.Before(sb.EndAt) {
			continue
		}
		changed = true
		if sb.AutoPause {
			sb.State = "paused"
			continue
		}
		delete(s.st.Sandboxes, id)
	}
	return changed
}

// sandboxLocked is the team's sandbox id after timeouts, or E2B's 404.
func (s *Service) sandboxLocked(team, id string, now time.Time) (*sandbox, error) {
	s.expireLocked(now)
	sb, ok := s.st.Sandboxes[id]
	if !ok || sb.Team != team {
		return nil, errorf(http.StatusNotFound, "sandbox '%s' not found", id)
	}
	return sb, nil
}

func (s *Service) getSandbox(w http.ResponseWriter, r *http.Request, team string) {
	s.mu.Lock()
	sb, err := s.sandboxLocked(team, r.PathValue("id"), time.Now().UTC())
	var answer map[string]any
	if err == nil {
		answer = detailJSON(sb)
	}
	s.mu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, answer)
}

// setTimeout is POST /sandboxes/{id}/timeout: the sandbox ends timeout
// seconds from now (204).
func (s *Service) setTimeout(w http.ResponseWriter, r *http.Request, team string) {
	var body struct {
		Timeout *int `json:"timeout"`
	}
	if err := decode(w, r, &body); err != nil {
		writeError(w, err)
		return
	}
	if body.Timeout == nil {
		writeError(w, errorf(http.StatusBadRequest, "timeout is required"))
		return
	}
	s.mutate(w, r, team, func(sb *sandbox, now time.Time) (int, any, error) {
		d, err := sandboxTimeout(body.Timeout)
		if err != nil {
			return 0, nil, err
		}
		if sb.State != "running" {
			return 0, nil, errorf(http.StatusConflict, "sandbox '%s' is paused", sb.ID)
		}
		sb.EndAt = now.Add(d)
		return http.StatusNoContent, nil, nil
	})
}

// pauseSandbox is POST /sandboxes/{id}/pause: 204, or 409 when it is
// paused already.
func (s *Service) pauseSandbox(w http.ResponseWriter, r *http.Request, team string) {
	s.mutate(w, r, team, func(sb *sandbox, _ time.Time) (int, any, error) {
		if sb.State == "paused" {
			return 0, nil, errorf(http.StatusConflict, "sandbox '%s' is already paused", sb.ID)
		}
		sb.State = "paused"
		return http.StatusNoContent, nil, nil
	})
}

// connectSandbox is POST /sandboxes/{id}/connect {timeout}: a paused
// sandbox resumes (201), a running one is kept at least timeout seconds
// longer (200); both answer with the create shape.
func (s *Service) connectSandbox(w http.ResponseWriter, r *http.Request, team string) {
	var body struct {
		Timeout *int `json:"timeout"`
	}
	if err := decode(w, r, &body); err != nil {
		writeError(w, err)
		return
	}
	s.mutate(w, r, team, func(sb *sandbox, now time.Time) (int, any, error) {
		d, err := sandboxTimeout(body.Timeout)
		if err != nil {
			return 0, nil, err
		}
		status := http.StatusOK
		if sb.State == "paused" {
			sb.State, status = "running", http.StatusCreated
			sb.EndAt = now.Add(d)
		} else if end := now.Add(d); sb.EndAt.IsZero() || end.After(sb.EndAt) {
			sb.EndAt = end
		}
		return status, createdJSON(sb), nil
	})
}

// mutate runs change on the team's sandbox under the lock, saves, and
// answers with what change returned (no body for 204).
func (s *Service) mutate(w http.ResponseWriter, r *http.Request, team string, change func(*sandbox, time.Time) (int, any, error)) {
	now := time.Now().UTC()
	s.mu.Lock()
	sb, err := s.sandboxLocked(team, r.PathValue("id"), now)
	var status int
	var answer any
	if err == nil {
		status, answer, err = change(sb, now)
	}
	s.mu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	if err := s.save(); err != nil {
		writeError(w, err)
		return
	}
	if answer == nil {
		w.WriteHeader(status)
		return
	}
	core.WriteJSON(w, status, answer)
}

// listSandboxes is GET /v2/sandboxes?state=running,paused&metadata=k%3Dv:
// the team's sandboxes in those states whose metadata has every pair.
func (s *Service) listSandboxes(w http.ResponseWriter, r *http.Request, team string) {
	q := r.URL.Query()
	states := map[string]bool{}
	for _, v := range q["state"] {
		for _, st := range strings.Split(v, ",") {
			if st != "running" && st != "paused" {
				writeError(w, errorf(http.StatusBadRequest, "invalid state %q", st))
				return
			}
			states[st] = true
		}
	}
	var want url.Values
	if m := q.Get("metadata"); m != "" {
		var err error
		if want, err = url.ParseQuery(m); err != nil {
			writeError(w, errorf(http.StatusBadRequest, "invalid metadata filter: %v", err))
			return
		}
	}
	s.mu.Lock()
	s.expireLocked(time.Now().UTC())
	out := []map[string]any{}
	for _, id := range core.SortedKeys(s.st.Sandboxes) {
		sb := s.st.Sandboxes[id]
		if sb.Team != team || len(states) > 0 && !states[sb.State] || !matches(sb.Metadata, want) {
			continue
		}
		out = append(out, detailJSON(sb))
	}
	s.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i]["startedAt"].(string) < out[j]["startedAt"].(string) })
	core.WriteJSON(w, http.StatusOK, out)
}

func matches(have map[string]string, want url.Values) bool {
	for k, vs := range want {
		for _, v := range vs {
			if have[k] != v {
				return false
			}
		}
	}
	return true
}

func (s *Service) killSandbox(w http.ResponseWriter, r *http.Request, team string) {
	s.mutate(w, r, team, func(sb *sandbox, _ time.Time) (int, any, error) {
		delete(s.st.Sandboxes, sb.ID)
		return http.StatusNoContent, nil, nil
	})
}

// SandboxSpec is a sandbox a test adds directly (as a session would have
// started it): the template by ID or name, its state and metadata.
type SandboxSpec struct {
	Team     string            `json:"team"` // "" = DefaultTeamID
	Template string            `json:"template"`
	State    string            `json:"state"` // "" = running
	Metadata map[string]string `json:"metadata"`
}

// ErrNoSuchTemplate is returned for a template the team does not have.
var ErrNoSuchTemplate = errors.New("emulator: no such E2B template")

// CreateSandbox adds a sandbox and returns its ID.
func (s *Service) CreateSandbox(spec SandboxSpec) (string, error) {
	if spec.Team == "" {
		spec.Team = DefaultTeamID
	}
	if spec.State == "" {
		spec.State = "running"
	}
	if spec.State != "running" && spec.State != "paused" {
		return "", errors.New("emulator: a sandbox is running or paused, not " + spec.State)
	}
	s.mu.Lock()
	t := s.lookupLocked(spec.Team, spec.Template)
	var id string
	if t != nil {
		id = newSandboxID()
		md := map[string]string{}
		for k, v := range spec.Metadata {
			md[k] = v
		}
		s.st.Sandboxes[id] = &sandbox{ID: id, Team: spec.Team, TemplateID: t.ID, Alias: t.Name, State: spec.State, Metadata: md, StartedAt: time.Now().UTC()}
	}
	s.mu.Unlock()
	if t == nil {
		return "", ErrNoSuchTemplate
	}
	return id, s.save()
}

// CreateTemplate adds a template with no build under name for team ("" =
// DefaultTeamID), as one made elsewhere (upstream's own script, another
// installation) would be, and returns its ID; an existing one is returned
// as it is.
func (s *Service) CreateTemplate(team, name string) (string, error) {
	if team == "" {
		team = DefaultTeamID
	}
	now := time.Now().UTC()
	s.mu.Lock()
	t := s.lookupLocked(team, name)
	if t == nil {
		t = &template{ID: newTemplateID(), Team: team, Name: name, CreatedAt: now, UpdatedAt: now}
		s.st.Templates[t.ID] = t
	}
	s.mu.Unlock()
	return t.ID, s.save()
}
