package vercel

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// The deployments part of Vercel's REST API: files uploaded by SHA-1 (POST
// /v2/files, kept per team), deployments made of uploaded files (POST
// /v13/deployments, answering missing_files with the digests the team
// lacks, carrying the meta key/values the create sets), read back (GET
// /v13/deployments/{id}) with their build events (GET
// /v3/deployments/{id}/events), and listed newest first (GET
// /v6/deployments, filtered by project, target, state and meta-<key>). Nothing is built: a deployment
// "builds" for Options.BuildTime by checking that the uploaded tree is a
// complete Next.js app at the project's rootDirectory for its install
// command, then is READY (or ERROR with the reason, Vercel's way), and a
// ready production deployment takes the project's production aliases.
// Each deployment answers on its own host, <deployment>.vercel.localhost,
// and the project's current production deployment on
// <project>.vercel.localhost and its domains, with a page showing the
// NEXT_PUBLIC_* values it was built with (Vercel's build inlines them).

// LocalSuffix is what every host the emulator serves a deployment on ends
// with.
const LocalSuffix = ".vercel.localhost"

// Deployment states as Vercel names them.
const (
	stateBuilding = "BUILDING"
	stateReady    = "READY"
	stateError    = "ERROR"
)

// deployment is one deployment and the tree it was made of.
type deployment struct {
	ID      string `json:"id"`
	Team    string `json:"team"`
	Project string `json:"project"`
	Name    string `json:"name"`
	Target  string `json:"target"`
	// Host is the deployment's own hostname (with the emulator's port).
	Host  string            `json:"host"`
	Files map[string]string `json:"files"` // path -> SHA-1
	// Env is what the build saw: the variables of the target, by key.
	Env       map[string]string `json:"env"`
	CreatedAt int64             `json:"createdAt"`
	ReadyAt   int64             `json:"readyAt"` // when the build ends
	// Fail is why the build fails ("" when it succeeds).
	Fail string   `json:"fail,omitempty"`
	Log  []string `json:"log"`
	// Meta are the key/values the create set (Vercel's deployment meta).
	Meta map[string]string `json:"meta,omitempty"`
}

// meta is d's meta as the API answers it: an object, never null.
func (d *deployment) meta() map[string]string {
	if d.Meta == nil {
		return map[string]string{}
	}
	return d.Meta
}

func (d *deployment) state(now int64) string {
	switch {
	case now < d.ReadyAt:
		return stateBuilding
	case d.Fail != "":
		return stateError
	}
	return stateReady
}

// aliasesLocked are the production hosts of d's project while d is its
// newest ready production deployment; none otherwise.
func (s *Service) aliasesLocked(d *deployment, now int64) []string {
	p := s.st.Projects[d.Project]
	if p == nil || d.Target != "production" || s.productionLocked(p, now) != d {
		return []string{}
	}
	return s.projectHostsLocked(p, d.Host)
}

// projectHostsLocked are the hosts that serve p's production deployment:
// <name>.vercel.localhost (on the port of like) and its domains.
func (s *Service) projectHostsLocked(p *project, like string) []string {
	host := p.Name + LocalSuffix
	if _, port, err := net.SplitHostPort(like); err == nil {
		host = net.JoinHostPort(host, port)
	}
	return append([]string{host}, p.Domains...)
}

// productionLocked is p's newest ready production deployment, or nil.
func (s *Service) productionLocked(p *project, now int64) *deployment {
	var best *deployment
	for _, d := range s.st.Deployments {
		if d.Project == p.ID && d.Target == "production" && d.state(now) == stateReady && (best == nil || d.CreatedAt > best.CreatedAt ||
			(d.CreatedAt == best.CreatedAt && d.ID > best.ID)) {
			best = d
		}
	}
	return best
}

