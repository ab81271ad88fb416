package e2b

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

func (s *Service) registerTemplates() {
	s.route("POST /v3/templates", false, s.requestBuild)
	s.route("GET /templates", false, s.listTemplates)
	s.route("GET /templates/aliases/{alias}", false, s.getAlias)
	s.route("GET /templates/{idOrAlias}", false, s.templateBuilds)
	s.route("DELETE /templates/{idOrAlias}", false, s.deleteTemplate)
	s.route("GET /templates/{tid}/files/{hash}", false, s.fileLink)
	// The upload URL is presigned: no key, as on E2B's object storage.
	s.route("PUT /uploads/{tid}/{hash}", true, s.putFile)
	s.route("POST /v2/templates/{tid}/builds/{bid}", false, s.startBuild)
	s.route("GET /templates/{tid}/builds/{bid}/status", false, s.buildStatus)
}

// nameRE is what a template name (with an optional tag) may look like.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}(:[a-zA-Z0-9._-]{1,128})?$`)

// maxBody bounds request bodies (a build's steps; uploads have their own).
const maxBody = 4 << 20

func decode(w http.ResponseWriter, r *http.Request, v any) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return errorf(http.StatusBadRequest, "reading the body: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errorf(http.StatusBadRequest, "invalid JSON body: %v", err)
	}
	return nil
}

// requestBuild is POST /v3/templates: a new build of the named template,
// creating the template the first time. 202 with the six fields the SDK
// requires.
func (s *Service) requestBuild(w http.ResponseWriter, r *http.Request, team string) {
	var body struct {
		Name     string   `json:"name"`
		Tags     []string `json:"tags"`
		CPUCount *int     `json:"cpuCount"`
		MemoryMB *int     `json:"memoryMB"`
	}
	if err := decode(w, r, &body); err != nil {
		writeError(w, err)
		return
	}
	if !nameRE.MatchString(body.Name) {
		writeError(w, errorf(http.StatusBadRequest, "invalid template name %q", body.Name))
		return
	}
	cpu, mem := 2, 1024
	if body.CPUCount != nil {
		cpu = *body.CPUCount
	}
	if body.MemoryMB != nil {
		mem = *body.MemoryMB
	}
	switch {
	case cpu < 1 || cpu > 8:
		writeError(w, errorf(http.StatusBadRequest, "cpuCount must be between 1 and 8, got %d", cpu))
		return
	case mem < 128 || mem%2 != 0:
		writeError(w, errorf(http.StatusBadRequest, "memoryMB must be an even number of at least 128, got %d", mem))
		return
	}
	name, tag, _ := strings.Cut(body.Name, ":")
	tags := append([]string(nil), body.Tags...)
	if tag != "" {
		tags = append([]string{tag}, tags...)
	}
	if len(tags) == 0 {
		tags = []string{"default"}
	}
	now := time.Now().UTC()
	s.mu.Lock()
	t := s.lookupLocked(team, name)
	if t == nil {
		t = &template{ID: newTemplateID(), Team: team, Name: name, CreatedAt: now}
		s.st.Templates[t.ID] = t
	}
	b := &build{ID: newUUID(), TemplateID: t.ID, Tags: tags, CPU: cpu, MemoryMB: mem, CreatedAt: now}
	s.st.Builds[b.ID] = b
	t.Builds = append(t.Builds, b.ID)
	t.UpdatedAt = now
	s.mu.Unlock()
	if err := s.save(); err != nil {
		writeError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusAccepted, map[string]any{
		"templateID": t.ID, "buildID": b.ID, "names": []string{name}, "aliases": []string{name}, "tags": tags, "public": false,
	})
}

// templateJSON is the SDK's Template model (GET /templates).
func (s *Service) templateJSON(t *template, now time.Time) map[string]any {
	b := s.latestLocked(t)
	status, buildID, cpu, mem := statusWaiting, "", 0, 0
	if b != nil {
		status, buildID, cpu, mem = b.status(now), b.ID, b.CPU, b.MemoryMB
	}
	return map[string]any{
		"templateID": t.ID, "buildID": buildID, "buildStatus": status, "buildCount": len(t.Builds),
		"cpuCount": cpu, "memoryMB": mem, "diskSizeMB": 10240, "envdVersion": "0.2.0",
		"names": []string{t.Name}, "aliases": []string{t.Name}, "public": false,
		"createdAt": t.CreatedAt.Format(time.RFC3339Nano), "updatedAt": t.UpdatedAt.Format(time.RFC3339Nano),
		"createdBy": nil, "lastSpawnedAt": nil, "spawnCount": 0,
	}
}

