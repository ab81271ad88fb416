package modal

// The web endpoints of deployed Modal apps, the Modal admin helpers and the
// Modal part of Inventory.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sort"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"

	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"
)

// modalWebFaultAnswers answer faults on web endpoints the way Modal's HTTP
// front door does: plain text.
var modalWebFaultAnswers = core.FaultAnswers{
	RateLimited: func(w http.ResponseWriter, f *core.Fault) {
		http.Error(w, "modal-http: too many requests (emulated)", http.StatusTooManyRequests)
	},
	ServerError: func(w http.ResponseWriter, f *core.Fault) {
		http.Error(w, "modal-http: internal error (emulated)", f.Status)
	},
}

// webTarget finds the deployed function serving label. The caller holds
// m.mu. A label whose app is stopped is reported as such (Modal answers
// those with their own message).
func (m *Service) webTarget(label string) (a *modalApp, f *modalFunction, stopped bool) {
	for _, cand := range m.st.Apps {
		d := cand.current()
		if d == nil {
			continue
		}
		for _, id := range d.FunctionIDs {
			fn, ok := m.st.Functions[id]
			if !ok || !fn.isWeb() || m.webLabel(cand, fn.Name) != label {
				continue
			}
			if cand.State == pb.AppState_APP_STATE_DEPLOYED.String() {
				return cand, fn, false
			}
			stopped = true
		}
	}
	return nil, nil, stopped
}

// serveWeb answers a deployed web endpoint with the app's own function
// (runner.go); without a runner, api_health answers upstream's health body
// on GET and every other endpoint 503, saying nothing ran. A stopped app's
// endpoints answer 404 as on Modal.
func (m *Service) serveWeb(w http.ResponseWriter, r *http.Request) {
	m.core.Count(r.Method+" "+WebRoute, false)
	delay, f := m.core.TakeFaults(r.Method, WebRoute)
	if m.core.ServeFault(w, r, delay, f, modalWebFaultAnswers) {
		return
	}
	m.mu.Lock()
	a, fn, stopped := m.webTarget(r.PathValue("label"))
	var name, method string
	var spec runSpec
	var specErr error
	if fn != nil {
		name, method = fn.Name, fn.WebMethod
		if m.runner.python != "" {
			spec, specErr = m.runSpecLocked(a)
		}
	}
	m.mu.Unlock()
	if a == nil {
		msg := "modal-http: invalid function call"
		if stopped {
			msg = "modal-http: app for invoked web endpoint is stopped"
		}
		http.Error(w, msg, http.StatusNotFound)
		return
	}
	if method != "" && r.Method != method && !(r.Method == http.MethodHead && method == http.MethodGet) {
		w.Header().Set("Allow", method)
		core.WriteJSON(w, http.StatusMethodNotAllowed, map[string]string{"detail": "Method Not Allowed"})
		return
	}
	if m.runner.python != "" {
		if specErr != nil {
			http.Error(w, "modal-http: "+specErr.Error(), http.StatusServiceUnavailable)
			return
		}
		m.runWeb(w, r, spec, name)
		return
	}
	_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, 1<<20))
	if name == "api_health" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, HealthBody)
		return
	}
	http.Error(w, "modal-http: "+name+" was not run: this emulator runs deployed functions only with a Python to run them (-modal-python)", http.StatusServiceUnavailable)
}

// serveAppPage is where AppCreate's and AppPublish's "view the app" URLs
// point: a JSON summary (no secrets are reachable from an app).
func (m *Service) serveAppPage(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	a, ok := m.st.Apps[r.PathValue("app_id")]
	var entry AppEntry
	if ok {
		entry = m.appEntry(a)
	}
	m.mu.Unlock()
	if !ok {
		core.AdminError(w, http.StatusNotFound, errors.New("no such Modal app"))
		return
	}
	core.WriteJSON(w, http.StatusOK, entry)
}

// --- Admin ------------------------------------------------------------------

func (m *Service) registerAdmin(mux *http.ServeMux) {
	mux.HandleFunc("GET /__emulator/modal/images", func(w http.ResponseWriter, r *http.Request) {
		core.WriteJSON(w, http.StatusOK, map[string]any{"images": m.Images()})
	})
	mux.HandleFunc("POST /__emulator/modal/sandboxes", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Workspace   string            `json:"workspace"`
			Environment string            `json:"environment"`
			App         string            `json:"app"`
			Tags        map[string]string `json:"tags"`
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		var id string
		if err == nil {
			id, err = m.CreateSandbox(req.Workspace, req.Environment, req.App, req.Tags)
		}
		if err != nil {
			core.AdminError(w, http.StatusBadRequest, err)
			return
		}
		core.WriteJSON(w, http.StatusCreated, map[string]string{"id": id})
	})
}

