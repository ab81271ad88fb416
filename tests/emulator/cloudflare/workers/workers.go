package workers

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

func (s *Service) registerWorkers() {
	const base = "/client/v4/accounts/{account_id}/workers"
	s.cf.API("GET "+base+"/scripts", cloudflare.AuthAccount, s.wkList)
	s.cf.API("PUT "+base+"/scripts/{script_name}", cloudflare.AuthAccount, s.wkUpload)
	s.cf.API("GET "+base+"/scripts/{script_name}", cloudflare.AuthAccount, s.wkContent)
	s.cf.API("DELETE "+base+"/scripts/{script_name}", cloudflare.AuthAccount, s.wkDelete)
	s.cf.API("GET "+base+"/scripts/{script_name}/settings", cloudflare.AuthAccount, s.wkSettings)
	s.cf.API("PATCH "+base+"/scripts/{script_name}/settings", cloudflare.AuthAccount, s.wkSettingsPatch)
	s.cf.API("GET "+base+"/scripts/{script_name}/content/v2", cloudflare.AuthAccount, s.wkContentV2)
	s.cf.API("PUT "+base+"/scripts/{script_name}/content", cloudflare.AuthAccount, s.wkContentPut)
	s.cf.API("GET "+base+"/scripts/{script_name}/schedules", cloudflare.AuthAccount, s.wkGetSchedules)
	s.cf.API("PUT "+base+"/scripts/{script_name}/schedules", cloudflare.AuthAccount, s.wkPutSchedules)
	s.cf.API("GET "+base+"/scripts/{script_name}/subdomain", cloudflare.AuthAccount, s.wkGetScriptSubdomain)
	s.cf.API("POST "+base+"/scripts/{script_name}/subdomain", cloudflare.AuthAccount, s.wkSetScriptSubdomain)
	s.cf.API("DELETE "+base+"/scripts/{script_name}/subdomain", cloudflare.AuthAccount, s.wkDeleteScriptSubdomain)
	s.cf.API("GET "+base+"/subdomain", cloudflare.AuthAccount, s.wkGetAccountSubdomain)
	s.cf.API("PUT "+base+"/subdomain", cloudflare.AuthAccount, s.wkPutAccountSubdomain)
	s.registerWorkerVersions()
}

// wkNameRE is the script name rule: lower-case letters, digits, '_' and '-'
// (upper case is rejected by the real API with 10016).
var wkNameRE = regexp.MustCompile(`^[a-z0-9_][a-z0-9_-]{0,62}$`)

// wkBindingTypes are the binding types the upload accepts: every type
// cloudflare-go v4 knows. Only the types whose targets the emulator models
// (d1, kv_namespace, r2_bucket, queue, service, durable_object_namespace)
// have their targets checked; the rest are stored as uploaded.
var wkBindingTypes = map[string]bool{
	"ai": true, "analytics_engine": true, "assets": true, "browser": true, "d1": true,
	"dispatch_namespace": true, "durable_object_namespace": true, "hyperdrive": true, "json": true,
	"kv_namespace": true, "mtls_certificate": true, "plain_text": true, "pipelines": true, "queue": true,
	"r2_bucket": true, "secret_text": true, "service": true, "tail_consumer": true, "vectorize": true,
	"version_metadata": true, "secrets_store_secret": true, "secret_key": true, "workflow": true,
}

// wkRequiredField is the target field each modelled binding type must carry.
var wkRequiredField = map[string]string{
	"d1": "database_id", "kv_namespace": "namespace_id", "r2_bucket": "bucket_name", "queue": "queue_name",
	"service": "service", "durable_object_namespace": "class_name",
}

func scriptNotFound() *core.APIError {
	return core.NewAPIError(http.StatusNotFound, 10007, "workers.api.error.script_not_found")
}

func wkInvalid(format string, args ...any) *core.APIError {
	return core.NewAPIError(http.StatusBadRequest, 10021, fmt.Sprintf(format, args...))
}

// bindingSpec is the part of a binding the emulator checks; the binding
// itself is stored as uploaded.
type bindingSpec struct {
	Type        string  `json:"type"`
	Name        string  `json:"name"`
	ID          string  `json:"id"`
	DatabaseID  string  `json:"database_id"` // d1: the SDKs' name; id is its deprecated alias
	NamespaceID string  `json:"namespace_id"`
	BucketName  string  `json:"bucket_name"`
	QueueName   string  `json:"queue_name"`
	Service     string  `json:"service"`
	Environment string  `json:"environment"`
	ClassName   string  `json:"class_name"`
	ScriptName  string  `json:"script_name"`
	Text        *string `json:"text"`
}

// target is the field wkRequiredField names.
func (b bindingSpec) target() string {
	switch b.Type {
	case "d1":
		if b.ID != "" {
			return b.ID
		}
		return b.DatabaseID
	case "kv_namespace":
		return b.NamespaceID
	case "r2_bucket":
		return b.BucketName
	case "queue":
		return b.QueueName
	case "service":
		return b.Service
	case "durable_object_namespace":
		return b.ClassName
	}
	return ""
}

type renamedClass struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// migrationStep is one step of a Durable Object migration.
type migrationStep struct {
	NewClasses         []string        `json:"new_classes"`
	NewSqliteClasses   []string        `json:"new_sqlite_classes"`
	DeletedClasses     []string        `json:"deleted_classes"`
	RenamedClasses     []renamedClass  `json:"renamed_classes"`
	TransferredClasses json.RawMessage `json:"transferred_classes"`
}

// migrationSpec is metadata.migrations: a single step inline, or steps.
type migrationSpec struct {
	OldTag string `json:"old_tag"`
	NewTag string `json:"new_tag"`
	migrationStep
	Steps []migrationStep `json:"steps"`
}

func (m *migrationSpec) steps() []migrationStep {
	if len(m.Steps) > 0 {
		return m.Steps
	}
	return []migrationStep{m.migrationStep}
}

