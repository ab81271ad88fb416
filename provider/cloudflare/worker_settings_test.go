package cloudflare_test

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// Lifecycle tests of the Worker inputs of issue 19 against the emulator:
// each is created, left alone (no diff, no call), updated, changed out of
// band and refreshed (the drift is seen and the next up restores it), and
// deleted (nothing left behind).

type M = map[string]any

// cfRequest sends one raw request to the emulator's Cloudflare API, the way
// a second tool (wrangler, the dashboard) changes things behind Pulumi.
func cfRequest(t *testing.T, h *providertest.Harness, method, path, contentType string, body []byte) M {
	t.Helper()
	req, err := http.NewRequest(method, h.Emu.CloudflareBaseURL()+"accounts/"+emulator.DefaultAccountID+"/"+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+emulator.DefaultToken)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var env struct {
		Success bool
		Errors  []M
		Result  M
	}
	require.NoError(t, json.Unmarshal(raw, &env), "%s", raw)
	require.True(t, env.Success, "%s %s: %v", method, path, env.Errors)
	return env.Result
}

// remoteSettings is GET settings as the emulator answers it.
func remoteSettings(t *testing.T, h *providertest.Harness, script string) M {
	t.Helper()
	return cfRequest(t, h, http.MethodGet, "workers/scripts/"+script+"/settings", "", nil)
}

// patchSettings is PATCH settings with its documented multipart body.
func patchSettings(t *testing.T, h *providertest.Harness, script string, settings M) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, err := mw.CreateFormField("settings")
	require.NoError(t, err)
	require.NoError(t, json.NewEncoder(w).Encode(settings))
	require.NoError(t, mw.Close())
	cfRequest(t, h, http.MethodPatch, "workers/scripts/"+script+"/settings", mw.FormDataContentType(), buf.Bytes())
}

// lifecycle drives one resource through the engine's calls.
type lifecycle struct {
	t     *testing.T
	h     *providertest.Harness
	u     resource.URN
	id    string
	state property.Map
}

func newLifecycle(t *testing.T, h *providertest.Harness, name string) *lifecycle {
	return &lifecycle{t: t, h: h, u: providertest.URN(cloudflare.WorkerToken, name)}
}

func (l *lifecycle) inputs(m M) property.Map {
	return checked(l.t, l.h, l.u, providertest.Props(l.t, m))
}

func (l *lifecycle) create(m M) {
	l.t.Helper()
	created, err := l.h.Server.Create(p.CreateRequest{Urn: l.u, Properties: l.inputs(m)})
	require.NoError(l.t, err)
	l.id, l.state = created.ID, created.Properties
}

// diff returns the detailed diff, asserting a diff makes no call.
func (l *lifecycle) diff(m M) p.DiffResponse {
	l.t.Helper()
	l.h.Emu.ResetCounts()
	d, err := l.h.Server.Diff(p.DiffRequest{ID: l.id, Urn: l.u, State: l.state, Inputs: l.inputs(m)})
	require.NoError(l.t, err)
	assert.Zero(l.t, l.h.Emu.CloudflareCalls(), "a diff makes no call")
	return d
}

// noop asserts unchanged inputs diff to nothing, without a call.
func (l *lifecycle) noop(m M) {
	l.t.Helper()
	d := l.diff(m)
	assert.False(l.t, d.HasChanges, "unchanged inputs: %v", d.DetailedDiff)
}

// update applies m and returns the calls it made.
func (l *lifecycle) update(m M) map[string]int {
	l.t.Helper()
	l.h.Emu.ResetCounts()
	updated, err := l.h.Server.Update(p.UpdateRequest{ID: l.id, Urn: l.u, State: l.state, Inputs: l.inputs(m)})
	require.NoError(l.t, err)
	l.state = updated.Properties
	return nonZero(l.h.Emu.Counts())
}

