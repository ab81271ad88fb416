package vercel

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// Session and sandbox statuses, the enum the client's zod schema accepts
// (pending, running, stopping, stopped, failed, aborted, snapshotting);
// sessions here only ever read as running or stopped.
const (
	statusRunning = "running"
	statusStopped = "stopped"
)

// Runtimes are the images a sandbox may run.
var runtimes = []string{"node22", "node24", "python3.13"}

const (
	// defaultRuntime is what a create without a runtime gets.
	defaultRuntime = "node24"
	// defaultTimeout is a session's lifetime when the create names none.
	defaultTimeout = 5 * time.Minute
	// maxTags is Vercel's cap on a sandbox's tags.
	maxTags = 5
	// sessionCwd is the working directory every session reports.
	sessionCwd = "/vercel/sandbox"
	// maxArchive bounds an fs/write body.
	maxArchive = core.MaxBody
)

// defaultFailure stands for "the bootstrap command exited 1".
const defaultFailure = "bootstrap command failed: exit status 1"

// sandbox is one named sandbox of a project: its settings and its sessions,
// the last of which is current.
type sandbox struct {
	Team      string            `json:"team"`
	Project   string            `json:"project"`
	Name      string            `json:"name"`
	Runtime   string            `json:"runtime"`
	VCPUs     int               `json:"vcpus,omitempty"`
	Ports     []int             `json:"ports,omitempty"`
	Tags      map[string]string `json:"tags,omitempty"`
	EnvKeys   []string          `json:"envKeys,omitempty"` // values are not kept: they may be secrets
	CreatedAt int64             `json:"createdAt"`         // ms
	Seq       int64             `json:"seq"`
	Sessions  []string          `json:"sessions"` // oldest first
}

func sandboxKey(team, project, name string) string { return team + "/" + project + "/" + name }

// session is one run of a sandbox: what was written into it and what it
// ran.
type session struct {
	ID               string      `json:"id"`
	Team             string      `json:"team"`
	Project          string      `json:"project"`
	Sandbox          string      `json:"sandbox"`
	Status           string      `json:"status"` // running | stopped; a running one past its timeout reads as stopped
	CreatedAt        int64       `json:"createdAt"`
	TimeoutMs        int64       `json:"timeoutMs"`
	SourceSnapshotID string      `json:"sourceSnapshotId,omitempty"`
	Files            []fileEntry `json:"files,omitempty"`
	Commands         []*command  `json:"commands,omitempty"`
	// AfterWrite is set by fs/write and cleared by the next command: that
	// command is the bootstrap an arranged build failure fails.
	AfterWrite bool   `json:"afterWrite,omitempty"`
	FailReason string `json:"failReason,omitempty"`
	SnapshotID string `json:"snapshotId,omitempty"`
}

type fileEntry struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// command is one command. Its outcome is planned when it starts, so whether
// it has exited follows from the clock and nothing has to run later.
type command struct {
	ID       string `json:"id"`
	Line     string `json:"line"` // command and args, space-separated
	Cwd      string `json:"cwd,omitempty"`
	Sudo     bool   `json:"sudo,omitempty"`
	Started  int64  `json:"started"` // ms
	DoneAt   int64  `json:"doneAt"`  // ms
	ExitCode int    `json:"exitCode"`
	Reason   string `json:"reason,omitempty"` // the arranged failure it exits for
}

// exitCode is nil while the command runs.
func (c *command) exitCode(now int64) *int {
	if now < c.DoneAt {
		return nil
	}
	code := c.ExitCode
	return &code
}

func (ss *session) status(now int64) string {
	if ss.Status == statusRunning && ss.TimeoutMs > 0 && now >= ss.CreatedAt+ss.TimeoutMs {
		return statusStopped
	}
	return ss.Status
}

// json is the client's session schema.
func (ss *session) json(now int64) map[string]any {
	return map[string]any{"id": ss.ID, "status": ss.status(now), "createdAt": ss.CreatedAt, "cwd": sessionCwd,
		"timeout": ss.TimeoutMs}
}

// currentLocked is the sandbox's newest session.
func (s *Service) currentLocked(sb *sandbox) *session {
	if len(sb.Sessions) == 0 {
		return nil
	}
	return s.st.Sessions[sb.Sessions[len(sb.Sessions)-1]]
}

