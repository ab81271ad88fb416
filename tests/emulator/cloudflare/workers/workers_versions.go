package workers

// Worker versions, deployments and the routes built on them: the versions
// flow wrangler uses for a redeploy (POST versions, POST deployments, PATCH
// script-settings), the secrets API, the services view wrangler reads before
// every deploy and delete, references and tail producers.
//
// Shapes follow the Cloudflare API reference and cloudflare-go/v4
// (workers.ScriptVersion*, ScriptDeployment*, ScriptSecret*); where a field
// or code was inferred, the comment says so.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// Retention: the emulator keeps the last maxVersions versions and
// maxDeployments deployments of a script (Cloudflare keeps more; what
// matters to clients is the newest ones, which GET lists first).
const (
	maxVersions    = 20
	maxDeployments = 10
)

// latestContent is what the newest version is made of: what inherit
// bindings and keep_bindings resolve against.
func (ws *workerScript) latestContent() *workerContent {
	if n := len(ws.Versions); n > 0 {
		v := ws.Versions[n-1]
		if v.ID == ws.liveVersionID() {
			return &ws.workerContent
		}
		return &v.Content
	}
	return &ws.workerContent
}

// liveVersionID is the version the current deployment serves (the one with
// the largest share), "" when there is no deployment.
func (ws *workerScript) liveVersionID() string {
	if n := len(ws.Deployments); n > 0 {
		return ws.Deployments[n-1].live()
	}
	return ""
}

// live is the version with the largest share (the first of two equal
// ones): its content is the script's own (what settings, content and the
// other scripts' bindings see), and it runs queue batches and crons; a
// split deployment serves requests to both versions (split.go).
func (d *workerDeployment) live() string {
	best, pct := "", -1.0
	for _, v := range d.Versions {
		if v.Percentage > pct {
			best, pct = v.VersionID, v.Percentage
		}
	}
	return best
}

func (ws *workerScript) version(id string) *workerVersion {
	for _, v := range ws.Versions {
		if v.ID == id {
			return v
		}
	}
	return nil
}

// modulesOf are a version's modules: the script's own for the live
// version, which keeps them there; nil for one whose modules were dropped.
func (ws *workerScript) modulesOf(v *workerVersion) []workerModule {
	if v.ID == ws.liveVersionID() {
		return ws.workerContent.Modules
	}
	return v.Content.Modules
}

// addVersion records content as the script's next version.
func (ws *workerScript) addVersion(content workerContent, now time.Time, source, trigger, message, tag string) *workerVersion {
	num := 1
	if n := len(ws.Versions); n > 0 {
		num = ws.Versions[n-1].Number + 1
	}
	v := &workerVersion{
		ID: core.NewUUID(), Number: num, CreatedOn: now, Source: source, TriggeredBy: trigger,
		Message: message, VersionTag: tag, Content: content,
	}
	ws.Versions = append(ws.Versions, v)
	if len(ws.Versions) > maxVersions {
		ws.Versions = slices.Clone(ws.Versions[len(ws.Versions)-maxVersions:])
	}
	return v
}

// deploy makes shares the script's current deployment: the largest share's
// content becomes the script's own (its modules move there, so no body is
// stored twice; the version it replaces gets its modules back). Every
// version a kept deployment names keeps its modules, so a split deployment
// runs both of its versions and an earlier deployment can be deployed
// again; versions older than the live one that no kept deployment names
// give theirs up (deploying one of them is then refused), which keeps the
// state file small.
func (ws *workerScript) deploy(shares []deployedShare, now time.Time, source, message string) error {
	d := &workerDeployment{ID: core.NewUUID(), CreatedOn: now, Source: source, Message: message, Versions: shares}
	for _, sh := range shares {
		v := ws.version(sh.VersionID)
		if v == nil {
			return core.NewAPIError(http.StatusBadRequest, 10021, fmt.Sprintf("version %s does not exist", sh.VersionID))
		}
		if ws.modulesOf(v) == nil {
			return core.NewAPIError(http.StatusBadRequest, 10021,
				fmt.Sprintf("version %s was superseded and no deployment names it; the emulator no longer keeps its modules", sh.VersionID))
		}
	}
	liveID, oldID := d.live(), ws.liveVersionID()
	if liveID != oldID {
		if old := ws.version(oldID); old != nil {
			old.Content.Modules = ws.workerContent.Modules
		}
		v := ws.version(liveID)
		ws.workerContent = v.Content
		v.Content.Modules = nil
	}
	ws.Deployments = append(ws.Deployments, d)
	if len(ws.Deployments) > maxDeployments {
		ws.Deployments = slices.Clone(ws.Deployments[len(ws.Deployments)-maxDeployments:])
	}
	ws.dropUnreferencedModules()
	ws.LastDeployedFrom = source
	ws.ModifiedOn = now
	return nil
}