// refresh reads the resource back into the state.
func (l *lifecycle) refresh(m M) {
	l.t.Helper()
	read, err := l.h.Server.Read(p.ReadRequest{ID: l.id, Urn: l.u, Properties: l.state, Inputs: l.inputs(m)})
	require.NoError(l.t, err)
	require.Equal(l.t, l.id, read.ID, "the resource still exists")
	l.state = read.Properties
}

func (l *lifecycle) delete() {
	l.t.Helper()
	require.NoError(l.t, l.h.Server.Delete(p.DeleteRequest{ID: l.id, Urn: l.u, Properties: l.state}))
	_, ok := l.h.Emu.Workers().Worker(emulator.DefaultAccountID, l.id)
	assert.False(l.t, ok, "the worker is gone")
}

func with(base M, extra M) M {
	out := maps.Clone(base)
	maps.Copy(out, extra)
	return out
}

func TestWorkerSettingsLifecycle(t *testing.T) {
	h := providertest.NewHarness(t)
	l := newLifecycle(t, h, "settings")
	base := M{"name": "oi-settings", "content": providertest.FixtureWorker}
	v1 := with(base, M{
		"observability": M{"enabled": true, "headSamplingRate": 1.0, "logs": M{"enabled": true, "invocationLogs": true}},
		"placement":     M{"mode": "smart"},
		"limits":        M{"cpuMs": 50.0},
		"tailConsumers": providertest.List(M{"service": "oi-tail"}),
		"logpush":       true,
		"tags":          []any{"team:web"},
	})
	l.create(v1)
	got := remoteSettings(t, h, "oi-settings")
	assert.Equal(t, M{"enabled": true, "head_sampling_rate": 1.0, "logs": M{"enabled": true, "invocation_logs": true}}, got["observability"])
	assert.Equal(t, M{"mode": "smart"}, got["placement"])
	assert.Equal(t, M{"cpu_ms": 50.0}, got["limits"])
	assert.Equal(t, []any{M{"service": "oi-tail"}}, got["tail_consumers"])
	assert.Equal(t, true, got["logpush"])
	assert.Contains(t, got["tags"], "team:web")

	l.noop(v1)

	// Each setting moved: the diff names each, one upload applies them all.
	v2 := with(v1, M{
		"observability": M{"enabled": true, "headSamplingRate": 0.25},
		"placement":     M{"region": "aws:us-east-1"},
		"limits":        M{"cpuMs": 100.0},
		"tailConsumers": providertest.List(M{"service": "oi-tail-2"}),
		"logpush":       false,
		"tags":          []any{"team:web", "tier:1"},
	})
	d := l.diff(v2)
	for _, key := range []string{"observability", "placement", "limits", "logpush"} {
		assert.Contains(t, d.DetailedDiff, key)
	}
	assert.True(t, d.HasChanges)
	calls := l.update(v2)
	assert.Equal(t, map[string]int{uploadKey: 1}, calls, "one upload, nothing else")
	got = remoteSettings(t, h, "oi-settings")
	assert.Equal(t, M{"enabled": true, "head_sampling_rate": 0.25}, got["observability"])
	assert.Equal(t, M{"region": "aws:us-east-1"}, got["placement"])
	assert.Equal(t, M{"cpu_ms": 100.0}, got["limits"])
	assert.Equal(t, []any{M{"service": "oi-tail-2"}}, got["tail_consumers"])
	assert.Equal(t, false, got["logpush"])
	assert.Subset(t, got["tags"], []any{"team:web", "tier:1"})
	l.noop(v2)

	// Changed out of band: refresh sees each setting, the next up restores them.
	patchSettings(t, h, "oi-settings", M{"observability": M{"enabled": false}, "limits": M{"cpu_ms": 300}, "placement": nil,
		"logpush": true, "tail_consumers": []M{}, "tags": []string{"someone:else"}})
	l.refresh(v2)
	assert.Contains(t, l.state.Get("hash").AsString(), "changed outside Pulumi")
	for _, what := range []string{"observability", "placement", "limits", "logpush", "tail consumers", "tags"} {
		assert.Contains(t, l.state.Get("hash").AsString(), what)
	}
	assert.Equal(t, 300.0, l.state.Get("limits").AsMap().Get("cpuMs").AsNumber())
	d = l.diff(v2)
	assert.True(t, d.HasChanges, "the drift is a diff")
	calls = l.update(v2)
	assert.Equal(t, 1, calls[uploadKey])
	got = remoteSettings(t, h, "oi-settings")
	assert.Equal(t, M{"cpu_ms": 100.0}, got["limits"])
	assert.Equal(t, M{"region": "aws:us-east-1"}, got["placement"])
	assert.Equal(t, true, got["observability"].(M)["enabled"])
	assert.Equal(t, false, got["logpush"])
	assert.Equal(t, []any{M{"service": "oi-tail-2"}}, got["tail_consumers"])
	assert.NotContains(t, got["tags"], "someone:else")

	// Dropping every setting turns each off: an upload states them all.
	l.update(base)
	got = remoteSettings(t, h, "oi-settings")
	assert.NotContains(t, got, "placement")
	assert.NotContains(t, got, "limits")
	assert.Equal(t, M{"enabled": false}, got["observability"])
	assert.Equal(t, []any{}, got["tail_consumers"])
	l.noop(base)
	l.refresh(base)
	l.noop(base)

	l.delete()
	assert.True(t, h.Emu.Inventory().Empty(), "%+v", h.Emu.Inventory())
}

