package cloudflare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
)

// WorkerSettings are the Worker inputs beyond code and the eight binding
// kinds Open-Inspect uses: script-level settings, the other binding kinds,
// bindings kept from elsewhere, and the hostnames the worker serves.
type WorkerSettings struct {
	Observability *Observability `pulumi:"observability,optional"`
	Placement     *Placement     `pulumi:"placement,optional"`
	Limits        *ScriptLimits  `pulumi:"limits,optional"`
	TailConsumers []TailConsumer `pulumi:"tailConsumers,optional"`
	Logpush       *bool          `pulumi:"logpush,optional"`
	Tags          []string       `pulumi:"tags,optional"`
	KeepBindings  []string       `pulumi:"keepBindings,optional"`
	Domains       []CustomDomain `pulumi:"domains,optional"`
	Routes        []WorkerRoute  `pulumi:"routes,optional"`
	MoreBindings
}

// Observability turns on Workers Logs.
type Observability struct {
	Enabled          bool               `pulumi:"enabled"`
	HeadSamplingRate *float64           `pulumi:"headSamplingRate,optional"`
	Logs             *ObservabilityLogs `pulumi:"logs,optional"`
}

// ObservabilityLogs are Workers Logs' persisted logs.
type ObservabilityLogs struct {
	Enabled          bool     `pulumi:"enabled"`
	InvocationLogs   *bool    `pulumi:"invocationLogs,optional"`
	HeadSamplingRate *float64 `pulumi:"headSamplingRate,optional"`
}

// Placement is where the worker runs: exactly one of the four forms.
type Placement struct {
	Mode     string `pulumi:"mode,optional"`
	Region   string `pulumi:"region,optional"`
	Host     string `pulumi:"host,optional"`
	Hostname string `pulumi:"hostname,optional"`
}

// ScriptLimits cap the worker's resources per invocation.
type ScriptLimits struct {
	CPUMs int `pulumi:"cpuMs"`
}

// TailConsumer is a worker receiving this one's tail events.
type TailConsumer struct {
	Service     string `pulumi:"service"`
	Environment string `pulumi:"environment,optional"`
	Namespace   string `pulumi:"namespace,optional"`
}

// keepableTypes are the binding types keepBindings accepts.
var keepableTypes = []string{"plain_text", "secret_text"}

// validateSettings adds each problem with the WorkerSettings inputs, naming the field.
// fail drops problems with unknown fields; unknown guards the cross-field
// checks.
func (a WorkerArgs) validateSettings(fail func(field, format string, args ...any), unknown func(string) bool) {
	rate := func(field string, v *float64) {
		if v != nil && (*v < 0 || *v > 1) {
			fail(field, "%v is not a sampling rate: use a number from 0 to 1", *v)
		}
	}
	if o := a.Observability; o != nil {
		rate("observability.headSamplingRate", o.HeadSamplingRate)
		if o.Logs != nil {
			rate("observability.logs.headSamplingRate", o.Logs.HeadSamplingRate)
		}
	}
	if pl := a.Placement; pl != nil {
		set := 0
		for _, v := range []string{pl.Mode, pl.Region, pl.Host, pl.Hostname} {
			if v != "" {
				set++
			}
		}
		switch {
		case pl.Mode != "" && pl.Mode != "smart":
			fail("placement.mode", "%q is not a placement mode: the only mode is \"smart\"", pl.Mode)
		case set == 0:
			fail("placement", "set one of mode (\"smart\"), region, host or hostname, or leave placement out")
		case set > 1:
			fail("placement", "mode, region, host and hostname are mutually exclusive: set one")
		case pl.Region != "" && !strings.Contains(pl.Region, ":"):
			fail("placement.region", "%q is not a cloud region: use provider:region, e.g. aws:us-east-1", pl.Region)
		case pl.Host != "" && !strings.Contains(pl.Host, ":"):
			fail("placement.host", "%q needs a port: use host:port, e.g. db.example.com:5432", pl.Host)
		}
	}
	if l := a.Limits; l != nil && (l.CPUMs < 1 || l.CPUMs > 300000) {
		fail("limits.cpuMs", "%d is out of range 1-300000 (milliseconds)", l.CPUMs)
	}
	for i, t := range a.TailConsumers {
		if problem := ScriptNameProblem(t.Service); problem != "" {
			fail(fmt.Sprintf("tailConsumers[%d].service", i), "%s", problem)
		}
	}
	for i, tag := range a.Tags {
		field := fmt.Sprintf("tags[%d]", i)
		switch {
		case strings.TrimSpace(tag) == "":
			fail(field, "a tag cannot be empty")
		case strings.HasPrefix(tag, ownerTagPrefix):
			fail(field, "tags starting with %q are the provider's ownership evidence; set owner instead", ownerTagPrefix)
		case strings.Contains(tag, ","):
			fail(field, "%q: a tag cannot contain a comma", tag)
		}
	}
	for i, k := range a.KeepBindings {
		if !slices.Contains(keepableTypes, k) {
			fail(fmt.Sprintf("keepBindings[%d]", i), "%q cannot be kept: use %s", k, strings.Join(keepableTypes, " or "))
		}
	}
	a.validateRouting(fail, unknown)
	for _, k := range moreBindingKinds {
		k.check(a, fail, unknown)
	}
}