// scriptMetadata is the metadata part of an upload; other keys are ignored.
type scriptMetadata struct {
	MainModule         string            `json:"main_module"`
	BodyPart           string            `json:"body_part"`
	CompatibilityDate  string            `json:"compatibility_date"`
	CompatibilityFlags []string          `json:"compatibility_flags"`
	Bindings           []json.RawMessage `json:"bindings"`
	KeepBindings       []string          `json:"keep_bindings"`
	Migrations         *migrationSpec    `json:"migrations"`
	Annotations        map[string]any    `json:"annotations"`
	// settingsFields are placement, limits (the version's), observability,
	// logpush, tail consumers and tags (the script's: an upload that
	// carries one replaces it, one without it leaves it as it was).
	settingsFields

	Assets json.RawMessage `json:"assets"` // {jwt, config} (assets.go)
}

// scriptUpload is a parsed, structurally valid upload; what it references
// is checked against the state in wkApplyLocked.
type scriptUpload struct {
	meta     scriptMetadata
	metaRaw  []byte
	modules  []workerModule
	main     string
	bindings []bindingSpec
	raws     []json.RawMessage
	etag     string
	config   scriptConfig
}

// rawScriptName is what Cloudflare names a script uploaded as the whole
// body (Content-Type application/javascript): its errors point at
// worker.js (observed, see ledger.go).
const rawScriptName = "worker.js"

// uploadPart is one part of a script upload as it arrived.
type uploadPart struct {
	name, filename, contentType string
	content                     []byte
}

// parseScriptUpload reads the body and checks everything that does not
// depend on other resources. raw allows the body to be a service-worker
// script on its own (PUT scripts; the versions route takes forms only).
func parseScriptUpload(w http.ResponseWriter, r *http.Request, raw bool) (*scriptUpload, error) {
	r.Body = http.MaxBytesReader(w, r.Body, core.MaxBody)
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if raw && err == nil && (mt == "application/javascript" || mt == "text/javascript") {
		// The body is the script (service-worker syntax) and there is no
		// metadata: what Cloudflare runs when a form is sent under this
		// type (the TypeScript SDK 7.x's update does), failing on the
		// form's boundary line as JavaScript.
		content, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, uploadReadError(err)
		}
		return finishScriptUpload(&scriptUpload{metaRaw: []byte(`{"body_part":"` + rawScriptName + `"}`)},
			[]uploadPart{{name: rawScriptName, filename: rawScriptName, contentType: mt, content: content}})
	}
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, wkInvalid("a script upload must be multipart/form-data with a metadata part and the module parts")
	}
	metaRaw, parts, err := readUploadForm(r)
	if err != nil {
		return nil, err
	}
	return finishScriptUpload(&scriptUpload{metaRaw: metaRaw}, parts)
}

// readUploadForm reads a multipart upload: the metadata part (nil when
// there is none) and every other part.
func readUploadForm(r *http.Request) ([]byte, []uploadPart, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, nil, wkInvalid("could not parse the multipart body: %v", err)
	}
	var metaRaw []byte
	var parts []uploadPart
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, uploadReadError(err)
		}
		content, err := io.ReadAll(p)
		if err != nil {
			return nil, nil, uploadReadError(err)
		}
		name := p.FormName()
		switch {
		case name == "":
			return nil, nil, wkInvalid("every part of a script upload needs a name")
		case name == "metadata" && metaRaw != nil:
			return nil, nil, wkInvalid("part %q appears more than once", name)
		case name == "metadata":
			// A plain field (wrangler, the Python SDK) or a JSON file
			// (Alchemy, the TypeScript SDK given a File): the same.
			metaRaw = content
		default:
			parts = append(parts, uploadPart{name: name, filename: rawFilename(p), contentType: p.Header.Get("Content-Type"), content: content})
		}
	}
	return metaRaw, parts, nil
}

// rawFilename is the part's filename as sent: Part.FileName keeps only its
// last path element, and a module's name may have directories
// ("lib/util.js").
func rawFilename(p *multipart.Part) string {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return p.FileName()
	}
	return params["filename"]
}

func uploadReadError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return core.NewAPIError(http.StatusRequestEntityTooLarge, 10021, "the script upload is too large")
	}
	return wkInvalid("could not parse the multipart body: %v", err)
}

// moduleNames gives each part the name its module is known by (imports,
// main_module, the content route). Cloudflare matches main_module and
// body_part "by filename" (its API schema's words for the files field) and
// also by part name (its curl examples name the part after the module,
// wrangler and Alchemy send both the same): a part whose form name is the
// one main_module names keeps that name, any other is named by its filename
// when it has one (the SDKs send every module under one form name, "files"
// or "files[]"), else by its form name. Two modules with one name are
// refused: which one would run is not defined.
func moduleNames(parts []uploadPart, main string) ([]workerModule, error) {
	mods := make([]workerModule, 0, len(parts))
	seen := map[string]bool{}
	for _, p := range parts {
		name := p.name
		if p.filename != "" && p.name != main {
			name = p.filename
		}
		if seen[name] {
			return nil, wkInvalid("part %q appears more than once", name)
		}
		seen[name] = true
		mods = append(mods, workerModule{Name: name, Filename: p.filename, ContentType: p.contentType, Content: p.content})
	}
	return mods, nil
}