// ImageEntry is one image in Images and the inventory.
type ImageEntry struct {
	Workspace string `json:"workspace"`
	ID        string `json:"id"`
	AppID     string `json:"app_id,omitempty"`
	State     string `json:"state"` // building, ready or failed
	Steps     int    `json:"steps"` // Dockerfile commands
}

// Images lists every image, oldest first.
func (m *Service) Images() []ImageEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	imgs := make([]*modalImage, 0, len(m.st.Images))
	for _, img := range m.st.Images {
		imgs = append(imgs, img)
	}
	sort.Slice(imgs, func(i, j int) bool {
		if !imgs[i].CreatedAt.Equal(imgs[j].CreatedAt) {
			return imgs[i].CreatedAt.Before(imgs[j].CreatedAt)
		}
		return imgs[i].ID < imgs[j].ID
	})
	out := make([]ImageEntry, 0, len(imgs))
	for _, img := range imgs {
		out = append(out, ImageEntry{Workspace: img.Workspace, ID: img.ID, AppID: img.AppID, State: img.State, Steps: len(img.Commands)})
	}
	return out
}

// CreateSandbox starts a sandbox with tags in the live app deployed as
// appName, as the deployed app's endpoints would (workspace "" means
// DefaultWorkspace, environment "" means "main"). Tests use it to give
// a teardown something to terminate without running a sandbox client.
func (m *Service) CreateSandbox(workspace, environment, appName string, tags map[string]string) (string, error) {
	workspace = cmpOr(workspace, DefaultWorkspace)
	environment = cmpOr(environment, DefaultEnvironment)
	m.mu.Lock()
	a := m.namedApp(workspace, environment, appName)
	if a == nil {
		m.mu.Unlock()
		return "", fmt.Errorf("no live Modal app %q in %s/%s", appName, workspace, environment)
	}
	sb := m.newSandbox(a, "", "", 0, tags)
	m.mu.Unlock()
	return sb.ID, m.save()
}

// SecretValues returns a named secret's values, for tests that check
// what a client wrote. Only Go callers can see values: no API or admin
// route returns them.
func (m *Service) SecretValues(workspace, environment, name string) (map[string]string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sec := m.namedSecret(cmpOr(workspace, DefaultWorkspace), cmpOr(environment, DefaultEnvironment), name)
	if sec == nil {
		return nil, false
	}
	return maps.Clone(sec.Values), true
}

// --- Inventory ----------------------------------------------------------------

// Inventory is the Modal part of Inventory. Secret values never
// appear, only keys.
type Inventory struct {
	Apps      []AppEntry     `json:"apps"`
	Secrets   []SecretEntry  `json:"secrets"`
	Images    []ImageEntry   `json:"images"`
	Sandboxes []SandboxEntry `json:"sandboxes"`
}

// AppEntry is one app (stopped ones included: Modal keeps them).
type AppEntry struct {
	Workspace   string            `json:"workspace"`
	Environment string            `json:"environment"`
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	State       string            `json:"state"` // deployed, stopped, ephemeral, initializing, ...
	Version     int               `json:"version"`
	Functions   []string          `json:"functions"` // of the live version, sorted
	WebLabels   map[string]string `json:"web_labels,omitempty"`
}

// SecretEntry is one named secret.
type SecretEntry struct {
	Workspace   string   `json:"workspace"`
	Environment string   `json:"environment"`
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Keys        []string `json:"keys"`
}

// SandboxEntry is one sandbox, finished or not.
type SandboxEntry struct {
	Workspace   string            `json:"workspace"`
	Environment string            `json:"environment"`
	ID          string            `json:"id"`
	AppID       string            `json:"app_id"`
	Tags        map[string]string `json:"tags"`
	Running     bool              `json:"running"`
	// The launch: the command, its workdir, the named secrets attached and
	// the names (never the values) of the variables its secrets set.
	Command []string `json:"command,omitempty"`
	Workdir string   `json:"workdir,omitempty"`
	Secrets []string `json:"secrets,omitempty"`
	EnvKeys []string `json:"env_keys,omitempty"`
}