// metadataLocked is the client's sandbox metadata schema; its status is its
// current session's.
func (s *Service) metadataLocked(sb *sandbox, now int64) map[string]any {
	m := map[string]any{"name": sb.Name, "createdAt": sb.CreatedAt, "status": statusStopped, "currentSessionId": ""}
	if cur := s.currentLocked(sb); cur != nil {
		m["currentSessionId"], m["status"] = cur.ID, cur.status(now)
		if cur.SourceSnapshotID != "" {
			m["currentSnapshotId"] = cur.SourceSnapshotID
		}
	}
	return m
}

// createRequest is the body upstream's createSandbox sends.
type createRequest struct {
	ProjectID string `json:"projectId"`
	Name      string `json:"name"`
	Runtime   string `json:"runtime"`
	Timeout   *int64 `json:"timeout"`
	Resources *struct {
		VCPUs int `json:"vcpus"`
	} `json:"resources"`
	Ports  []int             `json:"ports"`
	Env    map[string]string `json:"env"`
	Tags   map[string]string `json:"tags"`
	Source *struct {
		Type       string `json:"type"`
		SnapshotID string `json:"snapshotId"`
	} `json:"source"`
}

func (req *createRequest) check() error {
	switch {
	case req.ProjectID == "":
		return badRequest("projectId is required")
	case req.Name == "":
		return badRequest("name is required")
	case len(req.Tags) > maxTags:
		return badRequest("tags: at most %d tags per sandbox, got %d", maxTags, len(req.Tags))
	case req.Timeout != nil && *req.Timeout <= 0:
		return badRequest("timeout must be a positive number of milliseconds, got %d", *req.Timeout)
	case req.Source != nil && (req.Source.Type != "snapshot" || req.Source.SnapshotID == ""):
		return badRequest(`source must be {"type": "snapshot", "snapshotId": ...}`)
	}
	if req.Runtime == "" {
		req.Runtime = defaultRuntime
	}
	if !slices.Contains(runtimes, req.Runtime) {
		return badRequest("runtime %q is not one of %s", req.Runtime, strings.Join(runtimes, ", "))
	}
	if req.Resources != nil && !slices.Contains([]int{1, 2, 4, 8}, req.Resources.VCPUs) {
		return badRequest("resources.vcpus must be 1, 2, 4 or 8, got %d", req.Resources.VCPUs)
	}
	for i, p := range req.Ports {
		if p < 1 || p > 65535 {
			return badRequest("ports[%d]: %d is not a port", i, p)
		}
	}
	return nil
}

// createSandbox is POST /v2/sandboxes. A name is unique in its project: a
// running sandbox of that name is a conflict, a stopped one starts a new
// session with the request's settings.
func (s *Service) createSandbox(w http.ResponseWriter, r *http.Request, team string) {
	var req createRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := req.check(); err != nil {
		writeError(w, err)
		return
	}
	timeout := defaultTimeout.Milliseconds()
	if req.Timeout != nil {
		timeout = *req.Timeout
	}
	now := nowMillis()

	s.mu.Lock()
	source := ""
	if req.Source != nil {
		snap, ok := s.st.Snapshots[req.Source.SnapshotID]
		if !ok || snap.Team != team || snap.Project != req.ProjectID {
			s.mu.Unlock()
			writeError(w, notFound("snapshot %q not found in project %q", req.Source.SnapshotID, req.ProjectID))
			return
		}
		source = snap.ID
	}
	key := sandboxKey(team, req.ProjectID, req.Name)
	sb, exists := s.st.Sandboxes[key]
	if exists {
		if cur := s.currentLocked(sb); cur != nil && cur.status(now) == statusRunning {
			s.mu.Unlock()
			writeError(w, errorf(http.StatusConflict, "sandbox_exists", "sandbox %q is already running in project %q", req.Name, req.ProjectID))
			return
		}
	} else {
		sb = &sandbox{Team: team, Project: req.ProjectID, Name: req.Name, CreatedAt: now, Seq: s.nextSeqLocked()}
		s.st.Sandboxes[key] = sb
	}
	sb.Runtime, sb.Ports, sb.Tags, sb.EnvKeys, sb.VCPUs = req.Runtime, req.Ports, req.Tags, core.SortedKeys(req.Env), 0
	if req.Resources != nil {
		sb.VCPUs = req.Resources.VCPUs
	}
	// [] and none mean the same; the state file keeps neither.
	if len(sb.Ports) == 0 {
		sb.Ports = nil
	}
	if len(sb.Tags) == 0 {
		sb.Tags = nil
	}
	ss := &session{ID: newID("sbx_sess"), Team: team, Project: req.ProjectID, Sandbox: req.Name, Status: statusRunning,
		CreatedAt: now, TimeoutMs: timeout, SourceSnapshotID: source}
	s.st.Sessions[ss.ID] = ss
	sb.Sessions = append(sb.Sessions, ss.ID)
	routes := []map[string]any{}
	for _, p := range sb.Ports {
		// A DNS label: the session ID without its underscores, and the port.
		sub := fmt.Sprintf("%s-%d", strings.ReplaceAll(ss.ID, "_", "-"), p)
		routes = append(routes, map[string]any{"url": "https://" + sub + ".vercel.run", "subdomain": sub, "port": p})
	}
	out := map[string]any{"sandbox": s.metadataLocked(sb, now), "session": ss.json(now), "routes": routes}
	s.mu.Unlock()
	if err := s.save(); err != nil {
		writeError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, out)
}

