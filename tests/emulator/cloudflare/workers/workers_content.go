package workers

// PUT workers/scripts/{name}/content: new code for a script, its
// configuration untouched. The form carries the modules and a metadata part
// naming the main module (main_module, for ES modules) or the body part
// (body_part, a service-worker script); the CF-WORKER-MAIN-MODULE-PART and
// CF-WORKER-BODY-PART headers may name it instead, and then the metadata
// part may be left out. The deployed version's bindings, compatibility
// date and flags, Durable Object classes, assets and settings carry over
// into a new version, deployed at once, as an upload's would be; the
// answer is the script, as an upload's is.
//
// Documented (the API reference, "Put script content without touching
// config or metadata"): the route, the form's metadata fields, the headers
// and the Script answer. Assumed: the new version is deployed at once and
// its workers/triggered_by is "upload"; a script that does not exist is
// 10007, as on the other script routes; every refusal an upload's.

import (
	"encoding/json"
	"mime"
	"net/http"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

func (s *Service) wkContentPut(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, core.MaxBody)
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		core.WriteError(w, wkInvalid("script content must be multipart/form-data with the module parts"))
		return
	}
	metaRaw, parts, err := readUploadForm(r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	var meta scriptMetadata
	if metaRaw != nil {
		if err := json.Unmarshal(metaRaw, &meta); err != nil {
			core.WriteError(w, wkInvalid("the metadata part is not valid JSON: %v", err))
			return
		}
	}
	if h := r.Header.Get("CF-WORKER-MAIN-MODULE-PART"); h != "" && meta.MainModule == "" && meta.BodyPart == "" {
		meta.MainModule = h
	}
	if h := r.Header.Get("CF-WORKER-BODY-PART"); h != "" && meta.MainModule == "" && meta.BodyPart == "" {
		meta.BodyPart = h
	}
	main := meta.MainModule
	if main == "" {
		main = meta.BodyPart
	}
	if main == "" {
		core.WriteError(w, wkInvalid("name the main module: metadata.main_module or body_part, or the CF-WORKER-MAIN-MODULE-PART or CF-WORKER-BODY-PART header"))
		return
	}
	mods, err := moduleNames(parts, main)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	up := &scriptUpload{meta: scriptMetadata{MainModule: meta.MainModule, BodyPart: meta.BodyPart}, modules: mods, main: main}
	switch m := up.module(main); {
	case m == nil:
		core.WriteError(w, wkInvalid("main module %q is not one of the uploaded parts", main))
		return
	case m.isSourceMap():
		core.WriteError(w, wkInvalid("main module %q is a source map (application/source-map), not code", main))
		return
	}
	s.mu.Lock()
	ws, v, err := s.wkContentApplyLocked(r, up, metaRaw)
	var out wkUploadJSON
	if err == nil {
		out = ws.uploadJSON(v)
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

// wkContentApplyLocked checks the new modules against the deployed
// configuration and, if they hold, deploys them as a new version.
func (s *Service) wkContentApplyLocked(r *http.Request, up *scriptUpload, metaRaw []byte) (*workerScript, *workerVersion, error) {
	ws, err := s.wkLookupLocked(r)
	if err != nil {
		return nil, nil, err
	}
	content := ws.workerContent
	content.Modules, content.MainModule, content.HasModules = up.modules, up.main, up.meta.MainModule != ""
	content.Etag = scriptEtag(append(append([]byte{}, content.Metadata...), metaRaw...), up.modules)
	var bindings []bindingSpec
	for _, raw := range content.Bindings {
		var b bindingSpec
		if json.Unmarshal(raw, &b) == nil {
			bindings = append(bindings, b)
		}
	}
	if err := s.wkCheckLimits(up, bindings); err != nil {
		return nil, nil, err
	}
	if err := wkCheckExports(up, ws.Name, bindings); err != nil {
		return nil, nil, err
	}
	if err := s.checkStartupLocked(ws.AccountID, ws.Name, &content); err != nil {
		return nil, nil, err
	}
	now := time.Now().UTC()
	source := uploadSource(r)
	v := ws.addVersion(content, now, source, "upload", "", "")
	if err := ws.deploy([]deployedShare{{VersionID: v.ID, Percentage: 100}}, now, source, ""); err != nil {
		return nil, nil, err
	}
	ws.Uploads++
	return ws, v, nil
}