// keepBindings leaves the vars and secrets set outside Pulumi in place
// across uploads and out of the drift; without it the upload replaces them.
func TestWorkerKeepBindingsLifecycle(t *testing.T) {
	h := providertest.NewHarness(t)
	client := emuClient(t, h)
	l := newLifecycle(t, h, "keep")
	v1 := M{"name": "oi-keep", "content": providertest.FixtureWorker, "vars": M{"MODE": "a"}, "keepBindings": []any{"plain_text", "secret_text"}}
	l.create(v1)
	l.noop(v1)

	// Another tool adds a var and a secret (wrangler deploy / secret put).
	text, secret := "set-elsewhere", "elsewhere-secret"
	mode := "a"
	_, err := client.UploadScript(t.Context(), cfapi.ScriptUpload{Name: "oi-keep", MainModule: "index.js",
		Modules: []cfapi.Module{{Name: "index.js", Content: []byte(providertest.FixtureWorker)}},
		Bindings: []cfapi.Binding{{Type: "plain_text", Name: "MODE", Text: &mode}, {Type: "plain_text", Name: "EXTRA", Text: &text},
			{Type: "secret_text", Name: "OUTSIDE", Text: &secret}}})
	require.NoError(t, err)
	l.refresh(v1)
	assert.NotContains(t, l.state.Get("hash").AsString(), "EXTRA", "kept kinds are not drift")
	assert.NotContains(t, l.state.Get("hash").AsString(), "OUTSIDE")

	v2 := with(v1, M{"vars": M{"MODE": "b"}})
	calls := l.update(v2)
	assert.Equal(t, 1, calls[uploadKey])
	w, _ := h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-keep")
	assert.Equal(t, map[string]string{"MODE": "b", "EXTRA": "set-elsewhere"}, w.Vars, "the program's MODE wins, EXTRA is kept")
	assert.Equal(t, map[string]string{"OUTSIDE": "elsewhere-secret"}, w.Secrets)

	// Without keepBindings the next upload removes them, and says so first.
	v3 := M{"name": "oi-keep", "content": providertest.FixtureWorker, "vars": M{"MODE": "b"}}
	assert.Contains(t, l.diff(v3).DetailedDiff, "keepBindings[0]")
	l.update(v3)
	w, _ = h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-keep")
	assert.Equal(t, map[string]string{"MODE": "b"}, w.Vars)
	assert.Empty(t, w.Secrets)
	l.refresh(v3)
	l.noop(v3)

	l.delete()
	assert.True(t, h.Emu.Inventory().Empty())
}

