package daytona

import (
	"encoding/json"
	"maps"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

func (s *Service) registerDaytonaSandboxes() {
	s.daytonaRoute("POST /sandbox", s.dtCreateSandbox)
	s.daytonaRoute("GET /sandbox", s.dtListSandboxes)
	s.daytonaRoute("GET /sandbox/paginated", s.dtListSandboxesPaginated)
	s.daytonaRoute("GET /sandbox/{sandboxIdOrName}", s.dtGetSandbox)
	s.daytonaRoute("DELETE /sandbox/{sandboxIdOrName}", s.dtDeleteSandbox)
}

// Sandbox defaults from Daytona's sandbox service.
const (
	dtSandboxUser   = "daytona"
	dtSandboxTarget = "us"
)

// sandboxJSON renders a sandbox with every key api-client-go's Sandbox
// model requires. The toolbox proxy URL points at the emulator, which does
// not serve the toolbox API: sandboxes here never run anything.
func (sb *dtSandbox) json(r *http.Request) map[string]any {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	out := map[string]any{
		"id":                  sb.ID,
		"organizationId":      sb.OrganizationID,
		"name":                sb.Name,
		"user":                sb.User,
		"env":                 nonNilMap(sb.Env),
		"labels":              nonNilMap(sb.Labels),
		"public":              sb.Public,
		"networkBlockAll":     sb.NetworkBlockAll,
		"target":              sb.Target,
		"cpu":                 sb.CPU,
		"gpu":                 sb.GPU,
		"memory":              sb.Memory,
		"disk":                sb.Disk,
		"state":               sb.State,
		"desiredState":        "started",
		"autoStopInterval":    15,
		"autoArchiveInterval": 10080,
		"autoDeleteInterval":  -1,
		"volumes":             []any{},
		"class":               "small",
		"createdAt":           dtTime(sb.CreatedAt),
		"updatedAt":           dtTime(sb.UpdatedAt),
		"toolboxProxyUrl":     scheme + "://" + r.Host + daytonaPrefix + "toolbox",
	}
	if sb.Snapshot != "" {
		out["snapshot"] = sb.Snapshot
	}
	if sb.State == "destroying" {
		out["desiredState"] = "destroyed"
	}
	return out
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// SandboxSpec describes a sandbox made with CreateSandbox.
type SandboxSpec struct {
	// OrganizationID defaults to DefaultOrganizationID.
	OrganizationID string `json:"organizationId,omitempty"`
	// Name defaults to the sandbox's ID, as in Daytona.
	Name string `json:"name,omitempty"`
	// Snapshot is recorded as given; it need not exist.
	Snapshot string            `json:"snapshot,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
}

// CreateSandbox makes a started sandbox directly, the way a control
// plane would have, and returns its ID.
func (s *Service) CreateSandbox(spec SandboxSpec) (string, error) {
	if spec.OrganizationID == "" {
		spec.OrganizationID = DefaultOrganizationID
	}
	d := s
	d.mu.Lock()
	sb, err := d.addSandboxLocked(spec.OrganizationID, spec.Name, spec.Snapshot, spec.Labels, nil, time.Now())
	d.mu.Unlock()
	if err != nil {
		return "", err
	}
	if err := d.save(); err != nil {
		return "", err
	}
	return sb.ID, nil
}

func (d *Service) addSandboxLocked(org, name, snapshot string, labels, env map[string]string, now time.Time) (*dtSandbox, error) {
	id := core.NewUUID()
	if name == "" {
		name = id
	}
	for _, other := range d.st.Sandboxes {
		if other.OrganizationID == org && other.Name == name {
			// Inferred wording; Daytona enforces unique names per organization.
			return nil, dtErrorf(http.StatusConflict, "Sandbox with name %s already exists", name)
		}
	}
	sb := &dtSandbox{ID: id, OrganizationID: org, Name: name, Snapshot: snapshot, User: dtSandboxUser,
		Env: copyMap(env), Labels: copyMap(labels), Target: dtSandboxTarget, CPU: dtDefaultCPU, Memory: dtDefaultMem,
		Disk: dtDefaultDisk, State: "started", CreatedAt: now.UTC(), UpdatedAt: now.UTC()}
	d.st.Sandboxes[id] = sb
	return sb, nil
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	maps.Copy(out, m)
	return out
}

type dtCreateSandboxBody struct {
	Name      string            `json:"name"`
	Snapshot  string            `json:"snapshot"`
	User      string            `json:"user"`
	Env       map[string]string `json:"env"`
	Labels    map[string]string `json:"labels"`
	Public    bool              `json:"public"`
	Target    string            `json:"target"`
	BuildInfo json.RawMessage   `json:"buildInfo"`
}

// dtCreateSandbox creates a started sandbox from an active snapshot, with
// Daytona's refusals for a missing or unready one. Sandboxes built from an
// image (buildInfo) are not emulated.
func (s *Service) dtCreateSandbox(w http.ResponseWriter, r *http.Request, org string) {
	var body dtCreateSandboxBody
	if err := decodeDaytona(w, r, &body); err != nil {
		writeDaytonaError(w, r, err)
		return
	}
	d := s
	now := time.Now()
	d.mu.Lock()
	d.reapLocked(now)
	var out map[string]any
	err := func() error {
		if len(body.BuildInfo) > 0 && string(body.BuildInfo) != "null" {
			return dtErrorf(http.StatusBadRequest, "the emulator does not build sandboxes from an image; create a snapshot first")
		}
		if strings.TrimSpace(body.Snapshot) == "" {
			return dtErrorf(http.StatusBadRequest, "the emulator has no default snapshot; name one")
		}
		sn := d.lookupLocked(org, body.Snapshot)
		if sn == nil {
			return dtErrorf(http.StatusBadRequest, "Snapshot %s not found. Did you add it through the Daytona Dashboard?", body.Snapshot)
		}
		if st := sn.state(now); st != dtActive {
			return dtErrorf(http.StatusBadRequest, "Snapshot %s is %s", body.Snapshot, st)
		}
		sb, err := d.addSandboxLocked(org, body.Name, sn.Name, body.Labels, body.Env, now)
		if err != nil {
			return err
		}
		if body.User != "" {
			sb.User = body.User
		}
		if body.Target != "" {
			sb.Target = body.Target
		}
		sb.Public = body.Public
		sb.CPU, sb.GPU, sb.Memory, sb.Disk = sn.CPU, sn.GPU, sn.Mem, sn.Disk
		at := now.UTC()
		sn.LastUsedAt = &at
		out = sb.json(r)
		return nil
	}()
	d.mu.Unlock()
	if err == nil {
		err = d.save()
	}
	if err != nil {
		writeDaytonaError(w, r, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, out)
}

// labelFilter parses the labels query parameter: a JSON object whose pairs
// a sandbox must all carry.
func labelFilter(r *http.Request) (map[string]string, error) {
	raw := r.URL.Query().Get("labels")
	if raw == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, dtErrorf(http.StatusBadRequest, "Invalid labels format: %v", err)
	}
	return m, nil
}

func hasLabels(sb *dtSandbox, want map[string]string) bool {
	for k, v := range want {
		if got, ok := sb.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// matchingSandboxes returns the organization's sandboxes carrying labels,
// newest first.
func (d *Service) matchingSandboxes(org string, labels map[string]string, keep func(*dtSandbox) bool) []*dtSandbox {
	var out []*dtSandbox
	for _, sb := range d.st.Sandboxes {
		if sb.OrganizationID == org && hasLabels(sb, labels) && (keep == nil || keep(sb)) {
			out = append(out, sb)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if c := out[j].CreatedAt.Compare(out[i].CreatedAt); c != 0 {
			return c < 0
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (s *Service) dtListSandboxes(w http.ResponseWriter, r *http.Request, org string) {
	labels, err := labelFilter(r)
	if err != nil {
		writeDaytonaError(w, r, err)
		return
	}
	d := s
	d.mu.Lock()
	items := []map[string]any{}
	for _, sb := range d.matchingSandboxes(org, labels, nil) {
		items = append(items, sb.json(r))
	}
	d.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, items)
}

// dtListSandboxesPaginated serves the SDK's List: labels, id, name, states
// and snapshots filters, page and limit (default 100, as the client sends).
// Sorting is newest first whatever sort/order say (a simplification).
func (s *Service) dtListSandboxesPaginated(w http.ResponseWriter, r *http.Request, org string) {
	labels, err := labelFilter(r)
	if err != nil {
		writeDaytonaError(w, r, err)
		return
	}
	q := r.URL.Query()
	page, limit := dtPageParams(q.Get("page"), q.Get("limit"), 100, 200)
	states, snapshots := setOf(q["states"]), setOf(q["snapshots"])
	id, name := q.Get("id"), strings.ToLower(q.Get("name"))
	keep := func(sb *dtSandbox) bool {
		return (id == "" || strings.HasPrefix(sb.ID, id)) &&
			(name == "" || strings.Contains(strings.ToLower(sb.Name), name)) &&
			(states == nil || states[sb.State]) && (snapshots == nil || snapshots[sb.Snapshot])
	}
	d := s
	d.mu.Lock()
	all := d.matchingSandboxes(org, labels, keep)
	total := len(all)
	start := min((page-1)*limit, total)
	items := []map[string]any{}
	for _, sb := range all[start:min(start+limit, total)] {
		items = append(items, sb.json(r))
	}
	d.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, map[string]any{"items": items, "total": total, "page": page, "totalPages": ceilDiv(total, limit)})
}

func setOf(vals []string) map[string]bool {
	if len(vals) == 0 {
		return nil
	}
	m := map[string]bool{}
	for _, v := range vals {
		m[v] = true
	}
	return m
}

func (d *Service) lookupSandboxLocked(org, idOrName string) *dtSandbox {
	if sb, ok := d.st.Sandboxes[idOrName]; ok && sb.OrganizationID == org {
		return sb
	}
	for _, sb := range d.st.Sandboxes {
		if sb.OrganizationID == org && sb.Name == idOrName {
			return sb
		}
	}
	return nil
}

func (s *Service) dtGetSandbox(w http.ResponseWriter, r *http.Request, org string) {
	d := s
	d.mu.Lock()
	sb := d.lookupSandboxLocked(org, r.PathValue("sandboxIdOrName"))
	var out map[string]any
	if sb != nil {
		out = sb.json(r)
	}
	d.mu.Unlock()
	if sb == nil {
		writeDaytonaError(w, r, dtErrorf(http.StatusNotFound, "Sandbox with ID or name %s not found", r.PathValue("sandboxIdOrName")))
		return
	}
	core.WriteJSON(w, http.StatusOK, out)
}

// dtDeleteSandbox answers with the sandbox on its way out ("destroying").
// Daytona finishes destroying in the background and leaves destroyed
// sandboxes out of listings; here it is gone at once.
func (s *Service) dtDeleteSandbox(w http.ResponseWriter, r *http.Request, org string) {
	d := s
	d.mu.Lock()
	sb := d.lookupSandboxLocked(org, r.PathValue("sandboxIdOrName"))
	var out map[string]any
	if sb != nil {
		delete(d.st.Sandboxes, sb.ID)
		sb.State, sb.UpdatedAt = "destroying", time.Now().UTC()
		out = sb.json(r)
	}
	d.mu.Unlock()
	if sb == nil {
		writeDaytonaError(w, r, dtErrorf(http.StatusNotFound, "Sandbox with ID or name %s not found", r.PathValue("sandboxIdOrName")))
		return
	}
	if err := d.save(); err != nil {
		writeDaytonaError(w, r, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, out)
}