// finishScriptUpload decodes the metadata, names the modules and checks the
// upload's structure.
func finishScriptUpload(up *scriptUpload, parts []uploadPart) (*scriptUpload, error) {
	if up.metaRaw == nil {
		// Observed wording (cloudflare-typescript issues 158 and 2645):
		// what Cloudflare answers when the metadata part is missing or is
		// not one JSON part (the TypeScript SDK's metadata[...] fields).
		return nil, wkInvalid("could not read content for part metadata")
	}
	dec := json.NewDecoder(bytes.NewReader(up.metaRaw))
	dec.UseNumber()
	if err := dec.Decode(&up.meta); err != nil {
		return nil, wkInvalid("the metadata part is not valid JSON: %v", err)
	}
	meta := &up.meta

	up.main = meta.MainModule
	if up.main == "" {
		up.main = meta.BodyPart
	}
	var err error
	if up.modules, err = moduleNames(parts, up.main); err != nil {
		return nil, err
	}
	assetsOnly := up.main == "" && len(up.modules) == 0 && len(meta.Assets) > 0 && string(meta.Assets) != "null"
	if up.main == "" && !assetsOnly {
		return nil, wkInvalid("metadata.main_module is required: name the part that holds the main module")
	}
	if !assetsOnly {
		mainMod := up.module(up.main)
		switch {
		case mainMod == nil:
			return nil, wkInvalid("main_module %q is not one of the uploaded parts", up.main)
		case mainMod.isSourceMap():
			return nil, wkInvalid("main module %q is a source map (application/source-map), not code", up.main)
		}
		if len(bytes.TrimSpace(mainMod.Content)) == 0 {
			return nil, wkInvalid("main module %q is empty", up.main)
		}
	}
	if d := meta.CompatibilityDate; d != "" {
		if _, err := time.Parse("2006-01-02", d); err != nil {
			return nil, wkInvalid("compatibility_date %q is not a date of the form YYYY-MM-DD", d)
		}
	}

	names := map[string]bool{}
	for i, raw := range meta.Bindings {
		var b bindingSpec
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, wkInvalid("binding #%d is malformed: %v", i, err)
		}
		if b.Name == "" {
			return nil, wkInvalid("binding #%d has no name", i)
		}
		if !wkBindingTypes[b.Type] && b.Type != "inherit" {
			return nil, wkInvalid("binding %s of type %s is invalid", b.Name, b.Type)
		}
		if names[b.Name] {
			return nil, wkInvalid("binding name %s is used by more than one binding", b.Name)
		}
		names[b.Name] = true
		if f, ok := wkRequiredField[b.Type]; ok && b.target() == "" {
			return nil, wkInvalid("binding %s of type %s needs %q", b.Name, b.Type, f)
		}
		switch {
		case b.Type == "plain_text" && b.Text == nil:
			return nil, wkInvalid("binding %s of type plain_text needs \"text\"", b.Name)
		case b.Type == "secret_text" && (b.Text == nil || *b.Text == ""):
			return nil, wkInvalid("binding %s of type secret_text needs a non-empty \"text\"", b.Name)
		}
		if b.Type == "d1" {
			if raw, err = d1BindingBothIDs(raw, &b); err != nil {
				return nil, err
			}
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			return nil, wkInvalid("binding #%d is malformed: %v", i, err)
		}
		up.bindings = append(up.bindings, b)
		up.raws = append(up.raws, compact.Bytes())
	}
	for _, t := range meta.KeepBindings {
		if !wkBindingTypes[t] {
			return nil, wkInvalid("keep_bindings: %s is not a binding type", t)
		}
	}
	if m := meta.Migrations; m != nil {
		for _, st := range m.steps() {
			if len(st.TransferredClasses) > 0 && string(st.TransferredClasses) != "null" && string(st.TransferredClasses) != "[]" {
				return nil, wkInvalid("transferred_classes migrations are not supported by the emulator")
			}
		}
	}
	if up.config, err = parseScriptConfig(meta.settingsFields); err != nil {
		return nil, err
	}
	up.etag = scriptEtag(up.metaRaw, up.modules)
	return up, nil
}

// d1BindingBothIDs gives a D1 binding both spellings of its database: the
// SDKs' types name it database_id (required) with id its deprecated alias,
// which wrangler and the provider send and read; an upload may carry
// either, and answers carry both, as Cloudflare's do.
func d1BindingBothIDs(raw json.RawMessage, b *bindingSpec) (json.RawMessage, error) {
	if b.ID != "" && b.DatabaseID != "" && b.ID != b.DatabaseID {
		return nil, wkInvalid("binding %s of type d1 names two databases: id %q and database_id %q", b.Name, b.ID, b.DatabaseID)
	}
	id := b.target()
	b.ID, b.DatabaseID = id, id
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, wkInvalid("binding %s is malformed: %v", b.Name, err)
	}
	quoted, err := json.Marshal(id)
	if err != nil {
		return nil, err
	}
	m["id"], m["database_id"] = quoted, quoted
	return json.Marshal(m)
}

func (up *scriptUpload) module(name string) *workerModule {
	for i := range up.modules {
		if up.modules[i].Name == name {
			return &up.modules[i]
		}
	}
	return nil
}