func TestWorkerDomainsRoutesLifecycle(t *testing.T) {
	h := providertest.NewHarness(t)
	zoneID, ok := h.Emu.Zones().ZoneID(emulator.DefaultAccountID, "example.com")
	require.True(t, ok)
	l := newLifecycle(t, h, "web")
	v1 := M{"name": "oi-web", "content": providertest.FixtureWorker, "workersDev": false,
		"domains": providertest.List(M{"hostname": "app.example.com", "zoneName": "example.com"}),
		"routes":  providertest.List(M{"pattern": "example.com/api/*", "zoneId": zoneID}),
	}
	l.create(v1)
	inv := h.Emu.Inventory()
	require.Len(t, inv.Domains, 1)
	assert.Equal(t, "app.example.com", inv.Domains[0].Hostname)
	assert.Equal(t, "oi-web", inv.Domains[0].Service)
	assert.Equal(t, zoneID, inv.Domains[0].ZoneID)
	require.Len(t, inv.Routes, 1)
	assert.Equal(t, "example.com/api/*", inv.Routes[0].Pattern)
	assert.Equal(t, "oi-web", inv.Routes[0].Script)
	w, _ := h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-web")
	assert.False(t, w.WorkersDev, "workers.dev is off")
	assert.Empty(t, l.state.Get("url").AsString(), "no workers.dev URL")
	assert.Equal(t, inv.Domains[0].ID, l.state.Get("domainIds").AsMap().Get("app.example.com").AsString())
	l.noop(v1)

	// A domain added and the route dropped: no upload, the routing calls only.
	v2 := with(v1, M{"domains": providertest.List(M{"hostname": "app.example.com", "zoneName": "example.com"},
		M{"hostname": "api.example.com", "zoneId": zoneID}), "routes": []any{}})
	d := l.diff(v2)
	assert.Contains(t, d.DetailedDiff, "domains[1]")
	calls := l.update(v2)
	assert.Zero(t, calls[uploadKey], "domains and routes need no upload: %v", calls)
	inv = h.Emu.Inventory()
	assert.Len(t, inv.Domains, 2)
	assert.Empty(t, inv.Routes, "the dropped route is deleted")
	l.noop(v2)

	// Detached out of band: refresh sees it, the next up attaches it again.
	client := emuClient(t, h)
	api, _, err := client.DomainByHostname(t.Context(), "api.example.com")
	require.NoError(t, err)
	require.NoError(t, client.DetachDomain(t.Context(), api.ID))
	l.refresh(v2)
	domains := l.state.Get("domains").AsArray().AsSlice()
	require.Len(t, domains, 1, "refresh dropped the detached domain")
	d = l.diff(v2)
	assert.True(t, d.HasChanges)
	l.update(v2)
	assert.Len(t, h.Emu.Inventory().Domains, 2)
	l.refresh(v2)
	l.noop(v2)

	// workers.dev switched on elsewhere is drift too.
	require.NoError(t, client.SetWorkersDev(t.Context(), "oi-web", true))
	l.refresh(v2)
	assert.True(t, l.diff(v2).HasChanges)
	l.update(v2)
	w, _ = h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-web")
	assert.False(t, w.WorkersDev)

	l.delete()
	inv = h.Emu.Inventory()
	assert.Empty(t, inv.Domains, "destroy detaches the domains")
	assert.Empty(t, inv.Routes)
	assert.True(t, inv.Empty())
}