// requireProject is the project query parameter every list and delete
// needs.
func requireProject(r *http.Request) (string, error) {
	p := r.URL.Query().Get("project")
	if p == "" {
		return "", badRequest("the project query parameter is required")
	}
	return p, nil
}

// listSandboxes is GET /v2/sandboxes?project=&namePrefix=&tags=key:value:
// the project's sandboxes whose name starts with the prefix and, with tags,
// that carry the tag, newest first.
func (s *Service) listSandboxes(w http.ResponseWriter, r *http.Request, team string) {
	project, err := requireProject(r)
	if err != nil {
		writeError(w, err)
		return
	}
	prefix := r.URL.Query().Get("namePrefix")
	// tags=key:value, the one tag filter the API supports.
	tagKey, tagValue, byTag := "", "", r.URL.Query().Has("tags")
	if byTag {
		var ok bool
		tagKey, tagValue, ok = strings.Cut(r.URL.Query().Get("tags"), ":")
		if !ok || tagKey == "" {
			writeError(w, badRequest("tags must be \"key:value\", got %q", r.URL.Query().Get("tags")))
			return
		}
	}
	now := nowMillis()
	s.mu.Lock()
	var found []*sandbox
	for _, sb := range s.st.Sandboxes {
		if byTag && sb.Tags[tagKey] != tagValue {
			continue
		}
		if sb.Team == team && sb.Project == project && strings.HasPrefix(sb.Name, prefix) {
			found = append(found, sb)
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Seq > found[j].Seq })
	out := []map[string]any{}
	for _, sb := range found {
		m := s.metadataLocked(sb, now)
		m["tags"] = sb.Tags
		if sb.Tags == nil {
			m["tags"] = map[string]string{}
		}
		out = append(out, m)
	}
	s.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, map[string]any{"sandboxes": out})
}

// deleteSandbox is DELETE /v2/sandboxes/{name}?project=: its session
// stops, and the sandbox and its sessions are gone (its snapshots stay).
func (s *Service) deleteSandbox(w http.ResponseWriter, r *http.Request, team string) {
	project, err := requireProject(r)
	if err != nil {
		writeError(w, err)
		return
	}
	name := r.PathValue("name")
	key := sandboxKey(team, project, name)
	now := nowMillis()
	s.mu.Lock()
	sb, ok := s.st.Sandboxes[key]
	if !ok {
		s.mu.Unlock()
		writeError(w, notFound("sandbox %q not found in project %q", name, project))
		return
	}
	if cur := s.currentLocked(sb); cur != nil {
		cur.Status = statusStopped
	}
	out := map[string]any{"sandbox": s.metadataLocked(sb, now)}
	for _, id := range sb.Sessions {
		delete(s.st.Sessions, id)
	}
	delete(s.st.Sandboxes, key)
	s.mu.Unlock()
	if err := s.save(); err != nil {
		writeError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, out)
}

// errSessionStopped answers a call that needs a running session; Vercel's
// code for it is not documented, so 410 Gone (the session is over for
// good: a new one is a new create) is the emulator's choice.
func errSessionStopped(id string) error {
	return errorf(http.StatusGone, "sandbox_stopped", "session %q is stopped", id)
}

// runningSessionLocked finds the team's session, which must be running.
func (s *Service) runningSessionLocked(team, id string, now int64) (*session, error) {
	ss, ok := s.st.Sessions[id]
	if !ok || ss.Team != team {
		return nil, notFound("session %q not found", id)
	}
	if ss.status(now) != statusRunning {
		return nil, errSessionStopped(id)
	}
	return ss, nil
}