func (s *Service) listTemplates(w http.ResponseWriter, _ *http.Request, team string) {
	now := time.Now()
	s.mu.Lock()
	out := []map[string]any{}
	for _, id := range core.SortedKeys(s.st.Templates) {
		if t := s.st.Templates[id]; t.Team == team {
			out = append(out, s.templateJSON(t, now))
		}
	}
	s.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, out)
}

// templateBuilds is GET /templates/{templateID} (an ID or a name): the
// template with its builds, newest first (E2B's TemplateWithBuilds), at
// most ?limit= of them (1 to 100, default 100).
func (s *Service) templateBuilds(w http.ResponseWriter, r *http.Request, team string) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeError(w, errorf(http.StatusBadRequest, "limit must be between 1 and 100, got %q", v))
			return
		}
		limit = n
	}
	now := time.Now()
	s.mu.Lock()
	t := s.lookupLocked(team, r.PathValue("idOrAlias"))
	var out map[string]any
	if t != nil {
		builds := []map[string]any{}
		for i := len(t.Builds) - 1; i >= 0 && len(builds) < limit; i-- {
			b := s.st.Builds[t.Builds[i]]
			if b == nil {
				continue
			}
			e := map[string]any{"buildID": b.ID, "status": b.status(now), "cpuCount": b.CPU, "memoryMB": b.MemoryMB,
				"diskSizeMB": 10240, "envdVersion": "0.2.0", "createdAt": b.CreatedAt.Format(time.RFC3339Nano),
				"updatedAt": b.CreatedAt.Format(time.RFC3339Nano)}
			if b.Started != nil {
				end := b.Started.Add(b.Duration)
				e["updatedAt"] = b.Started.Format(time.RFC3339Nano)
				if !now.Before(end) {
					e["finishedAt"], e["updatedAt"] = end.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano)
				}
			}
			builds = append(builds, e)
		}
		out = map[string]any{"templateID": t.ID, "public": false, "names": []string{t.Name}, "aliases": []string{t.Name},
			"createdAt": t.CreatedAt.Format(time.RFC3339Nano), "updatedAt": t.UpdatedAt.Format(time.RFC3339Nano),
			"lastSpawnedAt": nil, "spawnCount": 0, "builds": builds}
	}
	s.mu.Unlock()
	if t == nil {
		writeError(w, errorf(http.StatusNotFound, "template '%s' not found", r.PathValue("idOrAlias")))
		return
	}
	core.WriteJSON(w, http.StatusOK, out)
}

func (s *Service) getAlias(w http.ResponseWriter, r *http.Request, team string) {
	s.mu.Lock()
	t := s.lookupLocked(team, r.PathValue("alias"))
	s.mu.Unlock()
	if t == nil {
		writeError(w, errorf(http.StatusNotFound, "template '%s' not found", r.PathValue("alias")))
		return
	}
	core.WriteJSON(w, http.StatusOK, map[string]any{"templateID": t.ID, "public": false})
}