// A hostname or route serving another script is refused, naming both,
// unless adoptExisting; a zone the account lacks is named.
func TestWorkerDomainsOwnership(t *testing.T) {
	h := providertest.NewHarness(t)
	zoneID, _ := h.Emu.Zones().ZoneID(emulator.DefaultAccountID, "example.com")
	other := newLifecycle(t, h, "other")
	other.create(M{"name": "oi-other", "content": providertest.FixtureWorker,
		"domains": providertest.List(M{"hostname": "shared.example.com", "zoneId": zoneID}),
		"routes":  providertest.List(M{"pattern": "example.com/shared/*", "zoneName": "example.com"})})

	mine := M{"name": "oi-mine", "content": providertest.FixtureWorker,
		"domains": providertest.List(M{"hostname": "shared.example.com", "zoneId": zoneID})}
	u := providertest.URN(cloudflare.WorkerToken, "mine")
	_, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: checked(t, h, u, providertest.Props(t, mine))})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shared.example.com")
	assert.Contains(t, err.Error(), "oi-other")
	assert.Equal(t, "oi-other", domainService(t, h, "shared.example.com"), "the other script keeps its domain")

	route := M{"name": "oi-mine2", "content": providertest.FixtureWorker,
		"routes": providertest.List(M{"pattern": "example.com/shared/*", "zoneId": zoneID})}
	u2 := providertest.URN(cloudflare.WorkerToken, "mine2")
	_, err = h.Server.Create(p.CreateRequest{Urn: u2, Properties: checked(t, h, u2, providertest.Props(t, route))})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "example.com/shared/*")

	adopt := newLifecycle(t, h, "adopt")
	adopt.create(with(mine, M{"name": "oi-adopt", "adoptExisting": true}))
	assert.Equal(t, "oi-adopt", domainService(t, h, "shared.example.com"), "adoptExisting takes the hostname over")

	missing := M{"name": "oi-nozone", "content": providertest.FixtureWorker,
		"domains": providertest.List(M{"hostname": "a.missing.example", "zoneName": "missing.example"})}
	u3 := providertest.URN(cloudflare.WorkerToken, "nozone")
	_, err = h.Server.Create(p.CreateRequest{Urn: u3, Properties: checked(t, h, u3, providertest.Props(t, missing))})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.example")
	assert.True(t, strings.Contains(err.Error(), "not in account"), err.Error())
}

func domainService(t *testing.T, h *providertest.Harness, host string) string {
	t.Helper()
	for _, d := range h.Emu.Inventory().Domains {
		if d.Hostname == host {
			return d.Service
		}
	}
	return ""
}

// The typed binding kinds and otherBindings reach the upload in the API's
// shapes, and a binding removed elsewhere is drift the next up restores.
func TestWorkerMoreBindingsLifecycle(t *testing.T) {
	h := providertest.NewHarness(t)
	client := emuClient(t, h)
	l := newLifecycle(t, h, "kinds")
	v1 := M{"name": "oi-kinds", "content": providertest.FixtureWorker,
		"jsonBindings":            providertest.List(M{"binding": "CONFIG", "value": M{"retries": 3.0, "regions": []any{"eu"}}}),
		"versionMetadata":         providertest.List(M{"binding": "VERSION"}),
		"ai":                      providertest.List(M{"binding": "AI"}),
		"analyticsEngineDatasets": providertest.List(M{"binding": "EVENTS", "dataset": "oi_events"}),
		"otherBindings":           providertest.List(M{"type": "pipelines", "binding": "PIPE", "properties": M{"pipeline": "oi-pipe"}}),
	}
	l.create(v1)
	raws := bindingsByName(t, h, "oi-kinds")
	assert.JSONEq(t, `{"type":"json","name":"CONFIG","json":{"retries":3,"regions":["eu"]}}`, raws["CONFIG"])
	assert.JSONEq(t, `{"type":"version_metadata","name":"VERSION"}`, raws["VERSION"])
	assert.JSONEq(t, `{"type":"ai","name":"AI"}`, raws["AI"])
	assert.JSONEq(t, `{"type":"analytics_engine","name":"EVENTS","dataset":"oi_events"}`, raws["EVENTS"])
	assert.JSONEq(t, `{"type":"pipelines","name":"PIPE","pipeline":"oi-pipe"}`, raws["PIPE"])
	l.noop(v1)

	v2 := with(v1, M{"jsonBindings": providertest.List(M{"binding": "CONFIG", "value": M{"retries": 5.0}}),
		"otherBindings": providertest.List(M{"type": "pipelines", "binding": "PIPE", "properties": M{"pipeline": "oi-pipe-2"}})})
	d := l.diff(v2)
	assert.Contains(t, d.DetailedDiff, "jsonBindings[0]")
	assert.Contains(t, d.DetailedDiff, "otherBindings[0]")
	assert.Equal(t, 1, l.update(v2)[uploadKey])
	raws = bindingsByName(t, h, "oi-kinds")
	assert.JSONEq(t, `{"type":"json","name":"CONFIG","json":{"retries":5}}`, raws["CONFIG"])
	assert.JSONEq(t, `{"type":"pipelines","name":"PIPE","pipeline":"oi-pipe-2"}`, raws["PIPE"])
	l.noop(v2)

	// Another tool uploads without AI and with CONFIG changed: both are drift.
	_, err := client.UploadScript(t.Context(), cfapi.ScriptUpload{Name: "oi-kinds", MainModule: "index.js",
		Modules:  []cfapi.Module{{Name: "index.js", Content: []byte(providertest.FixtureWorker)}},
		Bindings: []cfapi.Binding{{Type: "version_metadata", Name: "VERSION"}}})
	require.NoError(t, err)
	l.refresh(v2)
	hash := l.state.Get("hash").AsString()
	assert.Contains(t, hash, "AI removed")
	assert.Contains(t, hash, "CONFIG removed")
	assert.True(t, l.diff(v2).HasChanges)
	l.update(v2)
	assert.Len(t, bindingsByName(t, h, "oi-kinds"), 5, "the next up restores every binding")
	l.refresh(v2)
	l.noop(v2)

	l.delete()
	assert.True(t, h.Emu.Inventory().Empty())
}

