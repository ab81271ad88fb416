package workers

// Script settings beyond bindings: observability (Workers Logs), placement,
// limits, tail consumers and logpush, as the upload metadata carries them
// and GET/PATCH workers/scripts/{name}/settings report and change them.
//
// Cloudflare splits them in two. Placement and limits belong to a version:
// an upload without them has none. Observability, logpush, tail consumers
// and tags belong to the script: an upload that omits one leaves it as it
// was (PATCH script-settings changes them without a new version).

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// placementJSON is one of the documented placement forms: {mode: "smart"}
// (wrangler may add a hint), or a targeted hint, exactly one of region, host
// (layer 4 probe) and hostname (layer 7), with mode "targeted" or no mode.
type placementJSON struct {
	Mode     string `json:"mode,omitempty"`
	Hint     string `json:"hint,omitempty"`
	Region   string `json:"region,omitempty"`
	Host     string `json:"host,omitempty"`
	Hostname string `json:"hostname,omitempty"`
}

type limitsJSON struct {
	CPUMs int `json:"cpu_ms"`
}

// observabilityLogsJSON is observability.logs; persist and destinations
// (Workers Logs export) are kept as sent.
type observabilityLogsJSON struct {
	Enabled          bool     `json:"enabled"`
	InvocationLogs   bool     `json:"invocation_logs"`
	HeadSamplingRate *float64 `json:"head_sampling_rate,omitempty"`
	Persist          *bool    `json:"persist,omitempty"`
	Destinations     []string `json:"destinations,omitempty"`
}

// observabilityJSON is the observability setting; traces are kept as sent.
type observabilityJSON struct {
	Enabled          bool                   `json:"enabled"`
	HeadSamplingRate *float64               `json:"head_sampling_rate,omitempty"`
	Logs             *observabilityLogsJSON `json:"logs,omitempty"`
	Traces           json.RawMessage        `json:"traces,omitempty"`
}