// Empty reports whether nothing an installation owns is left: no live app,
// no named secret, no running sandbox. Stopped apps and images do not count:
// Modal keeps stopped apps in its history, and images (shared layers
// especially) outlive the apps built on them.
func (i Inventory) Empty() bool {
	for _, a := range i.Apps {
		if a.State != "stopped" {
			return false
		}
	}
	for _, sb := range i.Sandboxes {
		if sb.Running {
			return false
		}
	}
	return len(i.Secrets) == 0
}

// appEntry summarises a. The caller holds m.mu.
func (m *Service) appEntry(a *modalApp) AppEntry {
	e := AppEntry{
		Workspace: a.Workspace, Environment: a.Environment, ID: a.ID, Name: a.Name,
		State: appStateWord(a.State), Version: len(a.Deployments), Functions: []string{},
	}
	if d := a.current(); d != nil {
		e.Functions = core.SortedKeys(d.FunctionIDs)
		for tag, id := range d.FunctionIDs {
			if f, ok := m.st.Functions[id]; ok && f.isWeb() {
				if e.WebLabels == nil {
					e.WebLabels = map[string]string{}
				}
				e.WebLabels[tag] = m.webLabel(a, f.Name)
			}
		}
	}
	return e
}

// appStateWord turns APP_STATE_DEPLOYED into deployed.
func appStateWord(s string) string {
	const prefix = "APP_STATE_"
	if len(s) > len(prefix) && s[:len(prefix)] == prefix {
		s = s[len(prefix):]
	}
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Inventory lists the Modal apps, secrets, images and sandboxes that exist.
func (m *Service) Inventory() Inventory {
	less2 := func(a1, a2, b1, b2 string) bool { return a1 < b1 || (a1 == b1 && a2 < b2) }
	m.mu.Lock()
	defer m.mu.Unlock()
	inv := Inventory{Apps: []AppEntry{}, Secrets: []SecretEntry{}, Images: []ImageEntry{}, Sandboxes: []SandboxEntry{}}
	for _, a := range m.st.Apps {
		inv.Apps = append(inv.Apps, m.appEntry(a))
	}
	for _, sec := range m.st.Secrets {
		if sec.Name == "" {
			continue // ephemeral: not an object anyone owns
		}
		inv.Secrets = append(inv.Secrets, SecretEntry{Workspace: sec.Workspace, Environment: sec.Environment, ID: sec.ID, Name: sec.Name, Keys: core.SortedKeys(sec.Values)})
	}
	for _, img := range m.st.Images {
		inv.Images = append(inv.Images, ImageEntry{Workspace: img.Workspace, ID: img.ID, AppID: img.AppID, State: img.State, Steps: len(img.Commands)})
	}
	now := time.Now()
	for _, sb := range m.st.Sandboxes {
		tags := maps.Clone(sb.Tags)
		if tags == nil {
			tags = map[string]string{}
		}
		e := SandboxEntry{Workspace: sb.Workspace, Environment: sb.Environment, ID: sb.ID, AppID: sb.AppID, Tags: tags, Running: sb.running(now),
			Command: sb.Command, Workdir: sb.Workdir}
		keys := map[string]bool{}
		for _, id := range sb.SecretIDs {
			if sec, ok := m.st.Secrets[id]; ok {
				if sec.Name != "" {
					e.Secrets = append(e.Secrets, sec.Name)
				}
				for k := range sec.Values {
					keys[k] = true
				}
			}
		}
		e.EnvKeys = core.SortedKeys(keys)
		if len(e.EnvKeys) == 0 {
			e.EnvKeys = nil
		}
		sort.Strings(e.Secrets)
		inv.Sandboxes = append(inv.Sandboxes, e)
	}
	sort.Slice(inv.Apps, func(i, j int) bool {
		x, y := inv.Apps[i], inv.Apps[j]
		return less2(x.Workspace+"/"+x.Environment+"/"+x.Name, x.ID, y.Workspace+"/"+y.Environment+"/"+y.Name, y.ID)
	})
	sort.Slice(inv.Secrets, func(i, j int) bool {
		x, y := inv.Secrets[i], inv.Secrets[j]
		return less2(x.Workspace+"/"+x.Environment, x.Name, y.Workspace+"/"+y.Environment, y.Name)
	})
	sort.Slice(inv.Images, func(i, j int) bool {
		return less2(inv.Images[i].Workspace, inv.Images[i].ID, inv.Images[j].Workspace, inv.Images[j].ID)
	})
	sort.Slice(inv.Sandboxes, func(i, j int) bool {
		return less2(inv.Sandboxes[i].Workspace, inv.Sandboxes[i].ID, inv.Sandboxes[j].Workspace, inv.Sandboxes[j].ID)
	})
	return inv
}