func bindingsByName(t *testing.T, h *providertest.Harness, script string) map[string]string {
	t.Helper()
	w, ok := h.Emu.Workers().Worker(emulator.DefaultAccountID, script)
	require.True(t, ok)
	out := map[string]string{}
	for _, b := range w.Bindings {
		out[b.Name] = string(b.Raw)
	}
	return out
}

// pulumi import of a worker deployed elsewhere reads its script settings
// into the inputs (the ownership tag excluded), and they pass Check.
func TestWorkerImportReadsSettings(t *testing.T) {
	h := providertest.NewHarness(t)
	client := emuClient(t, h)
	rate := 0.5
	_, err := client.UploadScript(t.Context(), cfapi.ScriptUpload{Name: "oi-elsewhere", MainModule: "index.js",
		Modules: []cfapi.Module{{Name: "index.js", Content: []byte(providertest.FixtureWorker)}},
		Tags:    []string{"team:web"},
		Config: cfapi.ScriptConfig{Observability: &cfapi.Observability{Enabled: true, HeadSamplingRate: &rate},
			Placement: &cfapi.Placement{Hostname: "api.example.com"}, Limits: &cfapi.Limits{CPUMs: 40},
			TailConsumers: []cfapi.TailConsumer{{Service: "oi-tail"}}, Logpush: true}})
	require.NoError(t, err)
	u := providertest.URN(cloudflare.WorkerToken, "imported")
	read, err := h.Server.Read(p.ReadRequest{ID: "oi-elsewhere", Urn: u})
	require.NoError(t, err)
	in := read.Inputs
	assert.Equal(t, 0.5, in.Get("observability").AsMap().Get("headSamplingRate").AsNumber())
	assert.Equal(t, "api.example.com", in.Get("placement").AsMap().Get("hostname").AsString())
	assert.Equal(t, 40.0, in.Get("limits").AsMap().Get("cpuMs").AsNumber())
	assert.Equal(t, "oi-tail", in.Get("tailConsumers").AsArray().AsSlice()[0].AsMap().Get("service").AsString())
	assert.True(t, in.Get("logpush").AsBool())
	assert.Equal(t, []string{"team:web"}, providertest.Strings(in.Get("tags")))
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: in.Set("content", property.New(providertest.FixtureWorker))})
	require.NoError(t, err)
	assert.Empty(t, check.Failures)
}