func (s *Service) deploymentJSON(d *deployment, now int64) map[string]any {
	st := d.state(now)
	aliases := s.aliasesLocked(d, now)
	m := map[string]any{"id": d.ID, "name": d.Name, "url": d.Host, "readyState": st, "status": st, "target": d.Target,
		"projectId": d.Project, "createdAt": d.CreatedAt, "alias": aliases, "aliasAssigned": len(aliases) > 0, "meta": d.meta()}
	if st == stateError {
		m["errorCode"] = "BUILD_FAILED"
		m["errorMessage"] = d.Fail
	}
	if st != stateBuilding {
		m["ready"] = d.ReadyAt
	}
	return m
}

// maxFileBytes bounds one uploaded file (Vercel's deployments take files
// up to 100 MB through the API).
const maxFileBytes = 100 << 20

var sha1Pattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// filePath is where a team's uploaded file is kept.
func (s *Service) filePath(team, sha string) string {
	return filepath.Join(s.filesDir, team, sha)
}

func (s *Service) hasFile(team, sha string) bool {
	_, err := os.Stat(s.filePath(team, sha))
	return err == nil
}

// uploadFile is POST /v2/files with x-vercel-digest (or x-now-digest): the
// body's SHA-1 must be the digest; 200 {}.
func (s *Service) uploadFile(w http.ResponseWriter, r *http.Request, team string) {
	digest := strings.ToLower(r.Header.Get("x-vercel-digest"))
	if digest == "" {
		digest = strings.ToLower(r.Header.Get("x-now-digest"))
	}
	if !sha1Pattern.MatchString(digest) {
		writeError(w, badRequest("Missing or invalid `x-vercel-digest` header: the file's SHA-1 in hex"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxFileBytes))
	if err != nil {
		writeError(w, errorf(http.StatusRequestEntityTooLarge, "file_too_large", "the file is larger than %d bytes", maxFileBytes))
		return
	}
	sum := sha1.Sum(body)
	if hex.EncodeToString(sum[:]) != digest {
		writeError(w, badRequest("The file's SHA-1 does not match the `x-vercel-digest` header"))
		return
	}
	dir := filepath.Join(s.filesDir, team)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		writeError(w, err)
		return
	}
	tmp, err := os.CreateTemp(dir, ".upload-*")
	if err == nil {
		_, err = tmp.Write(body)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), s.filePath(team, digest))
		}
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	s.st.Uploads[team]++
	s.mu.Unlock()
	s.saveAndAnswer(w, http.StatusOK, map[string]any{})
}

// Limits on a deployment's meta: Vercel's reference gives none, so these
// are the emulator's (generous) guess.
const (
	maxMetaKeys     = 100
	maxMetaKeyBytes = 256
	maxMetaValBytes = 1024
)