// scriptTags are the tags an upload carries: the user's, sorted and
// deduplicated, then the ownership tag.
func (a WorkerArgs) scriptTags() []string {
	tags := slices.Clone(a.Tags)
	slices.Sort(tags)
	tags = slices.Compact(tags)
	return append(tags, ownerTags(a.Owner)...)
}

// scriptConfig is the settings part of the upload metadata.
func (a WorkerArgs) scriptConfig() cfapi.ScriptConfig {
	c := cfapi.ScriptConfig{Logpush: a.Logpush != nil && *a.Logpush, KeepBindings: a.KeepBindings}
	if o := a.Observability; o != nil {
		c.Observability = &cfapi.Observability{Enabled: o.Enabled, HeadSamplingRate: o.HeadSamplingRate}
		if l := o.Logs; l != nil {
			c.Observability.Logs = &cfapi.ObservabilityLogs{Enabled: l.Enabled, InvocationLogs: l.InvocationLogs == nil || *l.InvocationLogs,
				HeadSamplingRate: l.HeadSamplingRate}
		}
	}
	if pl := a.Placement; pl != nil {
		c.Placement = &cfapi.Placement{Mode: pl.Mode, Region: pl.Region, Host: pl.Host, Hostname: pl.Hostname}
	}
	if a.Limits != nil {
		c.Limits = &cfapi.Limits{CPUMs: a.Limits.CPUMs}
	}
	for _, t := range a.TailConsumers {
		c.TailConsumers = append(c.TailConsumers, cfapi.TailConsumer{Service: t.Service, Environment: t.Environment, Namespace: t.Namespace})
	}
	return c
}

// settingsDigest is what the content hash covers of the settings: nil when
// none is set, so hashes recorded before these inputs existed stay valid.
func (a WorkerArgs) settingsDigest() *cfapi.ScriptConfig {
	if a.Observability == nil && a.Placement == nil && a.Limits == nil && len(a.TailConsumers) == 0 &&
		(a.Logpush == nil || !*a.Logpush) && len(a.KeepBindings) == 0 && len(a.Tags) == 0 {
		return nil
	}
	c := a.scriptConfig()
	return &c
}

// settingsDiff names each WorkerSettings input that moved; settings, tags and
// the new bindings need an upload, domains and routes do not.
func settingsDiff(c *workerChanges, olds, news WorkerArgs) {
	norm := func(a WorkerArgs) cfapi.ScriptConfig { return a.scriptConfig() }
	oc, nc := norm(olds), norm(news)
	c.scalar("observability", differ(oc.Observability, nc.Observability), &c.settings)
	c.scalar("placement", differ(oc.Placement, nc.Placement), &c.settings)
	c.scalar("limits", differ(oc.Limits, nc.Limits), &c.settings)
	c.scalar("logpush", oc.Logpush != nc.Logpush, &c.settings)
	byKey(c, "tailConsumers", olds.TailConsumers, news.TailConsumers, func(t TailConsumer) string { return t.Service }, &c.settings)
	byKey(c, "tags", olds.Tags, news.Tags, func(s string) string { return s }, &c.settings)
	byKey(c, "keepBindings", olds.KeepBindings, news.KeepBindings, func(s string) string { return s }, &c.settings)
	byKey(c, "domains", olds.Domains, news.Domains, func(d CustomDomain) string { return d.Hostname }, &c.other)
	byKey(c, "routes", olds.Routes, news.Routes, func(r WorkerRoute) string { return r.Pattern }, &c.other)
	for _, k := range moreBindingKinds {
		k.diff(c, olds, news)
	}
}

// settingsFromScript adds what GET settings reports of the WorkerSettings
// inputs to an import's inputs: observability, placement, limits, tail
// consumers, logpush and the user's tags (not the ownership tag). Domains
// and routes are not in the settings; the program lists them.
func settingsFromScript(pl WorkerSettings, s cfapi.ScriptSettings) WorkerSettings {
	c := s.Config
	pl.Observability = observabilityInput(c.Observability)
	if c.Placement != nil {
		pl.Placement = &Placement{Mode: c.Placement.Mode, Region: c.Placement.Region, Host: c.Placement.Host, Hostname: c.Placement.Hostname}
	}
	if c.Limits != nil && c.Limits.CPUMs > 0 {
		pl.Limits = &ScriptLimits{CPUMs: c.Limits.CPUMs}
	}
	for _, t := range c.TailConsumers {
		pl.TailConsumers = append(pl.TailConsumers, TailConsumer{Service: t.Service, Environment: t.Environment, Namespace: t.Namespace})
	}
	if c.Logpush {
		pl.Logpush = new(true)
	}
	for _, t := range s.Tags {
		if !strings.HasPrefix(t, ownerTagPrefix) {
			pl.Tags = append(pl.Tags, t)
		}
	}
	return pl
}