// scriptEtag hashes exactly what was uploaded, so identical uploads share an
// etag and any change to a module or to the metadata gives a new one.
func scriptEtag(meta []byte, mods []workerModule) string {
	h := sha256.New()
	put := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	put(meta)
	for _, m := range mods {
		put([]byte(m.Name))
		put([]byte(m.Filename))
		put([]byte(m.ContentType))
		put(m.Content)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// wkUploadJSON is the upload's result. deployment_id is the ID of the
// version the upload created and deployed: wrangler prints it as "Current
// Version ID" (it is not the deployment's own ID, which GET deployments
// lists).
type wkUploadJSON struct {
	ID               string             `json:"id"`
	Tag              string             `json:"tag"`
	Etag             string             `json:"etag"`
	DeploymentID     string             `json:"deployment_id"`
	CreatedOn        string             `json:"created_on"`
	ModifiedOn       string             `json:"modified_on"`
	HasModules       bool               `json:"has_modules"`
	HasAssets        bool               `json:"has_assets"`
	Handlers         []string           `json:"handlers"`
	LastDeployedFrom string             `json:"last_deployed_from"`
	MigrationTag     string             `json:"migration_tag,omitempty"`
	Logpush          bool               `json:"logpush"`
	StartupTimeMs    int                `json:"startup_time_ms"`
	UsageModel       string             `json:"usage_model"`
	Placement        *placementJSON     `json:"placement,omitempty"`
	PlacementMode    string             `json:"placement_mode,omitempty"`
	TailConsumers    []tailConsumerJSON `json:"tail_consumers"`
}

func (s *Service) wkUpload(w http.ResponseWriter, r *http.Request) {
	acct, name := r.PathValue("account_id"), r.PathValue("script_name")
	if !wkNameRE.MatchString(name) {
		core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10016, "workers.api.error.invalid_script_name: script names are 1-63 characters of a-z, 0-9, '_' and '-'"))
		return
	}
	up, err := parseScriptUpload(w, r, true)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	s.mu.Lock()
	ws, v, err := s.wkApplyLocked(acct, name, up, uploadMode{strict: strictInherit(r), source: uploadSource(r), deploy: true})
	var out wkUploadJSON
	if err == nil {
		out = ws.uploadJSON(v)
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

// uploadJSON is the answer of an upload that deployed v.
func (ws *workerScript) uploadJSON(v *workerVersion) wkUploadJSON {
	return wkUploadJSON{
		ID: ws.Name, Tag: ws.Tag, Etag: ws.Etag, DeploymentID: v.ID,
		CreatedOn: cloudflare.Time(ws.CreatedOn), ModifiedOn: cloudflare.Time(ws.ModifiedOn),
		HasModules: ws.HasModules, Handlers: ws.handlers(), LastDeployedFrom: ws.LastDeployedFrom,
		MigrationTag: ws.MigrationTag, StartupTimeMs: 1, UsageModel: "standard",
		Logpush: ws.logpush(), Placement: ws.Placement, PlacementMode: ws.placementMode(),
		TailConsumers: ws.tailConsumers(), HasAssets: ws.Assets != nil,
	}
}

// uploadMode says how wkApplyLocked treats an upload.
type uploadMode struct {
	strict      bool   // ?bindings_inherit=strict: an inherit binding with nothing to inherit fails
	source      string // "wrangler" or "api", see uploadSource
	deploy      bool   // PUT scripts: deploy the new version at once; POST versions: do not
	triggeredBy string // the version's workers/triggered_by; "" means "upload"
}

// strictInherit reads ?bindings_inherit=strict.
func strictInherit(r *http.Request) bool { return r.URL.Query().Get("bindings_inherit") == "strict" }

// uploadSource is what the API reports as a version's metadata.source and a
// script's last_deployed_from. Inferred: Cloudflare tells wrangler from other
// API clients, and wrangler identifies itself in User-Agent ("wrangler/4.x").
func uploadSource(r *http.Request) string {
	if strings.HasPrefix(strings.ToLower(r.UserAgent()), "wrangler") {
		return "wrangler"
	}
	return "api"
}

// invalidInherit is the error for an inherit binding with nothing to
// inherit; wrangler matches the code and "inherit binding 'X' is invalid".
func invalidInherit(name string) *core.APIError {
	return core.NewAPIError(http.StatusBadRequest, 10057, fmt.Sprintf("inherit binding '%s' is invalid: the previous version has no binding of that name", name))
}

// wkApplyLocked checks the upload against the account's resources and, only
// if everything holds, stores it as a new version (deployed at once when
// mode.deploy): an upload is atomic.
//
// Bindings the upload does not send itself come from the script's latest
// version in three ways: `{"type":"inherit","name":X}` bindings (an
// unmatched one fails under bindings_inherit=strict and is dropped
// otherwise), keep_bindings types, and the secrets set through the secrets
// API, which every later upload inherits unless it binds that name itself
// (inferred from the documented behaviour that `wrangler deploy`, which
// sends no secrets, leaves a Worker's secrets in place).
func (s *Service) wkApplyLocked(acct, name string, up *scriptUpload, mode uploadMode) (*workerScript, *workerVersion, error) {
	prev := s.st.Workers[wkKey(acct, name)]
	if prev == nil && !mode.deploy {
		return nil, nil, scriptNotFound()
	}
	var base []json.RawMessage
	if prev != nil {
		base = prev.latestContent().Bindings
	}
	baseBinding := func(name string) (bindingSpec, json.RawMessage, bool) {
		for _, raw := range base {
			var b bindingSpec
			if json.Unmarshal(raw, &b) == nil && b.Name == name {
				return b, raw, true
			}
		}
		return bindingSpec{}, nil, false
	}
	var bindings []bindingSpec
	var raws []json.RawMessage
	named := map[string]bool{}
	for i, b := range up.bindings {
		named[b.Name] = true
		if b.Type != "inherit" {
			bindings, raws = append(bindings, b), append(raws, up.raws[i])
			continue
		}
		if pb, raw, ok := baseBinding(b.Name); ok {
			bindings, raws = append(bindings, pb), append(raws, raw)
		} else if mode.strict {
			return nil, nil, invalidInherit(b.Name)
		}
	}
	for _, raw := range base {
		var b bindingSpec
		if json.Unmarshal(raw, &b) != nil || named[b.Name] {
			continue
		}
		kept := slices.Contains(up.meta.KeepBindings, b.Type) ||
			(b.Type == "secret_text" && prev != nil && slices.Contains(prev.APISecrets, b.Name))
		if kept {
			bindings, raws = append(bindings, b), append(raws, raw)
			named[b.Name] = true
		}
	}

	tag := ""
	classes := map[string]bool{}
	if prev != nil {
		tag = prev.MigrationTag
		for _, c := range prev.Classes {
			classes[c] = true
		}
	}
	deleted := map[string]bool{}
	if m := up.meta.Migrations; m != nil {
		if !mode.deploy {
			// Inferred: wrangler never sends migrations with a version
			// upload (it falls back to PUT scripts for them).
			return nil, nil, wkInvalid("Durable Object migrations can only be applied by a script upload (PUT), not by a version upload")
		}
		for _, st := range m.steps() {
			if len(st.NewClasses) > 0 {
				return nil, nil, core.NewAPIError(http.StatusBadRequest, 10097,
					"In order to use Durable Objects with a free plan, you must create a namespace using a `new_sqlite_classes` migration.")
			}
		}
		if m.OldTag != tag {
			return nil, nil, core.NewAPIError(http.StatusBadRequest, 10079, migrationTagMessage(tag))
		}
		for _, st := range m.steps() {
			for _, c := range st.NewSqliteClasses {
				if classes[c] {
					return nil, nil, core.NewAPIError(http.StatusBadRequest, 10074,
						fmt.Sprintf("cannot apply new_sqlite_classes migration to class %q: script %q already declares it", c, name))
				}
				classes[c] = true
				delete(deleted, c)
			}
			for _, rc := range st.RenamedClasses {
				if !classes[rc.From] || rc.To == "" || classes[rc.To] {
					return nil, nil, core.NewAPIError(http.StatusBadRequest, 10074,
						fmt.Sprintf("cannot rename class %q to %q: the source must be declared by script %q and the destination must not", rc.From, rc.To, name))
				}
				delete(classes, rc.From)
				classes[rc.To] = true
				deleted[rc.From] = true
			}
			for _, c := range st.DeletedClasses {
				if !classes[c] {
					return nil, nil, core.NewAPIError(http.StatusBadRequest, 10074,
						fmt.Sprintf("cannot apply deleted_classes migration to class %q: script %q does not declare it", c, name))
				}
				delete(classes, c)
				deleted[c] = true
			}
		}
		tag = m.NewTag
	}

	if err := s.wkCheckLimits(up, bindings); err != nil {
		return nil, nil, err
	}
	if err := wkCheckExports(up, name, bindings); err != nil {
		return nil, nil, err
	}
	for _, b := range bindings {
		if err := s.wkCheckBindingLocked(acct, name, b, classes, deleted); err != nil {
			return nil, nil, err
		}
	}

	assets, err := s.assets.Redeem(acct, up.meta.Assets)
	if err != nil {
		return nil, nil, err
	}
	for _, b := range bindings {
		if b.Type == "assets" && assets == nil {
			return nil, nil, wkInvalid("Cannot use an assets binding (%s) without assets: send metadata.assets with a completion token", b.Name)
		}
	}
	now := time.Now().UTC()
	content := workerContent{
		Assets:     assets,
		MainModule: up.main, HasModules: up.meta.MainModule != "",
		Modules: up.modules, Metadata: up.metaRaw, Bindings: raws,
		CompatibilityDate: up.meta.CompatibilityDate, CompatibilityFlags: up.meta.CompatibilityFlags,
		MigrationTag: tag, Classes: core.SortedKeys(classes), Etag: up.etag,
		Placement: up.config.Placement, Limits: up.config.Limits,
	}
	if content.Modules == nil {
		content.Modules = []workerModule{} // an assets-only worker: nil would mean "modules not kept"
	}
	if err := s.checkStartupLocked(acct, name, &content); err != nil {
		return nil, nil, err
	}
	ws := prev
	if ws == nil {
		ws = &workerScript{AccountID: acct, Name: name, CreatedOn: now, Tag: core.NewHexID()}
	}
	if ws.Tag == "" {
		ws.Tag = core.NewHexID()
	}
	trigger := mode.triggeredBy
	if trigger == "" {
		trigger = "upload"
		if !mode.deploy {
			trigger = "version_upload"
		}
	}
	message, _ := up.meta.Annotations["workers/message"].(string)
	vtag, _ := up.meta.Annotations["workers/tag"].(string)
	v := ws.addVersion(content, now, mode.source, trigger, message, vtag)
	ws.applyScriptLevel(up.config)
	ws.Uploads++
	ws.ModifiedOn = now
	if mode.deploy {
		if err := ws.deploy([]deployedShare{{VersionID: v.ID, Percentage: 100}}, now, mode.source, message); err != nil {
			return nil, nil, err
		}
	}
	s.st.Workers[wkKey(acct, name)] = ws
	return ws, v, nil
}

func migrationTagMessage(current string) string {
	if current == "" {
		return `Migration tag precondition failed; current tag is "" (the script has no migration tag yet)`
	}
	return "Migration tag precondition failed; current tag is " + current
}

// wkCheckBindingLocked checks that a binding's target exists in the account.
// classes are this script's Durable Object classes after the upload's
// migration, deleted the classes that migration removed.
func (s *Service) wkCheckBindingLocked(acct, script string, b bindingSpec, classes, deleted map[string]bool) error {
	bad := func(code int, format string, args ...any) error {
		return core.NewAPIError(http.StatusBadRequest, code, fmt.Sprintf(format, args...))
	}
	switch b.Type {
	case "d1":
		if !s.d1.Exists(acct, b.ID) {
			return bad(10181, "D1 binding %q references database %q, which does not exist", b.Name, b.ID)
		}
	case "kv_namespace":
		if !s.kv.Exists(acct, b.NamespaceID) {
			return bad(10041, "KV namespace '%s' is not valid: binding %q references a namespace that does not exist", b.NamespaceID, b.Name)
		}
	case "r2_bucket":
		if !s.r2.Exists(acct, b.BucketName) {
			return bad(10085, "R2 binding %q references bucket '%s', which does not exist", b.Name, b.BucketName)
		}
	case "queue":
		if !s.queues.Exists(acct, b.QueueName) {
			return bad(11000, "Queue binding %q references queue %q, which does not exist", b.Name, b.QueueName)
		}
	case "service":
		if b.Service != script {
			if _, ok := s.st.Workers[wkKey(acct, b.Service)]; !ok {
				return bad(10143, "workers.api.error.service_binding_error: could not resolve binding %q: script %q not found", b.Name, b.Service)
			}
		}
	case "durable_object_namespace":
		if b.ScriptName == "" || b.ScriptName == script {
			if deleted[b.ClassName] && !classes[b.ClassName] {
				return bad(10061, "binding %q uses Durable Object class %q, which this upload's migration deletes", b.Name, b.ClassName)
			}
			if !classes[b.ClassName] {
				return bad(10061, "binding %q refers to Durable Object class %q, which script %q does not declare (add it with a new_sqlite_classes migration)", b.Name, b.ClassName, script)
			}
			return nil
		}
		other, ok := s.st.Workers[wkKey(acct, b.ScriptName)]
		if !ok {
			return bad(10061, "binding %q refers to Durable Object class %q in script %q, which does not exist", b.Name, b.ClassName, b.ScriptName)
		}
		if !slices.Contains(other.Classes, b.ClassName) {
			return bad(10061, "binding %q refers to Durable Object class %q, which script %q does not declare", b.Name, b.ClassName, b.ScriptName)
		}
	}
	return nil
}

// wkLookupLocked finds a script of the caller's account.
func (s *Service) wkLookupLocked(r *http.Request) (*workerScript, error) {
	ws, ok := s.st.Workers[wkKey(r.PathValue("account_id"), r.PathValue("script_name"))]
	if !ok {
		return nil, scriptNotFound()
	}
	return ws, nil
}

// wkListJSON is one entry of GET workers/scripts, with the optional fields
// Cloudflare's list returns (workers.Script and the API reference's list
// item): tags, handlers, compatibility, placement and tail consumers.
type wkListJSON struct {
	ID                 string             `json:"id"`
	Tag                string             `json:"tag,omitempty"`
	Etag               string             `json:"etag"`
	CreatedOn          string             `json:"created_on"`
	ModifiedOn         string             `json:"modified_on"`
	HasModules         bool               `json:"has_modules"`
	HasAssets          bool               `json:"has_assets"`
	Handlers           []string           `json:"handlers"`
	CompatibilityDate  string             `json:"compatibility_date,omitempty"`
	CompatibilityFlags []string           `json:"compatibility_flags"`
	LastDeployedFrom   string             `json:"last_deployed_from,omitempty"`
	Logpush            bool               `json:"logpush"`
	MigrationTag       string             `json:"migration_tag,omitempty"`
	Observability      *observabilityJSON `json:"observability,omitempty"`
	Placement          *placementJSON     `json:"placement,omitempty"`
	PlacementMode      string             `json:"placement_mode,omitempty"`
	Tags               []string           `json:"tags"`
	TailConsumers      []tailConsumerJSON `json:"tail_consumers"`
	UsageModel         string             `json:"usage_model"`
	// Routes are the zone routes running the script (the SDKs declare
	// them, null for a script without any).
	Routes []cloudflare.ScriptRoute `json:"routes"`
}

func (s *Service) wkList(w http.ResponseWriter, r *http.Request) {
	acct := r.PathValue("account_id")
	s.mu.Lock()
	out := []wkListJSON{}
	for _, ws := range s.st.Workers {
		if ws.AccountID == acct {
			out = append(out, wkListJSON{
				ID: ws.Name, Tag: ws.Tag, Etag: ws.Etag, CreatedOn: cloudflare.Time(ws.CreatedOn), ModifiedOn: cloudflare.Time(ws.ModifiedOn),
				HasModules: ws.HasModules, HasAssets: ws.Assets != nil, Handlers: ws.handlers(),
				CompatibilityDate: ws.CompatibilityDate, CompatibilityFlags: nonNilStrings(slices.Clone(ws.CompatibilityFlags)),
				LastDeployedFrom: ws.LastDeployedFrom, Logpush: ws.logpush(), MigrationTag: ws.MigrationTag,
				Observability: ws.observability(), Placement: ws.Placement, PlacementMode: ws.placementMode(),
				Tags: ws.tags(), TailConsumers: ws.tailConsumers(), UsageModel: "standard",
			})
		}
	}
	s.mu.Unlock()
	if s.zones != nil { // asked after s.mu: zones takes its own lock
		routes := s.zones.RoutesByScript(acct)
		for i := range out {
			out[i].Routes = routes[out[i].ID]
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	core.WriteResult(w, out)
}

// wkContentV2 is GET content/v2: every module of the deployed version (or
// of ?version=ID while the emulator keeps its modules) as multipart/form-
// data, the main module named by the CF-Entrypoint header, outside the
// envelope. wrangler reads it this way (`versions secret put`, init
// --from-dash).
func (s *Service) wkContentV2(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var content *workerContent
	if err == nil {
		content = &ws.workerContent
		if id := r.URL.Query().Get("version"); id != "" && id != ws.liveVersionID() {
			if v := ws.version(id); v == nil || ws.modulesOf(v) == nil {
				err = versionNotFound()
			} else {
				content = &v.Content
			}
		}
	}
	var mods []workerModule
	var main string
	if err == nil {
		mods, main = slices.Clone(content.Modules), content.MainModule
	}
	s.mu.Unlock()
	if err != nil {
		core.WriteError(w, err)
		return
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, m := range mods {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf("form-data; name=%q; filename=%q", m.Name, m.Name))
		ct := m.ContentType
		if ct == "" {
			ct = "application/javascript+module"
		}
		h.Set("Content-Type", ct)
		pw, perr := mw.CreatePart(h)
		if perr == nil {
			_, perr = pw.Write(m.Content)
		}
		if perr != nil {
			core.WriteError(w, core.NewAPIError(http.StatusInternalServerError, 10013, "could not encode the script content"))
			return
		}
	}
	_ = mw.Close()
	w.Header().Set("Content-Type", mw.FormDataContentType())
	w.Header().Set("CF-Entrypoint", main)
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
}

// wkContent serves the main module as uploaded, outside the envelope.
func (s *Service) wkContent(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var body []byte
	if err == nil {
		for _, m := range ws.Modules {
			if m.Name == ws.MainModule {
				body = m.Content
			}
		}
	}
	s.mu.Unlock()
	if err != nil {
		core.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/javascript")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// wkReferencesLocked lists what outside the script itself depends on it:
// other scripts' service and Durable Object bindings, and queue consumers.
func (s *Service) wkReferencesLocked(acct, name string) []string {
	var refs []string
	for _, key := range core.SortedKeys(s.st.Workers) {
		ws := s.st.Workers[key]
		if ws.AccountID != acct || ws.Name == name {
			continue
		}
		for _, raw := range ws.Bindings {
			var b bindingSpec
			if json.Unmarshal(raw, &b) != nil {
				continue
			}
			switch {
			case b.Type == "service" && b.Service == name:
				refs = append(refs, fmt.Sprintf("service binding %s of script %s", b.Name, ws.Name))
			case b.Type == "durable_object_namespace" && b.ScriptName == name:
				refs = append(refs, fmt.Sprintf("Durable Object binding %s of script %s", b.Name, ws.Name))
			}
		}
	}
	for _, q := range s.queues.ConsumedBy(acct, name) {
		refs = append(refs, "consumer of queue "+q)
	}
	return refs
}

func (s *Service) wkDelete(w http.ResponseWriter, r *http.Request) {
	acct, name := r.PathValue("account_id"), r.PathValue("script_name")
	force, _ := strconv.ParseBool(r.URL.Query().Get("force"))
	s.mu.Lock()
	_, err := s.wkLookupLocked(r)
	if err == nil && !force {
		if refs := s.wkReferencesLocked(acct, name); len(refs) > 0 {
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

// wkRemoveLocked deletes a script. Its cron triggers, workers.dev setting,
// versions and deployments live on the record; the queues it consumes lose
// that consumer. Other scripts' bindings to it are left dangling, as the
// real API leaves them.
func (s *Service) wkRemoveLocked(acct, name string) {
	delete(s.st.Workers, wkKey(acct, name))
	s.zones.RemoveScript(acct, name)
	used := map[string]bool{}
	for _, ws := range s.st.Workers {
		if ws.AccountID == acct {
			ws.Assets.Hashes(used)
			for _, v := range ws.Versions {
				v.Content.Assets.Hashes(used)
			}
		}
	}
	_ = s.assets.Collect(acct, used)
	s.queues.RemoveConsumers(acct, name)
}

// redactBinding drops the text of a secret_text binding; every other
// binding is returned exactly as uploaded.
func redactBinding(raw json.RawMessage) json.RawMessage {
	var b bindingSpec
	if json.Unmarshal(raw, &b) != nil || b.Type != "secret_text" {
		return raw
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return json.RawMessage(`{}`)
	}
	delete(m, "text")
	out, err := json.Marshal(m)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return out
}

type wkCronJSON struct {
	Cron       string `json:"cron"`
	CreatedOn  string `json:"created_on"`
	ModifiedOn string `json:"modified_on"`
}

type wkSchedulesJSON struct {
	Schedules []wkCronJSON `json:"schedules"`
}

func schedulesJSON(crons []workerCron) wkSchedulesJSON {
	out := wkSchedulesJSON{Schedules: make([]wkCronJSON, len(crons))}
	for i, c := range crons {
		out.Schedules[i] = wkCronJSON{Cron: c.Cron, CreatedOn: cloudflare.Time(c.CreatedOn), ModifiedOn: cloudflare.Time(c.ModifiedOn)}
	}
	return out
}

func (s *Service) wkGetSchedules(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var out wkSchedulesJSON
	if err == nil {
		out = schedulesJSON(ws.Crons)
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

// wkPutSchedules replaces all cron triggers; an empty array removes them.
func (s *Service) wkPutSchedules(w http.ResponseWriter, r *http.Request) {
	var body []struct {
		Cron *string `json:"cron"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	crons := make([]string, 0, len(body))
	for i, item := range body {
		if item.Cron == nil {
			core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10100, fmt.Sprintf("schedule #%d has no cron", i)))
			return
		}
		expr := strings.TrimSpace(*item.Cron)
		if err := validateCron(expr); err != nil {
			core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10100, fmt.Sprintf("invalid cron expression %q: %v", *item.Cron, err)))
			return
		}
		if slices.Contains(crons, expr) {
			core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10100, fmt.Sprintf("cron expression %q is listed more than once", expr)))
			return
		}
		crons = append(crons, expr)
	}
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var out wkSchedulesJSON
	if err == nil {
		now := time.Now().UTC()
		next := make([]workerCron, len(crons))
		for i, c := range crons {
			next[i] = workerCron{Cron: c, CreatedOn: now, ModifiedOn: now}
			for _, old := range ws.Crons {
				if old.Cron == c {
					next[i].CreatedOn = old.CreatedOn
				}
			}
		}
		ws.Crons = next
		out = schedulesJSON(next)
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

type wkSubdomainJSON struct {
	Enabled         bool `json:"enabled"`
	PreviewsEnabled bool `json:"previews_enabled"`
}

func (s *Service) wkGetScriptSubdomain(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var out wkSubdomainJSON
	if err == nil {
		out = wkSubdomainJSON{Enabled: ws.WorkersDev, PreviewsEnabled: ws.PreviewsEnabled}
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

// wkSetScriptSubdomain turns the script's workers.dev route on or off.
// previews_enabled, when absent, follows enabled.
func (s *Service) wkSetScriptSubdomain(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Enabled         *bool `json:"enabled"`
		PreviewsEnabled *bool `json:"previews_enabled"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	if body.Enabled == nil {
		core.WriteError(w, wkInvalid("enabled is required"))
		return
	}
	s.wkWriteScriptSubdomain(w, r, *body.Enabled, body.PreviewsEnabled)
}

func (s *Service) wkDeleteScriptSubdomain(w http.ResponseWriter, r *http.Request) {
	off := false
	s.wkWriteScriptSubdomain(w, r, false, &off)
}

func (s *Service) wkWriteScriptSubdomain(w http.ResponseWriter, r *http.Request, enabled bool, previews *bool) {
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var out wkSubdomainJSON
	if err == nil {
		ws.WorkersDev, ws.WorkersDevOff = enabled, !enabled
		ws.PreviewsEnabled = enabled
		if previews != nil {
			ws.PreviewsEnabled = *previews
		}
		out = wkSubdomainJSON{Enabled: ws.WorkersDev, PreviewsEnabled: ws.PreviewsEnabled}
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

func (s *Service) wkGetAccountSubdomain(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	sub, ok := s.st.WorkersSubdomains[r.PathValue("account_id")]
	s.mu.Unlock()
	if !ok {
		sub = s.workersSubdomain
	}
	core.WriteResult(w, map[string]string{"subdomain": sub})
}

func (s *Service) wkPutAccountSubdomain(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Subdomain string `json:"subdomain"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	if !cloudflare.DNSLabel.MatchString(body.Subdomain) {
		core.WriteError(w, wkInvalid("subdomain %q must be 1-63 characters of a-z, 0-9 and '-', not starting or ending with '-'", body.Subdomain))
		return
	}
	s.mu.Lock()
	s.st.WorkersSubdomains[r.PathValue("account_id")] = body.Subdomain
	s.mu.Unlock()
	if err := s.save(); err != nil {
		core.WriteError(w, err)
		return
	}
	core.WriteResult(w, map[string]string{"subdomain": body.Subdomain})
}

// WorkerBinding is one binding of a script as uploaded, secret text
// included.
type WorkerBinding struct {
	Type        string
	Name        string
	ID          string // d1
	NamespaceID string // kv_namespace
	BucketName  string // r2_bucket
	QueueName   string // queue
	Service     string // service
	Environment string // service
	ClassName   string // durable_object_namespace
	ScriptName  string // durable_object_namespace
	Text        string // plain_text, secret_text
	// Raw is the binding object exactly as uploaded.
	Raw json.RawMessage
}

// WorkerDetail is everything stored about a script, for tests. Unlike the
// HTTP API it includes secret texts.
type WorkerDetail struct {
	AccountID          string
	Name               string
	MainModule         string
	Modules            map[string]string // part name -> content
	CompatibilityDate  string
	CompatibilityFlags []string
	Bindings           []WorkerBinding
	Vars               map[string]string // plain_text bindings: name -> text
	Secrets            map[string]string // secret_text bindings: name -> text
	MigrationTag       string
	Classes            []string // declared Durable Object classes, sorted
	Crons              []string
	WorkersDev         bool
	Etag               string
	Uploads            int // successful uploads of this script
	// Versions are the kept versions' IDs, oldest first; DeployedVersion is
	// the one the current deployment serves.
	Versions        []string
	DeployedVersion string
	// Migrations are the Durable Object migrations the kept versions'
	// uploads applied, oldest first: the upload metadata's migrations,
	// which no Cloudflare API returns (how a test sees a class leave
	// through a deleted_classes step).
	Migrations       []AppliedMigration
	Deployments      int    // deployments kept (the newest maxDeployments)
	LastDeployedFrom string // "wrangler" or "api"
	Tag              string
	CreatedOn        time.Time
	ModifiedOn       time.Time
}

// Worker returns what is stored about a script, or false when the account
// has no script of that name.
func (s *Service) Worker(accountID, name string) (WorkerDetail, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws, ok := s.st.Workers[wkKey(accountID, name)]
	if !ok {
		return WorkerDetail{}, false
	}
	d := WorkerDetail{
		AccountID: ws.AccountID, Name: ws.Name, MainModule: ws.MainModule,
		Modules:            map[string]string{},
		CompatibilityDate:  ws.CompatibilityDate,
		CompatibilityFlags: append([]string{}, ws.CompatibilityFlags...),
		Bindings:           []WorkerBinding{},
		Vars:               map[string]string{},
		Secrets:            map[string]string{},
		MigrationTag:       ws.MigrationTag,
		Classes:            append([]string{}, ws.Classes...),
		Crons:              []string{},
		WorkersDev:         ws.WorkersDev,
		Etag:               ws.Etag,
		Uploads:            ws.Uploads,
		Versions:           []string{},
		DeployedVersion:    ws.liveVersionID(),
		Deployments:        len(ws.Deployments),
		LastDeployedFrom:   ws.LastDeployedFrom,
		Tag:                ws.Tag,
		CreatedOn:          ws.CreatedOn,
		ModifiedOn:         ws.ModifiedOn,
	}
	for _, m := range ws.Modules {
		d.Modules[m.Name] = string(m.Content)
	}
	for _, raw := range ws.Bindings {
		var b bindingSpec
		_ = json.Unmarshal(raw, &b)
		wb := WorkerBinding{
			Type: b.Type, Name: b.Name, ID: b.ID, NamespaceID: b.NamespaceID, BucketName: b.BucketName,
			QueueName: b.QueueName, Service: b.Service, Environment: b.Environment, ClassName: b.ClassName,
			ScriptName: b.ScriptName, Raw: append(json.RawMessage{}, raw...),
		}
		if b.Text != nil {
			wb.Text = *b.Text
		}
		switch b.Type {
		case "plain_text":
			d.Vars[b.Name] = wb.Text
		case "secret_text":
			d.Secrets[b.Name] = wb.Text
		}
		d.Bindings = append(d.Bindings, wb)
	}
	for _, c := range ws.Crons {
		d.Crons = append(d.Crons, c.Cron)
	}
	for _, v := range ws.Versions {
		d.Versions = append(d.Versions, v.ID)
		var meta scriptMetadata
		if json.Unmarshal(v.Content.Metadata, &meta) != nil || meta.Migrations == nil {
			continue
		}
		for _, st := range meta.Migrations.steps() {
			d.Migrations = append(d.Migrations, AppliedMigration{
				Version: v.Number, OldTag: meta.Migrations.OldTag, NewTag: meta.Migrations.NewTag,
				NewSqliteClasses: st.NewSqliteClasses, DeletedClasses: st.DeletedClasses,
			})
		}
	}
	return d, true
}

// AppliedMigration is one step of a Durable Object migration an upload
// applied (a version is only kept when its upload was accepted).
type AppliedMigration struct {
	Version          int // the version's number
	OldTag, NewTag   string
	NewSqliteClasses []string
	DeletedClasses   []string
}
