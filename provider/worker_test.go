package provider

import (
	"sync"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

const (
	uploadKey     = "PUT /client/v4/accounts/{account_id}/workers/scripts/{script_name}"
	fixtureWorker = "export class SessionDO { async fetch() { return new Response('do'); } }\n" +
		"export default { async fetch() { return new Response('ok'); } };\n"
	fixtureSecret = "s3cret-value-that-must-never-leak"
)

// targets creates one of each binding target directly through the client.
type targets struct {
	db, kv, bucket, queueID, queueName string
}

func newTargets(t *testing.T, h *harness) (*cloudflare.Client, targets) {
	t.Helper()
	client, err := cloudflare.New(cloudflare.Options{APIToken: emulator.DefaultToken,
		AccountID: emulator.DefaultAccountID, BaseURL: h.emu.CloudflareBaseURL()})
	require.NoError(t, err)
	ctx := t.Context()
	db, err := client.CreateDatabase(ctx, "oi-w-db", "")
	require.NoError(t, err)
	ns, err := client.CreateNamespace(ctx, "oi-w-kv")
	require.NoError(t, err)
	b, err := client.CreateBucket(ctx, "oi-w-media", "", "")
	require.NoError(t, err)
	q, err := client.CreateQueue(ctx, "oi-w-queue")
	require.NoError(t, err)
	_, err = client.CreateQueue(ctx, "oi-w-dlq")
	require.NoError(t, err)
	return client, targets{db: db.ID, kv: ns.ID, bucket: b.Name, queueID: q.ID, queueName: q.Name}
}

func list(items ...map[string]any) []any {
	out := make([]any, len(items))
	for i, m := range items {
		out[i] = m
	}
	return out
}

func fullWorkerInputs(t *testing.T, tg targets, greeting string) property.Map {
	t.Helper()
	m := props(t, map[string]any{
		"name":               "oi-control-plane-test",
		"content":            fixtureWorker,
		"compatibilityFlags": []any{"nodejs_compat"},
		"d1Databases":        list(map[string]any{"binding": "DB", "databaseId": tg.db}),
		"kvNamespaces":       list(map[string]any{"binding": "REPOS_CACHE", "namespaceId": tg.kv}),
		"r2Buckets":          list(map[string]any{"binding": "MEDIA_BUCKET", "bucketName": tg.bucket}),
		"queues":             list(map[string]any{"binding": "IMAGE_BUILD_FINALIZATION_QUEUE", "queueName": tg.queueName}),
		"durableObjects":     list(map[string]any{"binding": "SESSION", "className": "SessionDO"}),
		"vars":               map[string]any{"GREETING": greeting, "APP_NAME": "Open Inspect"},
		"crons":              []any{"* * * * *", "7,37 * * * *", "23 * * * *"},
		"queueConsumers": list(map[string]any{"queueId": tg.queueID, "deadLetterQueue": "oi-w-dlq",
			"maxBatchSize": 1.0, "maxWaitTimeMs": 1000.0, "maxConcurrency": 5.0, "maxRetries": 12.0, "retryDelaySeconds": 15.0}),
	})
	return m.Set("secrets", toValue(t, map[string]any{"TOKEN_ENCRYPTION_KEY": fixtureSecret}).WithSecret(true))
}

func TestWorkerLifecycleWithEveryBinding(t *testing.T) {
	h := newHarness(t)
	_, tg := newTargets(t, h)
	u := urn(workerToken, "cp")
	inputs := fullWorkerInputs(t, tg, "hello")

	check, err := h.server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	h.emu.ResetCounts()
	_, err = h.server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs, DryRun: true})
	require.NoError(t, err)
	assert.Zero(t, h.emu.CloudflareCalls(), "preview makes no call")

	created, err := h.server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	assert.Equal(t, "oi-control-plane-test", created.ID)
	assert.Equal(t, "v1", created.Properties.Get("migrationTag").AsString())
	assert.Equal(t, "https://oi-control-plane-test.openinspect-emulator.workers.dev", created.Properties.Get("url").AsString())
	assert.True(t, created.Properties.Get("secrets").Secret(), "secrets stay Pulumi secrets in state")
	assert.True(t, created.Properties.Get("secretsHash").Secret())
	assert.Equal(t, 1, h.emu.Counts()[uploadKey])

	w, ok := h.emu.Worker(emulator.DefaultAccountID, "oi-control-plane-test")
	require.True(t, ok)
	assert.Equal(t, []string{"SessionDO"}, w.Classes)
	assert.ElementsMatch(t, []string{"* * * * *", "7,37 * * * *", "23 * * * *"}, w.Crons)
	assert.True(t, w.WorkersDev)
	types := map[string]string{}
	for _, b := range w.Bindings {
		types[b.Name] = b.Type
	}
	assert.Equal(t, map[string]string{
		"DB": "d1", "REPOS_CACHE": "kv_namespace", "MEDIA_BUCKET": "r2_bucket", "IMAGE_BUILD_FINALIZATION_QUEUE": "queue",
		"SESSION": "durable_object_namespace", "GREETING": "plain_text", "APP_NAME": "plain_text", "TOKEN_ENCRYPTION_KEY": "secret_text",
	}, types)
	inv := h.emu.Inventory()
	for _, q := range inv.Queues {
		if q.Name == tg.queueName {
			assert.Equal(t, []string{"oi-control-plane-test"}, q.Consumers)
		}
	}

	// Unchanged inputs: no diff, no call, and an update would not upload.
	h.emu.ResetCounts()
	diff, err := h.server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges, "%v", diff.DetailedDiff)
	assert.Zero(t, h.emu.CloudflareCalls())

	// One changed var: the diff names it, the update uploads once and touches nothing else.
	changed := fullWorkerInputs(t, tg, "goodbye")
	diff, err = h.server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: changed})
	require.NoError(t, err)
	assert.Contains(t, diff.DetailedDiff, "vars")
	assert.NotContains(t, diff.DetailedDiff, "crons")
	updated, err := h.server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: changed})
	require.NoError(t, err)
	assert.Equal(t, 1, h.emu.Counts()[uploadKey])
	assert.Equal(t, 1, h.emu.CloudflareCalls(), "only the upload: %v", h.emu.Counts())
	assert.NotEqual(t, created.Properties.Get("hash"), updated.Properties.Get("hash"))
	assert.Equal(t, "v1", updated.Properties.Get("migrationTag").AsString(), "no new migration without new classes")

	require.NoError(t, h.server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}))
	_, ok = h.emu.Worker(emulator.DefaultAccountID, "oi-control-plane-test")
	assert.False(t, ok)
	for _, q := range h.emu.Inventory().Queues {
		assert.Empty(t, q.Consumers)
	}
}