// createDeployment is POST /v13/deployments {name, project?, target?,
// meta?, files: [{file, sha, size}]}: 400 missing_files (with `missing`)
// when the team lacks some; otherwise the deployment, building.
func (s *Service) createDeployment(w http.ResponseWriter, r *http.Request, team string) {
	var req struct {
		Name    string            `json:"name"`
		Project string            `json:"project"`
		Target  string            `json:"target"`
		Meta    map[string]string `json:"meta"`
		Files   []struct {
			File string `json:"file"`
			SHA  string `json:"sha"`
			Size int64  `json:"size"`
		} `json:"files"`
	}
	if err := decodeBodyLimit(w, r, &req, 32<<20); err != nil {
		writeError(w, err)
		return
	}
	if req.Target == "" {
		req.Target = "preview"
	}
	if req.Target != "production" && req.Target != "preview" {
		writeError(w, badRequest("Invalid request: `target` should be production or preview"))
		return
	}
	if len(req.Files) == 0 {
		writeError(w, badRequest("Invalid request: a deployment that is not a git deployment needs `files`"))
		return
	}
	if len(req.Meta) > maxMetaKeys {
		writeError(w, badRequest("Invalid request: `meta` has more than %d keys", maxMetaKeys))
		return
	}
	for k, v := range req.Meta {
		if k == "" || len(k) > maxMetaKeyBytes || len(v) > maxMetaValBytes {
			writeError(w, badRequest("Invalid request: `meta` key %q or its value is empty or too long", k))
			return
		}
	}
	files := map[string]string{}
	var missing []string
	for _, f := range req.Files {
		clean := path.Clean(f.File)
		if f.File == "" || clean != f.File || strings.HasPrefix(clean, "/") || clean == ".." || strings.HasPrefix(clean, "../") {
			writeError(w, badRequest("Invalid request: file %q is not a relative path inside the deployment", f.File))
			return
		}
		sha := strings.ToLower(f.SHA)
		if !sha1Pattern.MatchString(sha) {
			writeError(w, badRequest("Invalid request: file %q has no SHA-1 `sha`", f.File))
			return
		}
		files[f.File] = sha
		if !s.hasFile(team, sha) && !slices.Contains(missing, sha) {
			missing = append(missing, sha)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		core.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"code": "missing_files", "message": "Missing files", "missing": missing}})
		return
	}
	now := nowMillis()
	s.mu.Lock()
	name := req.Project
	if name == "" {
		name = req.Name
	}
	p, err := s.projectLocked(team, name)
	if err != nil {
		s.mu.Unlock()
		writeError(w, err)
		return
	}
	d := &deployment{ID: newID("dpl"), Team: team, Project: p.ID, Name: p.Name, Target: req.Target, Files: files,
		Env: map[string]string{}, CreatedAt: now, ReadyAt: now + s.buildTime.Milliseconds(), Meta: req.Meta}
	d.Host = p.Name + "-" + strings.TrimPrefix(d.ID, "dpl_")[:9] + LocalSuffix
	if _, port, err := net.SplitHostPort(r.Host); err == nil {
		d.Host = net.JoinHostPort(d.Host, port)
	}
	for _, e := range p.Env {
		if slices.Contains(e.Target, req.Target) {
			d.Env[e.Key] = e.Value
		}
	}
	d.Log, d.Fail = s.build(p, files)
	if d.Fail == "" {
		d.Fail = s.deployFailures.Take(p.Name)
	}
	if d.Fail != "" {
		d.Log = append(d.Log, "Error: "+d.Fail)
	} else {
		d.Log = append(d.Log, "Build Completed in /vercel/output", "Deploying outputs...", "Deployment completed")
	}
	s.st.Deployments[d.ID] = d
	body := s.deploymentJSON(d, now)
	s.mu.Unlock()
	s.saveAndAnswer(w, http.StatusOK, body)
}