// deleteTemplate is DELETE /templates/{idOrAlias}: refused (400) while a
// running or paused sandbox uses it, as E2B does; its builds and uploads go
// with it.
func (s *Service) deleteTemplate(w http.ResponseWriter, r *http.Request, team string) {
	s.mu.Lock()
	s.expireLocked(time.Now().UTC())
	t := s.lookupLocked(team, r.PathValue("idOrAlias"))
	var err error
	switch {
	case t == nil:
		err = errorf(http.StatusNotFound, "template '%s' not found", r.PathValue("idOrAlias"))
	default:
		for _, sb := range s.st.Sandboxes {
			if sb.TemplateID == t.ID {
				err = errorf(http.StatusBadRequest, "cannot delete template '%s' because there are running or paused sandboxes using it", t.ID)
				break
			}
		}
	}
	if err == nil {
		for _, id := range t.Builds {
			delete(s.st.Builds, id)
		}
		for k, f := range s.st.Files {
			if f.TemplateID == t.ID {
				delete(s.st.Files, k)
			}
		}
		delete(s.st.Templates, t.ID)
	}
	s.mu.Unlock()
	if err == nil {
		err = s.save()
	}
	if err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// templateLocked finds the team's template by ID, or a 404.
func (s *Service) templateLocked(team, id string) (*template, error) {
	t, ok := s.st.Templates[id]
	if !ok || t.Team != team {
		return nil, errorf(http.StatusNotFound, "template '%s' not found", id)
	}
	return t, nil
}

var hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// fileLink is GET /templates/{tid}/files/{hash}: 201, and an upload URL
// unless that content is already there.
func (s *Service) fileLink(w http.ResponseWriter, r *http.Request, team string) {
	tid, hash := r.PathValue("tid"), r.PathValue("hash")
	if !hashRE.MatchString(hash) {
		writeError(w, errorf(http.StatusBadRequest, "invalid files hash %q", hash))
		return
	}
	s.mu.Lock()
	_, err := s.templateLocked(team, tid)
	present := s.st.Files[tid+"/"+hash] != nil
	s.mu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	if present {
		core.WriteJSON(w, http.StatusCreated, map[string]any{"present": true})
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	url := fmt.Sprintf("%s://%s%s/uploads/%s/%s", scheme, r.Host, APIPrefix, tid, hash)
	core.WriteJSON(w, http.StatusCreated, map[string]any{"present": false, "url": url})
}

// maxUpload bounds one uploaded archive.
const maxUpload = 256 << 20

// putFile stores an uploaded COPY source: a tar.gz whose member paths are
// kept (the bodies are not).
func (s *Service) putFile(w http.ResponseWriter, r *http.Request, _ string) {
	tid, hash := r.PathValue("tid"), r.PathValue("hash")
	if !hashRE.MatchString(hash) {
		writeError(w, errorf(http.StatusBadRequest, "invalid files hash %q", hash))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxUpload))
	if err != nil {
		writeError(w, errorf(http.StatusBadRequest, "reading the upload: %v", err))
		return
	}
	u := &upload{TemplateID: tid, Hash: hash, Size: int64(len(body)), Uploaded: time.Now().UTC()}
	u.Entries, err = tarEntries(body)
	if err != nil {
		u.TarErr = err.Error()
	}
	s.mu.Lock()
	_, known := s.st.Templates[tid]
	if known {
		s.st.Files[tid+"/"+hash] = u
	}
	s.mu.Unlock()
	if !known {
		writeError(w, errorf(http.StatusNotFound, "template '%s' not found", tid))
		return
	}
	if err := s.save(); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func tarEntries(body []byte) ([]string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("not gzip: %w", err)
	}
	tr := tar.NewReader(zr)
	var out []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("not a tar archive: %w", err)
		}
		if h.Typeflag == tar.TypeReg {
			out = append(out, strings.TrimPrefix(path.Clean("/"+h.Name), "/"))
		}
	}
}