// dropUnreferencedModules drops the modules of the versions older than the
// live one that no kept deployment names.
func (ws *workerScript) dropUnreferencedModules() {
	live := ws.version(ws.liveVersionID())
	if live == nil {
		return
	}
	named := map[string]bool{}
	for _, d := range ws.Deployments {
		for _, sh := range d.Versions {
			named[sh.VersionID] = true
		}
	}
	for _, v := range ws.Versions {
		if v.Number < live.Number && !named[v.ID] {
			v.Content.Modules = nil
		}
	}
}

// adoptHistory gives a script stored before versions existed one version
// and one deployment for its current content.
func (ws *workerScript) adoptHistory() {
	if ws.Tag == "" {
		ws.Tag = core.NewHexID()
	}
	if len(ws.Versions) > 0 {
		return
	}
	if ws.LastDeployedFrom == "" {
		ws.LastDeployedFrom = "api"
	}
	content := ws.workerContent
	content.Modules = nil
	v := &workerVersion{ID: core.NewUUID(), Number: 1, CreatedOn: ws.ModifiedOn, Source: ws.LastDeployedFrom, TriggeredBy: "upload", Content: content}
	ws.Versions = []*workerVersion{v}
	ws.Deployments = []*workerDeployment{{ID: core.NewUUID(), CreatedOn: ws.ModifiedOn, Source: v.Source,
		Versions: []deployedShare{{VersionID: v.ID, Percentage: 100}}}}
}

// handlerRE finds the event handlers a module defines. Inferred: the real
// API reports the handlers the script's default export implements, which it
// learns by running the script; scanning for `name(` / `name:` finds the
// same for ordinary modules.
var handlerRE = regexp.MustCompile(`\b(fetch|scheduled|queue|email|tail|trace)\s*(\(|:)`)

func (c *workerContent) handlers() []string {
	out := []string{}
	for _, m := range c.Modules {
		if m.Name != c.MainModule {
			continue
		}
		for _, match := range handlerRE.FindAllStringSubmatch(string(m.Content), -1) {
			if !slices.Contains(out, match[1]) {
				out = append(out, match[1])
			}
		}
	}
	sort.Strings(out)
	return out
}

// versionJSON is a version as GET versions/{id} and POST versions answer it.
type versionJSON struct {
	ID          string            `json:"id"`
	Number      int               `json:"number"`
	Metadata    versionMetaJSON   `json:"metadata"`
	Annotations map[string]string `json:"annotations"`
	Resources   *versionResources `json:"resources,omitempty"`
	// StartupTimeMs is in POST versions' answer only.
	StartupTimeMs *int `json:"startup_time_ms,omitempty"`
}

type versionMetaJSON struct {
	AuthorEmail string `json:"author_email"`
	AuthorID    string `json:"author_id"`
	CreatedOn   string `json:"created_on"`
	ModifiedOn  string `json:"modified_on"`
	Source      string `json:"source"`
	HasPreview  bool   `json:"hasPreview"`
}

type versionResources struct {
	Bindings      []json.RawMessage `json:"bindings"`
	Script        versionScriptJSON `json:"script"`
	ScriptRuntime versionRuntime    `json:"script_runtime"`
}

type versionScriptJSON struct {
	Etag             string   `json:"etag"`
	Handlers         []string `json:"handlers"`
	LastDeployedFrom string   `json:"last_deployed_from"`
	PlacementMode    string   `json:"placement_mode,omitempty"`
}

