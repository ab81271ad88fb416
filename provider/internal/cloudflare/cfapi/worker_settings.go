package cfapi

import "encoding/json"

// Script-level settings, in the shapes of the upload metadata and of GET
// workers/scripts/{name}/settings (cloudflare-go/v4
// workers.ScriptUpdateParamsMetadata; limits and the placement hints are
// newer than that SDK and follow the API reference and wrangler).

// Observability is Workers Logs: sampling of invocations and their logs.
type Observability struct {
	Enabled          bool               `json:"enabled"`
	HeadSamplingRate *float64           `json:"head_sampling_rate,omitempty"`
	Logs             *ObservabilityLogs `json:"logs,omitempty"`
}

// ObservabilityLogs are the persisted logs of Workers Logs.
type ObservabilityLogs struct {
	Enabled          bool     `json:"enabled"`
	InvocationLogs   bool     `json:"invocation_logs"`
	HeadSamplingRate *float64 `json:"head_sampling_rate,omitempty"`
}

// Placement is one of the documented forms, which are mutually exclusive:
// {mode: "smart"}, {region}, {host} (layer 4 probe) or {hostname} (layer 7).
type Placement struct {
	Mode     string `json:"mode,omitempty"`
	Region   string `json:"region,omitempty"`
	Host     string `json:"host,omitempty"`
	Hostname string `json:"hostname,omitempty"`
}

// Limits caps a script's CPU time per invocation.
type Limits struct {
	CPUMs int `json:"cpu_ms,omitempty"`
}

// TailConsumer is a worker receiving this one's tail events.
type TailConsumer struct {
	Service     string `json:"service"`
	Environment string `json:"environment,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
}

// ScriptConfig are the settings an upload carries beside its bindings.
// Observability, logpush and tail consumers are always sent, so an upload
// restores them (a value set elsewhere is overwritten, and a setting the
// program dropped is switched off); placement and limits belong to the
// version, so an upload without them has none.
type ScriptConfig struct {
	Observability *Observability `json:"observability,omitempty"`
	Placement     *Placement     `json:"placement,omitempty"`
	Limits        *Limits        `json:"limits,omitempty"`
	TailConsumers []TailConsumer `json:"tail_consumers"`
	Logpush       bool           `json:"logpush"`
	// KeepBindings are binding types the upload leaves in place when it does
	// not send them itself (secrets or vars set with wrangler or the
	// dashboard).
	KeepBindings []string `json:"keep_bindings,omitempty"`
}

// settingsJSON is what GET .../settings answers beyond bindings.
type settingsJSON struct {
	Bindings           []Binding      `json:"bindings"`
	CompatibilityDate  string         `json:"compatibility_date"`
	CompatibilityFlags []string       `json:"compatibility_flags"`
	Tags               []string       `json:"tags"`
	Logpush            bool           `json:"logpush"`
	Observability      *Observability `json:"observability"`
	Placement          *Placement     `json:"placement"`
	Limits             *Limits        `json:"limits"`
	TailConsumers      []TailConsumer `json:"tail_consumers"`
	Migrations         struct {
		NewTag string `json:"new_tag"`
	} `json:"migrations"`
}

func decodeSettings(raw []byte) (ScriptSettings, error) {
	var s settingsJSON
	if err := json.Unmarshal(raw, &s); err != nil {
		return ScriptSettings{}, err
	}
	placement := s.Placement
	if placement != nil && placement.Mode == "targeted" && (placement.Region != "" || placement.Host != "" || placement.Hostname != "") {
		// wrangler sends a hint as {mode: "targeted", region}: the same
		// form as the bare hint the provider sends.
		placement.Mode = ""
	}
	if placement != nil && *placement == (Placement{}) {
		placement = nil // {} is no placement
	}
	limits := s.Limits
	if limits != nil && limits.CPUMs == 0 {
		limits = nil // {} is the plan's default, as an upload without limits
	}
	return ScriptSettings{
		Bindings: s.Bindings, CompatibilityDate: s.CompatibilityDate, CompatibilityFlags: s.CompatibilityFlags,
		MigrationTag: s.Migrations.NewTag, Tags: s.Tags,
		Config: ScriptConfig{Observability: s.Observability, Placement: placement, Limits: limits,
			TailConsumers: s.TailConsumers, Logpush: s.Logpush},
	}, nil
}

// withDefaults is the config as sent: an absent observability is sent
// switched off and no tail consumers as [], so the upload states each.
func (c ScriptConfig) withDefaults() ScriptConfig {
	if c.Observability == nil {
		c.Observability = &Observability{Enabled: false}
	}
	if c.TailConsumers == nil {
		c.TailConsumers = []TailConsumer{}
	}
	return c
}