func TestWorkerDurableObjectMigrations(t *testing.T) {
	h := newHarness(t)
	u := urn(workerToken, "w")
	base := map[string]any{"name": "oi-do", "content": fixtureWorker +
		"export class RoomDO { async fetch() { return new Response('room'); } }\n"}
	with := func(classes ...string) property.Map {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		var dos []any
		for _, c := range classes {
			dos = append(dos, map[string]any{"binding": c + "_NS", "className": c})
		}
		m["durableObjects"] = dos
		return props(t, m)
	}
	created, err := h.server.Create(p.CreateRequest{Urn: u, Properties: with("SessionDO")})
	require.NoError(t, err)
	assert.Equal(t, "v1", created.Properties.Get("migrationTag").AsString())

	added, err := h.server.Update(p.UpdateRequest{ID: "oi-do", Urn: u, State: created.Properties, Inputs: with("SessionDO", "RoomDO")})
	require.NoError(t, err)
	assert.Equal(t, "v2", added.Properties.Get("migrationTag").AsString())
	w, _ := h.emu.Worker(emulator.DefaultAccountID, "oi-do")
	assert.ElementsMatch(t, []string{"SessionDO", "RoomDO"}, w.Classes)

	removed, err := h.server.Update(p.UpdateRequest{ID: "oi-do", Urn: u, State: added.Properties, Inputs: with("SessionDO")})
	require.NoError(t, err)
	assert.Equal(t, "v3", removed.Properties.Get("migrationTag").AsString())
	w, _ = h.emu.Worker(emulator.DefaultAccountID, "oi-do")
	assert.Equal(t, []string{"SessionDO"}, w.Classes)
	assert.Equal(t, "v3", w.MigrationTag)
}