// build checks what Vercel's build of a Next.js project would need of the
// tree and returns the log it writes and why it fails ("" when it does
// not): the repository root's manifest (the install command runs there),
// the package at rootDirectory depending on next, with a Next config and
// an app or pages directory, and every workspace the install command
// builds (npm run build -w <name>).
func (s *Service) build(p *project, files map[string]string) (log []string, fail string) {
	root := str(p.RootDirectory)
	if root == "" {
		root = "."
	}
	install, buildCmd := str(p.InstallCommand), str(p.BuildCommand)
	log = append(log, fmt.Sprintf("Cloning completed: %d files", len(files)))
	if f := str(p.Framework); f != "nextjs" {
		return log, fmt.Sprintf("the project's framework is %q; this emulator builds Next.js (nextjs) projects only", f)
	}
	at := func(rel string) string { return path.Clean(path.Join(root, rel)) }
	if install != "" {
		log = append(log, fmt.Sprintf("Running \"install\" command: `%s`...", install))
		// An install command that starts with "cd ../.." runs at the
		// repository root: its package.json and lock must be there.
		dir := root
		if rest, ok := strings.CutPrefix(install, "cd "); ok {
			target, _, _ := strings.Cut(rest, " ")
			dir = path.Clean(path.Join(root, target))
		}
		if dir == ".." || strings.HasPrefix(dir, "../") {
			return log, fmt.Sprintf("Command %q exited with 1: it leaves the uploaded files", install)
		}
		if _, ok := files[path.Join(dir, "package.json")]; !ok {
			return log, fmt.Sprintf("Command %q exited with 1: npm error enoent Could not read package.json in %s", install, dir)
		}
		if _, ok := files[path.Join(dir, "package-lock.json")]; !ok && strings.Contains(install, "npm ") {
			log = append(log, "npm warn: no package-lock.json; dependencies resolved afresh")
		}
		for _, ws := range regexp.MustCompile(`-w\s+(\S+)`).FindAllStringSubmatch(install, -1) {
			if !s.hasWorkspace(p.Team, files, ws[1]) {
				return log, fmt.Sprintf("Command %q exited with 1: npm error No workspaces found: --workspace=%s", install, ws[1])
			}
		}
	}
	manifest, ok := files[at("package.json")]
	if !ok {
		return log, fmt.Sprintf("No Next.js version detected: there is no package.json at the Root Directory %q. "+
			"Make sure the Root Directory setting is the directory of your package.json file.", root)
	}
	if !s.dependsOnNext(p.Team, manifest) {
		return log, "No Next.js version detected. Make sure your package.json has \"next\" in either \"dependencies\" or " +
			"\"devDependencies\". Also check your Root Directory setting matches the directory of your package.json file."
	}
	if !hasAny(files, at("next.config.js"), at("next.config.mjs"), at("next.config.ts")) {
		return log, fmt.Sprintf("no next.config.js, next.config.mjs or next.config.ts in %s", root)
	}
	if !hasUnder(files, at("app"), at("src/app"), at("pages"), at("src/pages")) {
		return log, fmt.Sprintf("Couldn't find any `pages` or `app` directory in %s. Please create one under the project root", root)
	}
	if buildCmd == "" {
		buildCmd = "next build"
	}
	log = append(log, fmt.Sprintf("Running \"%s\"", buildCmd), "Compiled successfully")
	return log, ""
}

func hasAny(files map[string]string, names ...string) bool {
	for _, n := range names {
		if _, ok := files[n]; ok {
			return true
		}
	}
	return false
}

func hasUnder(files map[string]string, dirs ...string) bool {
	for f := range files {
		for _, d := range dirs {
			if strings.HasPrefix(f, d+"/") {
				return true
			}
		}
	}
	return false
}

// readManifest decodes one uploaded package.json.
func (s *Service) readManifest(team, sha string) (m struct {
	Name            string            `json:"name"`
	Dependencies    map[string]string `json:"dependencies"`
	DevDependencies map[string]string `json:"devDependencies"`
}, ok bool) {
	raw, err := os.ReadFile(s.filePath(team, sha))
	if err != nil {
		return m, false
	}
	return m, json.Unmarshal(raw, &m) == nil
}

func (s *Service) dependsOnNext(team, sha string) bool {
	m, ok := s.readManifest(team, sha)
	if !ok {
		return false
	}
	_, dep := m.Dependencies["next"]
	_, dev := m.DevDependencies["next"]
	return dep || dev
}

// hasWorkspace: an uploaded package.json below the root names the
// package (npm's -w takes a name or a path).
func (s *Service) hasWorkspace(team string, files map[string]string, name string) bool {
	if _, ok := files[path.Join(path.Clean(name), "package.json")]; ok {
		return true
	}
	for f, sha := range files {
		if path.Base(f) != "package.json" || f == "package.json" {
			continue
		}
		if m, ok := s.readManifest(team, sha); ok && m.Name == name {
			return true
		}
	}
	return false
}

// Deployment states a list may filter on (Vercel's readyState values).
var listStates = []string{"BUILDING", "ERROR", "INITIALIZING", "QUEUED", "READY", "CANCELED"}