// startBuild is POST /v2/templates/{tid}/builds/{bid}: the SDK's steps.
// The build is planned now: one log entry per step, and an error when a
// failure was arranged or a COPY step's files were never uploaded.
func (s *Service) startBuild(w http.ResponseWriter, r *http.Request, team string) {
	tid, bid := r.PathValue("tid"), r.PathValue("bid")
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, errorf(http.StatusBadRequest, "reading the body: %v", err))
		return
	}
	var body struct {
		FromImage    string `json:"fromImage"`
		FromTemplate string `json:"fromTemplate"`
		StartCmd     string `json:"startCmd"`
		ReadyCmd     string `json:"readyCmd"`
		Steps        []step `json:"steps"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		writeError(w, errorf(http.StatusBadRequest, "invalid JSON body: %v", err))
		return
	}
	if body.FromImage == "" && body.FromTemplate == "" {
		writeError(w, errorf(http.StatusBadRequest, "fromImage or fromTemplate is required"))
		return
	}
	now := time.Now().UTC()
	s.mu.Lock()
	t, err := s.templateLocked(team, tid)
	var b *build
	if err == nil {
		b = s.st.Builds[bid]
		switch {
		case b == nil || b.TemplateID != tid:
			err = errorf(http.StatusNotFound, "build '%s' not found", bid)
		case b.Started != nil:
			err = errorf(http.StatusBadRequest, "build '%s' has already been started", bid)
		}
	}
	if err == nil {
		b.FromImage, b.FromTemplate, b.StartCmd, b.ReadyCmd, b.Steps, b.Raw = body.FromImage, body.FromTemplate, body.StartCmd, body.ReadyCmd, body.Steps, raw
		b.Started, b.Duration = &now, s.buildTime
		s.planLocked(t, b, now)
	}
	s.mu.Unlock()
	if err == nil {
		err = s.save()
	}
	if err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// planLocked writes the build's log and outcome.
func (s *Service) planLocked(t *template, b *build, now time.Time) {
	n := len(b.Steps) + 1
	at := func(i int) time.Time { return now.Add(b.Duration * time.Duration(i) / time.Duration(n+1)) }
	base := b.FromImage
	if base == "" {
		base = "template " + b.FromTemplate
	}
	b.Logs = []logEntry{{Timestamp: at(0), Level: "info", Message: "[base] FROM " + base, Step: "base"}}
	reason := s.failures.Take(t.Name)
	failAt := -1
	for i, st := range b.Steps {
		if st.Type == "COPY" && s.st.Files[t.ID+"/"+st.FilesHash] == nil && reason == "" {
			reason, failAt = fmt.Sprintf("files for step %d (COPY %s) were not uploaded", i+1, strings.Join(st.Args, " ")), i
		}
	}
	for i, st := range b.Steps {
		b.Logs = append(b.Logs, logEntry{Timestamp: at(i + 1), Level: "info", Step: strconv.Itoa(i + 1),
			Message: fmt.Sprintf("[%d/%d] %s %s", i+1, len(b.Steps), st.Type, strings.Join(st.Args, " "))})
		if i == failAt {
			break
		}
	}
	if reason == "" {
		b.Logs = append(b.Logs, logEntry{Timestamp: at(n), Level: "info", Message: "Build finished, template ready"})
		return
	}
	if failAt < 0 {
		failAt = len(b.Steps) - 1
	}
	b.FailReason, b.FailStep = reason, strconv.Itoa(failAt+1)
	b.Logs = append(b.Logs, logEntry{Timestamp: at(n), Level: "error", Message: reason, Step: b.FailStep})
}

// buildStatus is GET /templates/{tid}/builds/{bid}/status?logsOffset=N.
func (s *Service) buildStatus(w http.ResponseWriter, r *http.Request, team string) {
	tid, bid := r.PathValue("tid"), r.PathValue("bid")
	offset := 0
	if v := r.URL.Query().Get("logsOffset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, errorf(http.StatusBadRequest, "invalid logsOffset %q", v))
			return
		}
		offset = n
	}
	now := time.Now()
	s.mu.Lock()
	_, err := s.templateLocked(team, tid)
	var out map[string]any
	if err == nil {
		b := s.st.Builds[bid]
		if b == nil || b.TemplateID != tid {
			err = errorf(http.StatusNotFound, "build '%s' not found", bid)
		} else {
			visible := b.Logs[:b.visibleLogs(now)]
			entries, logs := []map[string]any{}, []string{}
			for i, e := range visible {
				line := map[string]any{"timestamp": e.Timestamp.Format(time.RFC3339Nano), "level": e.Level, "message": e.Message}
				if e.Step != "" {
					line["step"] = e.Step
				}
				if i >= offset {
					entries = append(entries, line)
				}
				logs = append(logs, e.Message)
			}
			status := b.status(now)
			out = map[string]any{"templateID": tid, "buildID": bid, "status": status, "logEntries": entries, "logs": logs}
			if status == statusError {
				out["reason"] = map[string]any{"message": b.FailReason, "step": b.FailStep}
			}
		}
	}
	s.mu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, out)
}
