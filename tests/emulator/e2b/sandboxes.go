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
	s.route("GET /v2/sandboxes", false, s.listSandboxes)
	s.route("DELETE /sandboxes/{id}", false, s.killSandbox)
}

// sandboxTimeout is how long a listed sandbox says it has left (E2B's
// endAt); sandboxes here never run anything and never time out.
const sandboxTimeout = time.Hour

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
	out := []map[string]any{}
	for _, id := range core.SortedKeys(s.st.Sandboxes) {
		sb := s.st.Sandboxes[id]
		if sb.Team != team || len(states) > 0 && !states[sb.State] || !matches(sb.Metadata, want) {
			continue
		}
		e := map[string]any{
			"sandboxID": sb.ID, "clientID": "emulator", "templateID": sb.TemplateID, "state": sb.State,
			"cpuCount": 2, "memoryMB": 4096, "diskSizeMB": 10240, "envdVersion": "0.2.0",
			"startedAt": sb.StartedAt.Format(time.RFC3339Nano), "endAt": sb.StartedAt.Add(sandboxTimeout).Format(time.RFC3339Nano),
			"metadata": sb.Metadata,
		}
		if sb.Alias != "" {
			e["alias"] = sb.Alias
		}
		out = append(out, e)
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
	id := r.PathValue("id")
	s.mu.Lock()
	sb, ok := s.st.Sandboxes[id]
	if ok && sb.Team == team {
		delete(s.st.Sandboxes, id)
	}
	s.mu.Unlock()
	if !ok || sb.Team != team {
		writeError(w, errorf(http.StatusNotFound, "sandbox '%s' not found", id))
		return
	}
	if err := s.save(); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
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