// listDeployments is GET /v6/deployments: the team's deployments, newest
// first, filtered by projectId (an ID or name), app (the name), target,
// state (comma-separated), since/until (creation, ms, exclusive) and every
// meta-<key>=<value> (the deployment's meta has key with that value),
// at most limit (default 20, 1 to 100) of them: {deployments: [{uid, name,
// url, created, createdAt, state, readyState, target, meta, ...}],
// pagination: {count, next, prev}}, next being the until of the next page
// (null on the last).
func (s *Service) listDeployments(w http.ResponseWriter, r *http.Request, team string) {
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeError(w, badRequest("Invalid request: `limit` should be an integer from 1 to 100"))
			return
		}
		limit = n
	}
	var states []string
	if v := q.Get("state"); v != "" {
		for _, st := range strings.Split(v, ",") {
			st = strings.ToUpper(strings.TrimSpace(st))
			if !slices.Contains(listStates, st) {
				writeError(w, badRequest("Invalid request: `state` should be one of %s", strings.Join(listStates, ", ")))
				return
			}
			states = append(states, st)
		}
	}
	// since and until bound the creation time, both exclusive.
	bound := func(key string, otherwise int64) (int64, error) {
		v := q.Get(key)
		if v == "" {
			return otherwise, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, badRequest("Invalid request: `%s` should be a timestamp in milliseconds", key)
		}
		return n, nil
	}
	since, err := bound("since", -1)
	if err != nil {
		writeError(w, err)
		return
	}
	until, err := bound("until", math.MaxInt64)
	if err != nil {
		writeError(w, err)
		return
	}
	s.answerDeploymentList(w, q, team, states, since, until, limit)
}

func (s *Service) answerDeploymentList(w http.ResponseWriter, q url.Values, team string, states []string, since, until int64, limit int) {
	meta := map[string]string{}
	for k, vs := range q {
		if key, ok := strings.CutPrefix(k, "meta-"); ok && key != "" && len(vs) > 0 {
			meta[key] = vs[0]
		}
	}
	now := nowMillis()
	s.mu.Lock()
	defer s.mu.Unlock()
	projectID := ""
	if v := q.Get("projectId"); v != "" {
		p, err := s.projectLocked(team, v)
		if err != nil {
			writeError(w, err)
			return
		}
		projectID = p.ID
	}
	var found []*deployment
	for _, d := range s.st.Deployments {
		switch {
		case d.Team != team, projectID != "" && d.Project != projectID, q.Get("app") != "" && d.Name != q.Get("app"),
			q.Get("target") != "" && d.Target != q.Get("target"), d.CreatedAt <= since, d.CreatedAt >= until,
			len(states) > 0 && !slices.Contains(states, d.state(now)):
			continue
		}
		matches := true
		for k, v := range meta {
			if got, ok := d.Meta[k]; !ok || got != v {
				matches = false
			}
		}
		if matches {
			found = append(found, d)
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].CreatedAt != found[j].CreatedAt {
			return found[i].CreatedAt > found[j].CreatedAt
		}
		return found[i].ID > found[j].ID
	})
	var next, prev any
	if len(found) > limit {
		found = found[:limit]
		next = found[limit-1].CreatedAt
	}
	if len(found) > 0 {
		prev = found[0].CreatedAt
	}
	out := []map[string]any{}
	for _, d := range found {
		st := d.state(now)
		aliases := s.aliasesLocked(d, now)
		e := map[string]any{"uid": d.ID, "name": d.Name, "url": d.Host, "created": d.CreatedAt, "createdAt": d.CreatedAt,
			"buildingAt": d.CreatedAt, "state": st, "readyState": st, "type": "LAMBDAS", "source": "api", "target": d.Target,
			"projectId": d.Project, "meta": d.meta(), "aliasAssigned": len(aliases) > 0}
		if st != stateBuilding {
			e["ready"] = d.ReadyAt
		}
		out = append(out, e)
	}
	core.WriteJSON(w, http.StatusOK, map[string]any{"deployments": out,
		"pagination": map[string]any{"count": len(out), "next": next, "prev": prev}})
}

// getDeployment is GET /v13/deployments/{idOrUrl}.
func (s *Service) getDeployment(w http.ResponseWriter, r *http.Request, team string) {
	now := nowMillis()
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.deploymentLocked(team, r.PathValue("idOrUrl"))
	if d == nil {
		writeError(w, notFound("The deployment could not be found."))
		return
	}
	core.WriteJSON(w, http.StatusOK, s.deploymentJSON(d, now))
}