// A script whose tag moved on (deployed by another tool) is continued from its tag.
func TestWorkerMigrationTagRecovery(t *testing.T) {
	h := newHarness(t)
	client, _ := newTargets(t, h)
	_, err := client.UploadScript(t.Context(), cloudflare.ScriptUpload{
		Name: "oi-legacy", MainModule: "index.js", Modules: []cloudflare.Module{{Name: "index.js", Content: []byte(fixtureWorker)}},
		Bindings:   []cloudflare.Binding{{Type: "durable_object_namespace", Name: "SESSION", ClassName: "SessionDO"}},
		Migrations: &cloudflare.Migration{NewTag: "legacy-7", NewSqliteClasses: []string{"SessionDO"}},
	})
	require.NoError(t, err)

	u := urn(workerToken, "w")
	inputs := props(t, map[string]any{"name": "oi-legacy", "content": fixtureWorker, "adoptExisting": true,
		"durableObjects": list(map[string]any{"binding": "SESSION", "className": "SessionDO"})})
	created, err := h.server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	assert.True(t, created.Properties.Get("adopted").AsBool())
	w, _ := h.emu.Worker(emulator.DefaultAccountID, "oi-legacy")
	assert.Equal(t, []string{"SessionDO"}, w.Classes)
	assert.Equal(t, w.MigrationTag, created.Properties.Get("migrationTag").AsString())

	// State that lost the tag (e.g. restored from an old backup) hits 10079 and recovers.
	stale := created.Properties.Set("migrationTag", property.New("")).Set("durableObjectClasses", property.New([]property.Value{}))
	stale = stale.Set("hash", property.New("stale"))
	_, err = h.server.Update(p.UpdateRequest{ID: "oi-legacy", Urn: u, State: stale, Inputs: inputs})
	require.NoError(t, err)
}

// Two workers that bind each other converge when created concurrently, as
// the engine creates independent resources.
func TestWorkerCircularServiceBindings(t *testing.T) {
	h := newHarness(t)
	serviceTargetPoll = 50 * time.Millisecond
	t.Cleanup(func() { serviceTargetPoll = time.Second })
	pair := map[string]string{"oi-cp": "oi-bot", "oi-bot": "oi-cp"}
	var wg sync.WaitGroup
	errs := map[string]error{}
	var mu sync.Mutex
	for name, target := range pair {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.server.Create(p.CreateRequest{Urn: urn(workerToken, name), Properties: props(t, map[string]any{
				"name": name, "content": fixtureWorker,
				"services": list(map[string]any{"binding": "PEER", "service": target}),
			})})
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	for name, err := range errs {
		require.NoError(t, err, name)
		w, ok := h.emu.Worker(emulator.DefaultAccountID, name)
		require.True(t, ok)
		require.Len(t, w.Bindings, 1, "%s ends with its service binding", name)
		assert.Equal(t, pair[name], w.Bindings[0].Service)
	}
}

func TestWorkerCheckNamesFieldsBeforeAnyCall(t *testing.T) {
	h := newHarness(t)
	check, err := h.server.Check(p.CheckRequest{Urn: urn(workerToken, "w"), Inputs: props(t, map[string]any{
		"name":              "Bad Name",
		"content":           "",
		"vars":              map[string]any{"DB": "x"},
		"d1Databases":       list(map[string]any{"binding": "DB", "databaseId": "id"}),
		"crons":             []any{"* * * * *", "61 * * * *"},
		"compatibilityDate": "yesterday",
		"queueConsumers":    list(map[string]any{"queueId": "q", "maxBatchSize": 500.0}),
	})})
	require.NoError(t, err)
	reasons := map[string]string{}
	for _, f := range check.Failures {
		reasons[f.Property] = f.Reason
	}
	assert.Contains(t, reasons["name"], "Bad Name")
	assert.Contains(t, reasons["content"], "no code")
	assert.Contains(t, reasons["vars.DB"], "d1Databases[0].binding")
	assert.Contains(t, reasons["crons[1]"], "61")
	assert.Contains(t, reasons["compatibilityDate"], "yesterday")
	assert.Contains(t, reasons["queueConsumers[0].maxBatchSize"], "500")
	assert.Zero(t, h.emu.CloudflareCalls())
}

// An API error on an upload carrying secrets never repeats their values.
func TestWorkerErrorsNeverCarrySecrets(t *testing.T) {
	h := newHarness(t)
	inputs := props(t, map[string]any{"name": "oi-leak", "content": fixtureWorker,
		"kvNamespaces": list(map[string]any{"binding": "KV", "namespaceId": "00000000000000000000000000000000"})})
	_, err := h.server.Create(p.CreateRequest{Urn: urn(workerToken, "w"),
		Properties: inputs.Set("secrets", toValue(t, map[string]any{"KEY": fixtureSecret}).WithSecret(true))})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "10041")
	assert.NotContains(t, err.Error(), fixtureSecret)
}