// stopSession is POST /v2/sandboxes/sessions/{id}/stop; stopping a stopped
// session is not an error.
func (s *Service) stopSession(w http.ResponseWriter, r *http.Request, team string) {
	id := r.PathValue("sessionId")
	now := nowMillis()
	s.mu.Lock()
	ss, ok := s.st.Sessions[id]
	if !ok || ss.Team != team {
		s.mu.Unlock()
		writeError(w, notFound("session %q not found", id))
		return
	}
	ss.Status = statusStopped
	out := map[string]any{"session": ss.json(now)}
	s.mu.Unlock()
	if err := s.save(); err != nil {
		writeError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, out)
}

// commandRequest is the body of startCommand and runCommandAndWait.
type commandRequest struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env"`
	Sudo    bool              `json:"sudo"`
	Wait    bool              `json:"wait"`
	Timeout *int64            `json:"timeout"`
}

// runCommand is POST /v2/sandboxes/sessions/{id}/cmd. The command runs for
// the configured command time; the first one after an fs/write (upstream's
// bootstrap) exits 1 when a build failure is arranged for the sandbox's
// name or for the next build. With wait the answer is NDJSON: the command
// with a null exit code at once (flushed), its exit code when it ends.
func (s *Service) runCommand(w http.ResponseWriter, r *http.Request, team string) {
	var req commandRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Command == "" {
		writeError(w, badRequest("command is required"))
		return
	}
	if req.Timeout != nil && *req.Timeout <= 0 {
		writeError(w, badRequest("timeout must be a positive number of milliseconds, got %d", *req.Timeout))
		return
	}
	now := nowMillis()
	s.mu.Lock()
	ss, err := s.runningSessionLocked(team, r.PathValue("sessionId"), now)
	if err != nil {
		s.mu.Unlock()
		writeError(w, err)
		return
	}
	cmd := &command{ID: newID("cmd"), Line: strings.Join(append([]string{req.Command}, req.Args...), " "), Cwd: req.Cwd,
		Sudo: req.Sudo, Started: now, DoneAt: now + s.commandTime.Milliseconds()}
	if ss.AfterWrite {
		ss.AfterWrite = false
		if reason := s.failures.Take(ss.Sandbox); reason != "" {
			cmd.ExitCode, cmd.Reason, ss.FailReason = 1, reason, reason
		}
	}
	ss.Commands = append(ss.Commands, cmd)
	s.mu.Unlock()
	if err := s.save(); err != nil {
		writeError(w, err)
		return
	}
	if !req.Wait {
		core.WriteJSON(w, http.StatusOK, map[string]any{"command": map[string]any{"id": cmd.ID, "exitCode": nil}})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	line(w, map[string]any{"command": map[string]any{"id": cmd.ID, "exitCode": nil}})
	_ = http.NewResponseController(w).Flush()
	t := time.NewTimer(time.Until(time.UnixMilli(cmd.DoneAt)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return // the client left; the command still ends on its own clock
	}
	line(w, map[string]any{"command": map[string]any{"id": cmd.ID, "exitCode": cmd.ExitCode}})
}

// line writes one NDJSON line.
func line(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	_, _ = w.Write(append(b, '\n'))
}

// writeFiles is POST /v2/sandboxes/sessions/{id}/fs/write: a gzip'd tar
// unpacked below the x-cwd header's directory. Only the paths and sizes are
// kept.
func (s *Service) writeFiles(w http.ResponseWriter, r *http.Request, team string) {
	dir := r.Header.Get("x-cwd")
	if dir == "" {
		writeError(w, badRequest("the x-cwd header is required"))
		return
	}
	files, err := untar(http.MaxBytesReader(w, r.Body, maxArchive), dir)
	if err != nil {
		writeError(w, badRequest("the body must be a gzip-compressed tar archive: %v", err))
		return
	}
	now := nowMillis()
	s.mu.Lock()
	ss, err := s.runningSessionLocked(team, r.PathValue("sessionId"), now)
	if err != nil {
		s.mu.Unlock()
		writeError(w, err)
		return
	}
	ss.Files = append(ss.Files, files...)
	ss.AfterWrite = true
	s.mu.Unlock()
	if err := s.save(); err != nil {
		writeError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, map[string]any{})
}

// untar lists the regular files of a tar.gz, their names joined to dir.
func untar(body io.Reader, dir string) ([]fileEntry, error) {
	gz, err := gzip.NewReader(body)
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	var files []fileEntry
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("tar: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		n, err := io.Copy(io.Discard, tr)
		if err != nil {
			return nil, fmt.Errorf("tar entry %s: %w", h.Name, err)
		}
		files = append(files, fileEntry{Path: path.Join(dir, h.Name), Size: n})
	}
	return files, nil
}