type versionRuntime struct {
	CompatibilityDate  string         `json:"compatibility_date"`
	CompatibilityFlags []string       `json:"compatibility_flags"`
	Limits             map[string]int `json:"limits"`
	MigrationTag       string         `json:"migration_tag,omitempty"`
	UsageModel         string         `json:"usage_model"`
}

// defaultCPUMs is the CPU limit a version without limits reports (Workers
// Paid's default, 30 s).
const defaultCPUMs = 30000

// cloudflare.AuthorEmail is who the emulator says made versions and deployments.

func (ws *workerScript) versionJSON(v *workerVersion, detail bool) versionJSON {
	out := versionJSON{
		ID: v.ID, Number: v.Number,
		Metadata: versionMetaJSON{
			AuthorEmail: cloudflare.AuthorEmail, AuthorID: cloudflare.TokenID(cloudflare.AuthorEmail), CreatedOn: cloudflare.Time(v.CreatedOn),
			ModifiedOn: cloudflare.Time(v.CreatedOn), Source: v.Source,
		},
		Annotations: map[string]string{"workers/triggered_by": v.TriggeredBy},
	}
	if v.Message != "" {
		out.Annotations["workers/message"] = v.Message
	}
	if v.VersionTag != "" {
		out.Annotations["workers/tag"] = v.VersionTag
	}
	if !detail {
		return out
	}
	c := &v.Content
	handlers := c.handlers()
	if v.ID == ws.liveVersionID() || c.Modules == nil {
		// The modules of the deployed version live on the script; a
		// superseded version's are gone, so its handlers are the script's.
		handlers = ws.handlers()
	}
	res := &versionResources{
		Bindings: make([]json.RawMessage, len(c.Bindings)),
		Script:   versionScriptJSON{Etag: c.Etag, Handlers: handlers, LastDeployedFrom: v.Source, PlacementMode: c.placementMode()},
		ScriptRuntime: versionRuntime{
			CompatibilityDate: c.CompatibilityDate, CompatibilityFlags: nonNilStrings(c.CompatibilityFlags),
			Limits: map[string]int{"cpu_ms": defaultCPUMs}, MigrationTag: c.MigrationTag, UsageModel: "standard",
		},
	}
	if c.Limits != nil {
		res.ScriptRuntime.Limits["cpu_ms"] = c.Limits.CPUMs
	}
	for i, raw := range c.Bindings {
		res.Bindings[i] = redactBinding(raw)
	}
	out.Resources = res
	return out
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (ws *workerScript) handlers() []string { return ws.workerContent.handlers() }

type deploymentJSON struct {
	ID          string            `json:"id"`
	Source      string            `json:"source"`
	Strategy    string            `json:"strategy"`
	AuthorEmail string            `json:"author_email"`
	CreatedOn   string            `json:"created_on"`
	Annotations map[string]string `json:"annotations"`
	Versions    []deployedShare   `json:"versions"`
}

func (d *workerDeployment) json() deploymentJSON {
	out := deploymentJSON{
		ID: d.ID, Source: d.Source, Strategy: "percentage", AuthorEmail: cloudflare.AuthorEmail, CreatedOn: cloudflare.Time(d.CreatedOn),
		Annotations: map[string]string{}, Versions: d.Versions,
	}
	if d.Message != "" {
		out.Annotations["workers/message"] = d.Message
	}
	return out
}

func (s *Service) registerWorkerVersions() {
	const base = "/client/v4/accounts/{account_id}/workers"
	s.cf.API("POST "+base+"/scripts/{script_name}/versions", cloudflare.AuthAccount, s.wkVersionUpload)
	s.cf.API("GET "+base+"/scripts/{script_name}/versions", cloudflare.AuthAccount, s.wkVersionList)
	s.cf.API("GET "+base+"/scripts/{script_name}/versions/{version_id}", cloudflare.AuthAccount, s.wkVersionGet)
	s.cf.API("GET "+base+"/scripts/{script_name}/deployments", cloudflare.AuthAccount, s.wkDeploymentList)
	s.cf.API("POST "+base+"/scripts/{script_name}/deployments", cloudflare.AuthAccount, s.wkDeploymentCreate)
	s.cf.API("GET "+base+"/scripts/{script_name}/deployments/{deployment_id}", cloudflare.AuthAccount, s.wkDeploymentGet)
	s.cf.API("DELETE "+base+"/scripts/{script_name}/deployments/{deployment_id}", cloudflare.AuthAccount, s.wkDeploymentDelete)
	s.cf.API("GET "+base+"/scripts/{script_name}/script-settings", cloudflare.AuthAccount, s.wkScriptSettingsGet)
	s.cf.API("PATCH "+base+"/scripts/{script_name}/script-settings", cloudflare.AuthAccount, s.wkScriptSettingsPatch)
	s.cf.API("GET "+base+"/scripts/{script_name}/secrets", cloudflare.AuthAccount, s.wkSecretList)
	s.cf.API("PUT "+base+"/scripts/{script_name}/secrets", cloudflare.AuthAccount, s.wkSecretPut)
	s.cf.API("GET "+base+"/scripts/{script_name}/secrets/{secret_name}", cloudflare.AuthAccount, s.wkSecretGet)
	s.cf.API("DELETE "+base+"/scripts/{script_name}/secrets/{secret_name}", cloudflare.AuthAccount, s.wkSecretDelete)
	s.cf.API("GET "+base+"/scripts/{script_name}/references", cloudflare.AuthAccount, s.wkReferences)
	s.cf.API("GET "+base+"/services/{script_name}", cloudflare.AuthAccount, s.wkServiceGet)
	s.cf.API("DELETE "+base+"/services/{script_name}", cloudflare.AuthAccount, s.wkServiceDelete)
	s.cf.API("GET "+base+"/tails/by-consumer/{script_name}", cloudflare.AuthAccount, s.wkTailsByConsumer)
}

// wkVersionUpload is POST versions: the upload of PUT scripts, stored as a
// version that is not deployed. The script must exist (inferred: wrangler
// only uses this route for an existing Worker).
func (s *Service) wkVersionUpload(w http.ResponseWriter, r *http.Request) {
	acct, name := r.PathValue("account_id"), r.PathValue("script_name")
	up, err := parseScriptUpload(w, r, false)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	s.mu.Lock()
	ws, v, err := s.wkApplyLocked(acct, name, up, uploadMode{strict: strictInherit(r), source: uploadSource(r)})
	var out versionJSON
	if err == nil {
		out = ws.versionJSON(v, true)
		startup := 1
		out.StartupTimeMs = &startup
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

// wkVersionList lists versions newest first, in the V4 page shape
// (result.items); ?deployable=true keeps the versions that still have their
// modules, i.e. the ones a deployment may pick.
func (s *Service) wkVersionList(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	items := []versionJSON{}
	if err == nil {
		deployable := r.URL.Query().Get("deployable") == "true"
		for i := len(ws.Versions) - 1; i >= 0; i-- {
			v := ws.Versions[i]
			if deployable && ws.modulesOf(v) == nil {
				continue
			}
			items = append(items, ws.versionJSON(v, false))
		}
	}
	s.mu.Unlock()
	if err != nil {
		core.WriteError(w, err)
		return
	}
	page, perPage := core.PageParams(r, max(len(items), 1), max(len(items), 100))
	pageItems, info := core.Paginate(items, page, perPage)
	core.WriteEnvelope(w, http.StatusOK, map[string]any{"items": pageItems}, info, nil)
}

func versionNotFound() *core.APIError {
	// Inferred: the code of a missing version was not found in public
	// responses; 10217 is what the API family uses for version errors.
	return core.NewAPIError(http.StatusNotFound, 10217, "workers.api.error.version_not_found")
}

func (s *Service) wkVersionGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var out versionJSON
	if err == nil {
		if v := ws.version(r.PathValue("version_id")); v == nil {
			err = versionNotFound()
		} else {
			out = ws.versionJSON(v, true)
		}
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

// wkDeploymentList answers {"deployments": [...]}, newest first.
func (s *Service) wkDeploymentList(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	out := map[string][]deploymentJSON{"deployments": {}}
	if err == nil {
		for i := len(ws.Deployments) - 1; i >= 0; i-- {
			out["deployments"] = append(out["deployments"], ws.Deployments[i].json())
		}
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

func deploymentNotFound() *core.APIError {
	// Assumed: no public response of a missing deployment was found; the
	// code follows the version's.
	return core.NewAPIError(http.StatusNotFound, 10218, "workers.api.error.deployment_not_found")
}

// deploymentIndex is the position of the path's deployment in ws's.
func (ws *workerScript) deploymentIndex(r *http.Request) (int, error) {
	id := r.PathValue("deployment_id")
	i := slices.IndexFunc(ws.Deployments, func(d *workerDeployment) bool { return d.ID == id })
	if i < 0 {
		return 0, deploymentNotFound()
	}
	return i, nil
}

// wkDeploymentGet is GET deployments/{id}: one deployment, as the list
// shows it (documented).
func (s *Service) wkDeploymentGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var out deploymentJSON
	if err == nil {
		var i int
		if i, err = ws.deploymentIndex(r); err == nil {
			out = ws.Deployments[i].json()
		}
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

// wkDeploymentDelete is DELETE deployments/{id}. Documented: the latest
// deployment, which serves the script's traffic, cannot be deleted; any
// other can. Assumed: the refusal's code (10021, the family's invalid
// request) and an answer with a null result. A version only the deleted
// deployment named gives up its modules, as a superseded one does.
func (s *Service) wkDeploymentDelete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	if err == nil {
		var i int
		if i, err = ws.deploymentIndex(r); err == nil {
			if i == len(ws.Deployments)-1 {
				err = wkInvalid("deployment %s is the latest deployment of script %s, which serves its traffic: it cannot be deleted (deploy another first)", ws.Deployments[i].ID, ws.Name)
			} else {
				ws.Deployments = slices.Delete(ws.Deployments, i, i+1)
				ws.dropUnreferencedModules()
			}
		}
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, nil)
}

// wkDeploymentCreate deploys versions by percentage; the shares must name
// distinct existing versions and add up to 100.
func (s *Service) wkDeploymentCreate(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Strategy    string          `json:"strategy"`
		Versions    []deployedShare `json:"versions"`
		Annotations map[string]any  `json:"annotations"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	bad := func(format string, args ...any) {
		core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10021, fmt.Sprintf(format, args...)))
	}
	if body.Strategy != "percentage" {
		bad("strategy must be \"percentage\", got %q", body.Strategy)
		return
	}
	total, seen := 0.0, map[string]bool{}
	for _, v := range body.Versions {
		if v.Percentage < 0 || v.Percentage > 100 || seen[v.VersionID] {
			bad("each version must appear once with a percentage from 0 to 100")
			return
		}
		seen[v.VersionID] = true
		total += v.Percentage
	}
	if len(body.Versions) == 0 || len(body.Versions) > 2 || total != 100 {
		bad("a deployment names one or two versions whose percentages add up to 100")
		return
	}
	message, _ := body.Annotations["workers/message"].(string)
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var out deploymentJSON
	if err == nil {
		for _, v := range body.Versions {
			if ws.version(v.VersionID) == nil {
				err = versionNotFound()
			}
		}
	}
	if err == nil {
		if err = ws.deploy(body.Versions, time.Now().UTC(), uploadSource(r), message); err == nil {
			out = ws.Deployments[len(ws.Deployments)-1].json()
		}
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

// scriptSettingsJSON is GET/PATCH script-settings: the script-level
// settings only.
func (ws *workerScript) scriptSettingsJSON() map[string]any {
	out := map[string]any{"logpush": ws.logpush(), "tags": ws.tags(), "tail_consumers": ws.tailConsumers()}
	if o := ws.observability(); o != nil {
		out["observability"] = o
	} else {
		out["observability"] = nil
	}
	return out
}

// tags are the script's tags as set by an upload or a settings PATCH.
func (ws *workerScript) tags() []string {
	var tags []string
	if raw, has := ws.Settings["tags"]; has {
		_ = json.Unmarshal(raw, &tags)
	}
	return nonNilStrings(tags)
}

func (s *Service) wkScriptSettingsGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var out map[string]any
	if err == nil {
		out = ws.scriptSettingsJSON()
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

// wkScriptSettingsPatch is PATCH script-settings (JSON): the script-level
// settings present in the body change, each checked like an upload's; the
// rest of the body is ignored.
func (s *Service) wkScriptSettingsPatch(w http.ResponseWriter, r *http.Request) {
	var body settingsFields
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	body.Placement, body.Limits = nil, nil // version settings: not this route's
	cfg, err := parseScriptConfig(body)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var out map[string]any
	if err == nil {
		ws.applyScriptLevel(cfg)
		out = ws.scriptSettingsJSON()
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

type secretJSON struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

func secretNotFound(name string) *core.APIError {
	// Assumed: 10056 is the code of a missing binding in the Workers family.
	return core.NewAPIError(http.StatusNotFound, 10056, fmt.Sprintf("workers.api.error.binding_not_found: secret %s not found", name))
}

// secretsOf lists a content's secret bindings (secret_text and secret_key).
func secretsOf(c *workerContent) []secretJSON {
	out := []secretJSON{}
	for _, raw := range c.Bindings {
		var b bindingSpec
		if json.Unmarshal(raw, &b) == nil && (b.Type == "secret_text" || b.Type == "secret_key") {
			out = append(out, secretJSON{Name: b.Name, Type: b.Type})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *Service) wkSecretList(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var out []secretJSON
	if err == nil {
		out = secretsOf(&ws.workerContent)
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

func (s *Service) wkSecretGet(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("secret_name")
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var out secretJSON
	if err == nil {
		err = secretNotFound(name)
		for _, sec := range secretsOf(&ws.workerContent) {
			if sec.Name == name {
				out, err = sec, nil
			}
		}
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

// wkSecretPut adds or replaces one secret_text binding. Like Cloudflare, a
// secret change is a new version (triggered_by "secret") of the deployed
// content, deployed at once; the secret then survives later uploads that do
// not bind its name (see wkApplyLocked).
func (s *Service) wkSecretPut(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name string  `json:"name"`
		Text *string `json:"text"`
		Type string  `json:"type"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	if body.Type == "" {
		body.Type = "secret_text"
	}
	switch {
	case body.Name == "":
		core.WriteError(w, wkInvalid("a secret needs a name"))
		return
	case body.Type != "secret_text":
		core.WriteError(w, wkInvalid("secret %s: type %q is not supported by the emulator (secret_text is)", body.Name, body.Type))
		return
	case body.Text == nil:
		core.WriteError(w, wkInvalid("secret %s needs \"text\"", body.Name))
		return
	}
	raw, _ := json.Marshal(map[string]string{"type": "secret_text", "name": body.Name, "text": *body.Text})
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	if err == nil {
		content := ws.workerContent
		content.Bindings = slices.DeleteFunc(slices.Clone(content.Bindings), func(b json.RawMessage) bool {
			var spec bindingSpec
			return json.Unmarshal(b, &spec) == nil && spec.Name == body.Name
		})
		content.Bindings = append(content.Bindings, raw)
		err = s.wkSecretVersionLocked(ws, content, uploadSource(r))
		if err == nil && !slices.Contains(ws.APISecrets, body.Name) {
			ws.APISecrets = append(ws.APISecrets, body.Name)
		}
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, secretJSON{Name: body.Name, Type: "secret_text"})
}

func (s *Service) wkSecretDelete(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("secret_name")
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	if err == nil {
		content := ws.workerContent
		found := false
		content.Bindings = slices.DeleteFunc(slices.Clone(content.Bindings), func(b json.RawMessage) bool {
			var spec bindingSpec
			hit := json.Unmarshal(b, &spec) == nil && spec.Name == name && (spec.Type == "secret_text" || spec.Type == "secret_key")
			found = found || hit
			return hit
		})
		if !found {
			err = secretNotFound(name)
		} else {
			err = s.wkSecretVersionLocked(ws, content, uploadSource(r))
			ws.APISecrets = slices.DeleteFunc(ws.APISecrets, func(n string) bool { return n == name })
		}
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, nil)
}

// wkSecretVersionLocked records content (the deployed content with one
// secret changed) as a new deployed version.
func (s *Service) wkSecretVersionLocked(ws *workerScript, content workerContent, source string) error {
	now := time.Now().UTC()
	v := ws.addVersion(content, now, source, "secret", "", "")
	return ws.deploy([]deployedShare{{VersionID: v.ID, Percentage: 100}}, now, source, "")
}

type serviceRefJSON struct {
	Service     string `json:"service"`
	Environment string `json:"environment"`
	Name        string `json:"name"`
}

type doRefJSON struct {
	NamespaceID                 string `json:"namespace_id"`
	Name                        string `json:"name"`
	DurableObjectNamespaceName  string `json:"durable_object_namespace_name"`
	Service                     string `json:"service"`
	Environment                 string `json:"environment"`
	DurableObjectNamespaceClass string `json:"class_name"`
}

// wkReferences lists what depends on a script, in the shape wrangler's
// delete reads: incoming service bindings, and every binding (the script's
// own included) to a Durable Object class it implements.
func (s *Service) wkReferences(w http.ResponseWriter, r *http.Request) {
	acct, name := r.PathValue("account_id"), r.PathValue("script_name")
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	incoming, outgoing, dos := []serviceRefJSON{}, []serviceRefJSON{}, []doRefJSON{}
	if err == nil {
		for _, key := range core.SortedKeys(s.st.Workers) {
			other := s.st.Workers[key]
			if other.AccountID != acct {
				continue
			}
			for _, raw := range other.Bindings {
				var b bindingSpec
				if json.Unmarshal(raw, &b) != nil {
					continue
				}
				switch {
				case b.Type == "service" && b.Service == name && other.Name != name:
					incoming = append(incoming, serviceRefJSON{Service: other.Name, Environment: "production", Name: b.Name})
				case b.Type == "service" && other.Name == name:
					outgoing = append(outgoing, serviceRefJSON{Service: b.Service, Environment: "production", Name: b.Name})
				case b.Type == "durable_object_namespace" && slices.Contains(ws.Classes, b.ClassName) &&
					(b.ScriptName == name || (b.ScriptName == "" && other.Name == name)):
					dos = append(dos, doRefJSON{
						NamespaceID: doNamespaceID(acct, name, b.ClassName), Name: b.Name,
						DurableObjectNamespaceName: name + "_" + b.ClassName, Service: other.Name,
						Environment: "production", DurableObjectNamespaceClass: b.ClassName,
					})
				}
			}
		}
	}
	s.mu.Unlock()
	core.Respond(w, err, map[string]any{
		"services":           map[string]any{"incoming": incoming, "outgoing": outgoing, "pages_function": false},
		"durable_objects":    dos,
		"dispatch_outbounds": []any{},
	})
}

// doNamespaceID is a stable ID for the namespace of a class.
func doNamespaceID(acct, script, class string) string {
	return cloudflare.TokenID("do:" + acct + "/" + script + "/" + class)
}

// serviceJSON is GET workers/services/{name}: the script under its one
// ("production") environment.
type serviceJSON struct {
	ID                 string             `json:"id"`
	DefaultEnvironment serviceEnvironment `json:"default_environment"`
	Environments       []serviceEnvBrief  `json:"environments"`
	CreatedOn          string             `json:"created_on"`
	ModifiedOn         string             `json:"modified_on"`
}

type serviceEnvBrief struct {
	Environment string `json:"environment"`
	CreatedOn   string `json:"created_on"`
	ModifiedOn  string `json:"modified_on"`
}

type serviceEnvironment struct {
	Environment string            `json:"environment"`
	CreatedOn   string            `json:"created_on"`
	ModifiedOn  string            `json:"modified_on"`
	Script      serviceScriptJSON `json:"script"`
}

type serviceScriptJSON struct {
	ID                string   `json:"id"`
	Tag               string   `json:"tag"`
	Tags              []string `json:"tags"`
	Etag              string   `json:"etag"`
	Handlers          []string `json:"handlers"`
	LastDeployedFrom  string   `json:"last_deployed_from"`
	MigrationTag      string   `json:"migration_tag,omitempty"`
	CompatibilityDate string   `json:"compatibility_date,omitempty"`
	UsageModel        string   `json:"usage_model"`
	CreatedOn         string   `json:"created_on"`
	ModifiedOn        string   `json:"modified_on"`
}

// serviceNotFound is what GET and DELETE workers/services answer for a
// missing Worker. Inferred from wrangler, which treats this code (and
// 10007) as "the Worker does not exist yet" before a first deploy.
func serviceNotFound() *core.APIError {
	return core.NewAPIError(http.StatusNotFound, 10090, "workers.api.error.service_not_found")
}

func (s *Service) wkServiceGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ws, ok := s.st.Workers[wkKey(r.PathValue("account_id"), r.PathValue("script_name"))]
	var out serviceJSON
	if ok {
		created, modified := cloudflare.Time(ws.CreatedOn), cloudflare.Time(ws.ModifiedOn)
		tags := ws.tags()
		out = serviceJSON{
			ID: ws.Name, CreatedOn: created, ModifiedOn: modified,
			Environments: []serviceEnvBrief{{Environment: "production", CreatedOn: created, ModifiedOn: modified}},
			DefaultEnvironment: serviceEnvironment{
				Environment: "production", CreatedOn: created, ModifiedOn: modified,
				Script: serviceScriptJSON{
					ID: ws.Name, Tag: ws.Tag, Tags: nonNilStrings(tags), Etag: ws.Etag, Handlers: ws.handlers(),
					LastDeployedFrom: ws.LastDeployedFrom, MigrationTag: ws.MigrationTag,
					CompatibilityDate: ws.CompatibilityDate, UsageModel: "standard", CreatedOn: created, ModifiedOn: modified,
				},
			},
		}
	}
	s.mu.Unlock()
	if !ok {
		core.WriteError(w, serviceNotFound())
		return
	}
	core.WriteResult(w, out)
}

// wkServiceDelete is wrangler's delete: like DELETE scripts, except that a
// queue consumer does not hold the script back (wrangler asks
// GET references first, which does not report consumers; the consumers go
// with the script).
func (s *Service) wkServiceDelete(w http.ResponseWriter, r *http.Request) {
	acct, name := r.PathValue("account_id"), r.PathValue("script_name")
	force := r.URL.Query().Get("force") == "true"
	s.mu.Lock()
	_, ok := s.st.Workers[wkKey(acct, name)]
	var err error
	if !ok {
		err = serviceNotFound()
	}
	if err == nil && !force {
		var refs []string
		for _, ref := range s.wkReferencesLocked(acct, name) {
			if !strings.HasPrefix(ref, "consumer of queue ") {
				refs = append(refs, ref)
			}
		}
		if len(refs) > 0 {
			err = core.NewAPIError(http.StatusBadRequest, 10064, fmt.Sprintf(
				"script %s is still referenced by %s; remove those references or delete with force=true", name, strings.Join(refs, ", ")))
		}
	}
	if err == nil {
		s.wkRemoveLocked(acct, name)
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, nil)
}

type tailProducerJSON struct {
	Producer struct {
		Script      string `json:"script"`
		Environment string `json:"environment,omitempty"`
	} `json:"producer"`
}

// wkTailsByConsumer lists the scripts whose tail_consumers name this one
// (from the upload metadata or script-settings). It answers an empty list
// for a script that does not exist (inferred; wrangler only asks for
// existing ones).
func (s *Service) wkTailsByConsumer(w http.ResponseWriter, r *http.Request) {
	acct, name := r.PathValue("account_id"), r.PathValue("script_name")
	s.mu.Lock()
	out := []tailProducerJSON{}
	for _, key := range core.SortedKeys(s.st.Workers) {
		ws := s.st.Workers[key]
		if ws.AccountID != acct {
			continue
		}
		var consumers []struct {
			Service string `json:"service"`
		}
		var meta struct {
			TailConsumers json.RawMessage `json:"tail_consumers"`
		}
		_ = json.Unmarshal(ws.Metadata, &meta)
		raw := meta.TailConsumers
		if set, ok := ws.Settings["tail_consumers"]; ok {
			raw = set
		}
		_ = json.Unmarshal(raw, &consumers)
		for _, c := range consumers {
			if c.Service == name {
				var p tailProducerJSON
				p.Producer.Script = ws.Name
				out = append(out, p)
				break
			}
		}
	}
	s.mu.Unlock()
	core.WriteResult(w, out)
}