type tailConsumerJSON struct {
	Service     string `json:"service"`
	Environment string `json:"environment,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
}

// maxCPUMs is the Workers Paid ceiling of limits.cpu_ms (five minutes).
const maxCPUMs = 300000

// scriptConfig are the settings one upload or PATCH carries; nil means the
// key was absent.
type scriptConfig struct {
	Placement     *placementJSON
	Limits        *limitsJSON
	Observability json.RawMessage // normalized; script level
	Logpush       json.RawMessage
	TailConsumers json.RawMessage
	Tags          json.RawMessage
}

// settingsFields are the setting keys of the upload metadata and of PATCH
// settings, raw.
type settingsFields struct {
	Placement     json.RawMessage `json:"placement"`
	Limits        json.RawMessage `json:"limits"`
	Observability json.RawMessage `json:"observability"`
	Logpush       json.RawMessage `json:"logpush"`
	TailConsumers json.RawMessage `json:"tail_consumers"`
	Tags          json.RawMessage `json:"tags"`
}

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// parseScriptConfig checks each setting's documented form and returns it
// normalized; the error names the field.
func parseScriptConfig(f settingsFields) (scriptConfig, error) {
	var c scriptConfig
	if present(f.Placement) {
		pl, err := parsePlacement(f.Placement)
		if err != nil {
			return c, err
		}
		c.Placement = pl
	}
	if present(f.Limits) {
		var l limitsJSON
		if err := strictJSON(f.Limits, &l); err != nil {
			return c, wkInvalid("limits: %v", err)
		}
		if l.CPUMs < 1 || l.CPUMs > maxCPUMs {
			return c, wkInvalid("limits.cpu_ms must be from 1 to %d milliseconds, got %d", maxCPUMs, l.CPUMs)
		}
		c.Limits = &l
	}
	if present(f.Observability) {
		var o observabilityJSON
		if err := strictJSON(f.Observability, &o); err != nil {
			return c, wkInvalid("observability: %v", err)
		}
		if err := checkRate("observability.head_sampling_rate", o.HeadSamplingRate); err != nil {
			return c, err
		}
		if o.Logs != nil {
			if err := checkRate("observability.logs.head_sampling_rate", o.Logs.HeadSamplingRate); err != nil {
				return c, err
			}
		}
		c.Observability, _ = json.Marshal(o)
	}
	if present(f.Logpush) {
		var b bool
		if json.Unmarshal(f.Logpush, &b) != nil {
			return c, wkInvalid("logpush must be a boolean")
		}
		c.Logpush, _ = json.Marshal(b)
	}
	if present(f.TailConsumers) {
		var tcs []tailConsumerJSON
		if err := strictJSON(f.TailConsumers, &tcs); err != nil {
			return c, wkInvalid("tail_consumers: %v", err)
		}
		for i, tc := range tcs {
			if tc.Service == "" {
				return c, wkInvalid("tail_consumers[%d].service is required", i)
			}
		}
		if tcs == nil {
			tcs = []tailConsumerJSON{}
		}
		c.TailConsumers, _ = json.Marshal(tcs)
	}
	if present(f.Tags) {
		var tags []string
		if json.Unmarshal(f.Tags, &tags) != nil {
			return c, wkInvalid("tags must be an array of strings")
		}
		c.Tags, _ = json.Marshal(nonNilStrings(tags))
	}
	return c, nil
}

func parsePlacement(raw json.RawMessage) (*placementJSON, error) {
	var pl placementJSON
	if err := strictJSON(raw, &pl); err != nil {
		return nil, wkInvalid("placement: %v", err)
	}
	hints := 0
	for _, v := range []string{pl.Region, pl.Host, pl.Hostname} {
		if v != "" {
			hints++
		}
	}
	switch {
	case pl.Mode == "smart" && hints == 0:
		return &pl, nil
	case pl.Mode == "smart":
		return nil, wkInvalid("placement: mode \"smart\" takes no region, host or hostname")
	case pl.Mode != "" && pl.Mode != "targeted":
		return nil, wkInvalid("placement.mode %q is not a placement mode: use \"smart\", or a region, host or hostname", pl.Mode)
	case pl.Hint != "":
		return nil, wkInvalid("placement.hint is only valid with mode \"smart\"")
	case hints == 0:
		return nil, wkInvalid("placement must be {\"mode\":\"smart\"} or name one of region, host or hostname")
	case hints > 1:
		return nil, wkInvalid("placement: region, host and hostname are mutually exclusive")
	}
	return &pl, nil
}

// strictJSON decodes raw into v, refusing fields v does not know, so a
// misspelt setting is an error rather than silently dropped.
func strictJSON(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func checkRate(field string, v *float64) error {
	if v != nil && (*v < 0 || *v > 1) {
		return wkInvalid("%s must be from 0 to 1, got %v", field, *v)
	}
	return nil
}

// applyScriptLevel stores the script-level settings c carries.
func (ws *workerScript) applyScriptLevel(c scriptConfig) {
	set := func(key string, raw json.RawMessage) {
		if raw == nil {
			return
		}
		if ws.Settings == nil {
			ws.Settings = map[string]json.RawMessage{}
		}
		ws.Settings[key] = raw
	}
	set("observability", c.Observability)
	set("logpush", c.Logpush)
	set("tail_consumers", c.TailConsumers)
	set("tags", c.Tags)
}

// observability is the script's Workers Logs setting, nil when never set.
func (ws *workerScript) observability() *observabilityJSON {
	raw, ok := ws.Settings["observability"]
	if !ok || !present(raw) {
		return nil
	}
	var o observabilityJSON
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	return &o
}

func (ws *workerScript) logpush() bool {
	var b bool
	_ = json.Unmarshal(ws.Settings["logpush"], &b)
	return b
}

func (ws *workerScript) tailConsumers() []tailConsumerJSON {
	out := []tailConsumerJSON{}
	if raw, ok := ws.Settings["tail_consumers"]; ok {
		_ = json.Unmarshal(raw, &out)
	}
	if out == nil {
		out = []tailConsumerJSON{}
	}
	return out
}

// placementMode is what list answers call placement_mode ("" when none).
func (c *workerContent) placementMode() string {
	switch {
	case c.Placement == nil:
		return ""
	case c.Placement.Mode != "":
		return c.Placement.Mode
	}
	return "targeted"
}

// wkSettingsJSON is GET settings: the deployed version's bindings,
// compatibility, placement and limits, and the script-level settings.
// Placement, limits and observability are left out when unset, as
// Cloudflare leaves them out (an empty placement object is none of its
// documented forms).
type wkSettingsJSON struct {
	Bindings           []json.RawMessage  `json:"bindings"`
	CompatibilityDate  string             `json:"compatibility_date"`
	CompatibilityFlags []string           `json:"compatibility_flags"`
	Migrations         *wkMigrationsJSON  `json:"migrations,omitempty"`
	Logpush            bool               `json:"logpush"`
	Observability      *observabilityJSON `json:"observability,omitempty"`
	Placement          *placementJSON     `json:"placement,omitempty"`
	Limits             *limitsJSON        `json:"limits,omitempty"`
	Tags               []string           `json:"tags"`
	TailConsumers      []tailConsumerJSON `json:"tail_consumers"`
	UsageModel         string             `json:"usage_model"`
}

type wkMigrationsJSON struct {
	NewTag string `json:"new_tag"`
}

func (ws *workerScript) settingsJSON() wkSettingsJSON {
	out := wkSettingsJSON{
		Bindings:           make([]json.RawMessage, len(ws.Bindings)),
		CompatibilityDate:  ws.CompatibilityDate,
		CompatibilityFlags: nonNilStrings(append([]string{}, ws.CompatibilityFlags...)),
		Logpush:            ws.logpush(),
		Observability:      ws.observability(),
		Placement:          ws.Placement,
		Limits:             ws.Limits,
		Tags:               ws.tags(),
		TailConsumers:      ws.tailConsumers(),
		UsageModel:         "standard",
	}
	for i, raw := range ws.Bindings {
		out.Bindings[i] = redactBinding(raw)
	}
	if ws.MigrationTag != "" {
		out.Migrations = &wkMigrationsJSON{NewTag: ws.MigrationTag}
	}
	return out
}

func (s *Service) wkSettings(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var out wkSettingsJSON
	if err == nil {
		out = ws.settingsJSON()
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

// patchSettingsBody is PATCH settings' "settings" part. Bindings are not
// changed through it by the emulator (upload a version instead), so a body
// that carries them is refused rather than half applied.
type patchSettingsBody struct {
	settingsFields
	CompatibilityDate  *string          `json:"compatibility_date"`
	CompatibilityFlags []string         `json:"compatibility_flags"`
	Bindings           json.RawMessage  `json:"bindings"`
	UsageModel         string           `json:"usage_model"`
	Migrations         *json.RawMessage `json:"migrations"`
}

// wkSettingsPatch is PATCH settings (multipart, one "settings" part of
// JSON). Script-level keys change in place; a version-level key (placement,
// limits, compatibility) makes and deploys a new version carrying the
// deployed one's code and bindings, as a settings change does on Cloudflare.
func (s *Service) wkSettingsPatch(w http.ResponseWriter, r *http.Request) {
	raw, err := settingsPart(w, r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	var body patchSettingsBody
	if err := json.Unmarshal(raw, &body); err != nil {
		core.WriteError(w, wkInvalid("the settings part is not valid JSON: %v", err))
		return
	}
	// placement and limits are replaced, not merged: an explicit null clears.
	clearPlacement := string(body.Placement) == "null"
	clearLimits := string(body.Limits) == "null"
	switch {
	case present(body.Bindings):
		core.WriteError(w, wkInvalid("the emulator does not change bindings through PATCH settings: upload a new version"))
		return
	case body.Migrations != nil:
		core.WriteError(w, wkInvalid("Durable Object migrations can only be applied by a script upload (PUT)"))
		return
	}
	if d := body.CompatibilityDate; d != nil {
		if _, err := time.Parse("2006-01-02", *d); err != nil {
			core.WriteError(w, wkInvalid("compatibility_date %q is not a date of the form YYYY-MM-DD", *d))
			return
		}
	}
	cfg, err := parseScriptConfig(body.settingsFields)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	s.mu.Lock()
	ws, err := s.wkLookupLocked(r)
	var out wkSettingsJSON
	if err == nil {
		ws.applyScriptLevel(cfg)
		versioned := cfg.Placement != nil || cfg.Limits != nil || clearPlacement || clearLimits ||
			body.CompatibilityDate != nil || body.CompatibilityFlags != nil
		if versioned {
			content := ws.workerContent
			if cfg.Placement != nil || clearPlacement {
				content.Placement = cfg.Placement
			}
			if cfg.Limits != nil || clearLimits {
				content.Limits = cfg.Limits
			}
			if body.CompatibilityDate != nil {
				content.CompatibilityDate = *body.CompatibilityDate
			}
			if body.CompatibilityFlags != nil {
				content.CompatibilityFlags = body.CompatibilityFlags
			}
			now := time.Now().UTC()
			v := ws.addVersion(content, now, uploadSource(r), "version_settings", "", "")
			err = ws.deploy([]deployedShare{{VersionID: v.ID, Percentage: 100}}, now, uploadSource(r), "")
		}
		ws.ModifiedOn = time.Now().UTC()
		out = ws.settingsJSON()
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

// settingsPart reads the "settings" part of a multipart PATCH settings
// body (cloudflare-go and the dashboard send multipart/form-data).
func settingsPart(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, wkInvalid("PATCH settings takes multipart/form-data with a \"settings\" part of JSON")
	}
	r.Body = http.MaxBytesReader(w, r.Body, core.MaxBody)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, wkInvalid("could not parse the multipart body: %v", err)
	}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, wkInvalid("the body has no \"settings\" part")
		}
		if err != nil {
			return nil, wkInvalid("could not parse the multipart body: %v", err)
		}
		if p.FormName() != "settings" {
			continue
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return nil, wkInvalid("could not read the settings part: %v", err)
		}
		if len(strings.TrimSpace(string(b))) == 0 {
			return nil, wkInvalid("the settings part is empty")
		}
		return b, nil
	}
}