func (s *Service) deploymentLocked(team, idOrURL string) *deployment {
	for _, d := range s.st.Deployments {
		if d.Team == team && (d.ID == idOrURL || d.Host == idOrURL || strings.TrimSuffix(d.Host, portOf(d.Host)) == idOrURL) {
			return d
		}
	}
	return nil
}

func portOf(host string) string {
	if _, port, err := net.SplitHostPort(host); err == nil {
		return ":" + port
	}
	return ""
}

// events is GET /v3/deployments/{idOrUrl}/events: the build's log lines so
// far, as [{type, created, text}]; the whole log once the build ended.
func (s *Service) events(w http.ResponseWriter, r *http.Request, team string) {
	now := nowMillis()
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.deploymentLocked(team, r.PathValue("idOrUrl"))
	if d == nil {
		writeError(w, notFound("The deployment could not be found."))
		return
	}
	lines := d.Log
	if d.state(now) == stateBuilding && len(lines) > 0 {
		// Lines appear over the build's time.
		n := int(int64(len(lines)) * (now - d.CreatedAt) / max(1, d.ReadyAt-d.CreatedAt))
		lines = lines[:max(1, min(n, len(lines)-1))]
	}
	out := []map[string]any{}
	for i, l := range lines {
		typ := "stdout"
		if strings.HasPrefix(l, "Error:") {
			typ = "stderr"
		}
		out = append(out, map[string]any{"type": typ, "created": d.CreatedAt + int64(i), "text": l})
	}
	core.WriteJSON(w, http.StatusOK, out)
}

// ServeHosts serves deployments on their hosts (LocalSuffix, and project
// domains) and passes every other request to next.
func (s *Service) ServeHosts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := strings.ToLower(r.Host)
		bare := strings.TrimSuffix(host, portOf(host))
		now := nowMillis()
		s.mu.Lock()
		var d *deployment
		matched := strings.HasSuffix(bare, LocalSuffix)
		for _, p := range s.st.Projects {
			if bare == p.Name+LocalSuffix || slices.Contains(p.Domains, bare) {
				matched, d = true, s.productionLocked(p, now)
				break
			}
		}
		if d == nil && matched {
			for _, x := range s.st.Deployments {
				if strings.TrimSuffix(x.Host, portOf(x.Host)) == bare && x.state(now) == stateReady {
					d = x
				}
			}
		}
		var page string
		if d != nil {
			page = d.page()
		}
		s.mu.Unlock()
		switch {
		case !matched:
			next.ServeHTTP(w, r)
		case d == nil:
			s.core.Count("GET "+LocalSuffix, false)
			http.Error(w, "The deployment could not be found on Vercel. DEPLOYMENT_NOT_FOUND", http.StatusNotFound)
		default:
			s.core.Count("GET "+LocalSuffix, false)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("X-Vercel-Id", d.ID)
			_, _ = io.WriteString(w, page)
		}
	})
}

// page is what a ready deployment answers: the values the build inlined
// (Vercel's build of upstream's web puts the NEXT_PUBLIC_* into the page).
func (d *deployment) page() string {
	e := func(k string) string { return html.EscapeString(d.Env[k]) }
	return "<!doctype html><html><head><title>" + e("NEXT_PUBLIC_APP_NAME") + "</title></head>" +
		"<body data-deployment=\"" + d.ID + "\" data-ws-url=\"" + e("NEXT_PUBLIC_WS_URL") + "\" data-sandbox-provider=\"" +
		e("NEXT_PUBLIC_SANDBOX_PROVIDER") + "\" data-app-icon-url=\"" + e("NEXT_PUBLIC_APP_ICON_URL") + "\">" +
		"<h1>" + e("NEXT_PUBLIC_APP_NAME") + "</h1><p>Built by the emulator from " + fmt.Sprint(len(d.Files)) + " files.</p></body></html>"
}