func TestWorkerRefreshNoticesOutOfBandChange(t *testing.T) {
	h := newHarness(t)
	client, _ := newTargets(t, h)
	u := urn(workerToken, "w")
	inputs := props(t, map[string]any{"name": "oi-drift", "content": fixtureWorker})
	created, err := h.server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)

	_, err = client.UploadScript(t.Context(), cloudflare.ScriptUpload{Name: "oi-drift", MainModule: "index.js",
		Modules: []cloudflare.Module{{Name: "index.js", Content: []byte("export default { fetch() { return new Response('hacked') } }")}}})
	require.NoError(t, err)

	read, err := h.server.Read(p.ReadRequest{ID: "oi-drift", Urn: u, Properties: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	diff, err := h.server.Diff(p.DiffRequest{ID: "oi-drift", Urn: u, State: read.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.True(t, diff.HasChanges, "refresh must surface the out-of-band upload")
	h.emu.ResetCounts()
	_, err = h.server.Update(p.UpdateRequest{ID: "oi-drift", Urn: u, State: read.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.Equal(t, 1, h.emu.Counts()[uploadKey], "the next up restores the program's code")
}

// A worker whose service target never appears is kept in state (uploaded
// without the binding); once the target exists, the next update adds it.
func TestWorkerMissingServiceTargetIsFinishedLater(t *testing.T) {
	h := newHarness(t)
	serviceTargetWait, serviceTargetPoll = 200*time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { serviceTargetWait, serviceTargetPoll = 3*time.Minute, time.Second })
	u := urn(workerToken, "w")
	inputs := props(t, map[string]any{"name": "oi-lonely", "content": fixtureWorker,
		"services": list(map[string]any{"binding": "GHOST", "service": "oi-ghost"})})
	created, err := h.server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "oi-ghost")
	require.Equal(t, "oi-lonely", created.ID)
	w, ok := h.emu.Worker(emulator.DefaultAccountID, "oi-lonely")
	require.True(t, ok, "the worker exists, without the binding")
	assert.Empty(t, w.Bindings)

	_, err = h.server.Create(p.CreateRequest{Urn: urn(workerToken, "ghost"), Properties: props(t, map[string]any{"name": "oi-ghost", "content": fixtureWorker})})
	require.NoError(t, err)
	diff, err := h.server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	require.True(t, diff.HasChanges)
	assert.NotContains(t, diff.DetailedDiff, "name", "never a replacement")
	_, err = h.server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	w, _ = h.emu.Worker(emulator.DefaultAccountID, "oi-lonely")
	require.Len(t, w.Bindings, 1)
	assert.Equal(t, "oi-ghost", w.Bindings[0].Service)
}

// pulumi import reads what the API tells about a script: its bindings, vars
// and migration tag (code and secret values are write-only).
func TestWorkerImportByName(t *testing.T) {
	h := newHarness(t)
	client, tg := newTargets(t, h)
	text := "v"
	_, err := client.UploadScript(t.Context(), cloudflare.ScriptUpload{
		Name: "oi-imported", MainModule: "index.js", Modules: []cloudflare.Module{{Name: "index.js", Content: []byte(fixtureWorker)}},
		Bindings: []cloudflare.Binding{
			{Type: "d1", Name: "DB", ID: tg.db},
			{Type: "plain_text", Name: "MODE", Text: &text},
			{Type: "durable_object_namespace", Name: "SESSION", ClassName: "SessionDO"},
		},
		Migrations: &cloudflare.Migration{NewTag: "v4", NewSqliteClasses: []string{"SessionDO"}},
	})
	require.NoError(t, err)

	read, err := h.server.Read(p.ReadRequest{ID: "oi-imported", Urn: urn(workerToken, "w")})
	require.NoError(t, err)
	assert.Equal(t, "oi-imported", read.ID)
	assert.Equal(t, "oi-imported", read.Inputs.Get("name").AsString())
	assert.Equal(t, "v", read.Inputs.Get("vars").AsMap().Get("MODE").AsString())
	d1 := read.Inputs.Get("d1Databases").AsArray().AsSlice()
	require.Len(t, d1, 1)
	assert.Equal(t, tg.db, d1[0].AsMap().Get("databaseId").AsString())
	assert.Equal(t, "v4", read.Properties.Get("migrationTag").AsString())
	assert.Equal(t, []string{"SessionDO"}, strs(read.Properties.Get("durableObjectClasses")))
}
