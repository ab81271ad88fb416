package cloudflare_test

import (
	"bytes"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider"
	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

const (
	uploadKey     = "PUT /client/v4/accounts/{account_id}/workers/scripts/{script_name}"
	fixtureSecret = "s3cret-value-that-must-never-leak"
)

// targets creates one of each binding target directly through the client.
type targets struct {
	db, kv, bucket, queueID, queueName string
}

func newTargets(t testing.TB, h *providertest.Harness) (*cfapi.Client, targets) {
	t.Helper()
	client := emuClient(t, h)
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

func fullWorkerInputs(t *testing.T, tg targets, greeting string) property.Map {
	t.Helper()
	m := providertest.Props(t, map[string]any{
		"name":               "oi-control-plane-test",
		"content":            providertest.FixtureWorker,
		"compatibilityFlags": []any{"nodejs_compat"},
		"d1Databases":        providertest.List(map[string]any{"binding": "DB", "databaseId": tg.db}),
		"kvNamespaces":       providertest.List(map[string]any{"binding": "REPOS_CACHE", "namespaceId": tg.kv}),
		"r2Buckets":          providertest.List(map[string]any{"binding": "MEDIA_BUCKET", "bucketName": tg.bucket}),
		"queues":             providertest.List(map[string]any{"binding": "IMAGE_BUILD_FINALIZATION_QUEUE", "queueName": tg.queueName}),
		"durableObjects":     providertest.List(map[string]any{"binding": "SESSION", "className": "SessionDO"}),
		"vars":               map[string]any{"GREETING": greeting, "APP_NAME": "Open Inspect"},
		"crons":              []any{"* * * * *", "7,37 * * * *", "23 * * * *"},
		"queueConsumers": providertest.List(map[string]any{"queueId": tg.queueID, "deadLetterQueue": "oi-w-dlq",
			"maxBatchSize": 1.0, "maxWaitTimeMs": 1000.0, "maxConcurrency": 5.0, "maxRetries": 12.0, "retryDelaySeconds": 15.0}),
	})
	return m.Set("secrets", providertest.Value(t, map[string]any{"TOKEN_ENCRYPTION_KEY": fixtureSecret}).WithSecret(true))
}

func TestWorkerLifecycleWithEveryBinding(t *testing.T) {
	h := providertest.NewHarness(t)
	_, tg := newTargets(t, h)
	u := providertest.URN(cloudflare.WorkerToken, "cp")
	inputs := fullWorkerInputs(t, tg, "hello")

	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	h.Emu.ResetCounts()
	_, err = h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs, DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, map[string]int{
		"GET /client/v4/accounts/{account_id}/d1/database/{database_id}": 1,
		"GET /client/v4/accounts/{account_id}/queues/{queue_id}":         1,
	}, h.Emu.Counts(), "preview only reads that the bound database and the consumed queue exist")

	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	assert.Equal(t, "oi-control-plane-test", created.ID)
	assert.Equal(t, "v1", created.Properties.Get("migrationTag").AsString())
	assert.Equal(t, "https://oi-control-plane-test.openinspect-emulator.workers.dev", created.Properties.Get("url").AsString())
	assert.True(t, created.Properties.Get("secrets").Secret(), "secrets stay Pulumi secrets in state")
	assert.True(t, created.Properties.Get("secretsHash").Secret())
	assert.Equal(t, 1, h.Emu.Counts()[uploadKey])

	w, ok := h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-control-plane-test")
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
	inv := h.Emu.Inventory()
	for _, q := range inv.Queues {
		if q.Name == tg.queueName {
			assert.Equal(t, []string{"oi-control-plane-test"}, q.Consumers)
		}
	}

	// Unchanged inputs: no diff, no call, and an update would not upload.
	h.Emu.ResetCounts()
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges, "%v", diff.DetailedDiff)
	assert.Zero(t, h.Emu.CloudflareCalls())

	// One changed var: the diff names it, the update uploads once and touches nothing else.
	changed := checked(t, h, u, fullWorkerInputs(t, tg, "goodbye"))
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: changed})
	require.NoError(t, err)
	assert.Equal(t, map[string]p.PropertyDiff{
		`vars["GREETING"]`: {Kind: p.Update, InputDiff: true},
	}, diff.DetailedDiff)
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: changed})
	require.NoError(t, err)
	assert.Equal(t, 1, h.Emu.Counts()[uploadKey])
	assert.Equal(t, 1, h.Emu.CloudflareCalls(), "only the upload: %v", h.Emu.Counts())
	assert.NotEqual(t, created.Properties.Get("hash"), updated.Properties.Get("hash"))
	assert.Equal(t, "v1", updated.Properties.Get("migrationTag").AsString(), "no new migration without new classes")

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}))
	_, ok = h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-control-plane-test")
	assert.False(t, ok)
	for _, q := range h.Emu.Inventory().Queues {
		assert.Empty(t, q.Consumers)
	}
}

func TestWorkerDurableObjectMigrations(t *testing.T) {
	h := providertest.NewHarness(t)
	u := providertest.URN(cloudflare.WorkerToken, "w")
	base := map[string]any{"name": "oi-do", "content": providertest.FixtureWorker +
		"export class RoomDO { async fetch() { return new Response('room'); } }\n"}
	with := func(classes ...string) property.Map {
		m := map[string]any{}
		maps.Copy(m, base)
		var dos []any
		for _, c := range classes {
			dos = append(dos, map[string]any{"binding": c + "_NS", "className": c})
		}
		m["durableObjects"] = dos
		return providertest.Props(t, m)
	}
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: with("SessionDO")})
	require.NoError(t, err)
	assert.Equal(t, "v1", created.Properties.Get("migrationTag").AsString())

	added, err := h.Server.Update(p.UpdateRequest{ID: "oi-do", Urn: u, State: created.Properties, Inputs: with("SessionDO", "RoomDO")})
	require.NoError(t, err)
	assert.Equal(t, "v2", added.Properties.Get("migrationTag").AsString())
	w, _ := h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-do")
	assert.ElementsMatch(t, []string{"SessionDO", "RoomDO"}, w.Classes)

	removed, err := h.Server.Update(p.UpdateRequest{ID: "oi-do", Urn: u, State: added.Properties, Inputs: with("SessionDO")})
	require.NoError(t, err)
	assert.Equal(t, "v3", removed.Properties.Get("migrationTag").AsString())
	w, _ = h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-do")
	assert.Equal(t, []string{"SessionDO"}, w.Classes)
	assert.Equal(t, "v3", w.MigrationTag)
}

// A script whose tag moved on (deployed by another tool) is continued from its tag.
func TestWorkerMigrationTagRecovery(t *testing.T) {
	h := providertest.NewHarness(t)
	client, _ := newTargets(t, h)
	_, err := client.UploadScript(t.Context(), cfapi.ScriptUpload{
		Name: "oi-legacy", MainModule: "index.js", Modules: []cfapi.Module{{Name: "index.js", Content: []byte(providertest.FixtureWorker)}},
		Bindings:   []cfapi.Binding{{Type: "durable_object_namespace", Name: "SESSION", ClassName: "SessionDO"}},
		Migrations: &cfapi.Migration{NewTag: "legacy-7", NewSqliteClasses: []string{"SessionDO"}},
	})
	require.NoError(t, err)

	u := providertest.URN(cloudflare.WorkerToken, "w")
	inputs := providertest.Props(t, map[string]any{"name": "oi-legacy", "content": providertest.FixtureWorker, "adoptExisting": true,
		"durableObjects": providertest.List(map[string]any{"binding": "SESSION", "className": "SessionDO"})})
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	assert.True(t, created.Properties.Get("adopted").AsBool())
	w, _ := h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-legacy")
	assert.Equal(t, []string{"SessionDO"}, w.Classes)
	assert.Equal(t, w.MigrationTag, created.Properties.Get("migrationTag").AsString())

	// State that lost the tag (e.g. restored from an old backup) hits 10079 and recovers.
	stale := created.Properties.Set("migrationTag", property.New("")).Set("durableObjectClasses", property.New([]property.Value{}))
	stale = stale.Set("hash", property.New("stale"))
	_, err = h.Server.Update(p.UpdateRequest{ID: "oi-legacy", Urn: u, State: stale, Inputs: inputs})
	require.NoError(t, err)
}

// Two workers that bind each other converge when created concurrently, as
// the engine creates independent resources.
func TestWorkerCircularServiceBindings(t *testing.T) {
	h := providertest.NewHarness(t, provider.WithWorker(&cloudflare.Worker{ServiceTargetPoll: 50 * time.Millisecond}))
	pair := map[string]string{"oi-cp": "oi-bot", "oi-bot": "oi-cp"}
	var wg sync.WaitGroup
	errs := map[string]error{}
	var mu sync.Mutex
	for name, target := range pair {
		wg.Go(func() {
			_, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.WorkerToken, name), Properties: providertest.Props(t, map[string]any{
				"name": name, "content": providertest.FixtureWorker,
				"services": providertest.List(map[string]any{"binding": "PEER", "service": target}),
			})})
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	for name, err := range errs {
		require.NoError(t, err, name)
		w, ok := h.Emu.Workers().Worker(emulator.DefaultAccountID, name)
		require.True(t, ok)
		require.Len(t, w.Bindings, 1, "%s ends with its service binding", name)
		assert.Equal(t, pair[name], w.Bindings[0].Service)
	}
}

func TestWorkerCheckNamesFieldsBeforeAnyCall(t *testing.T) {
	h := providertest.NewHarness(t)
	check, err := h.Server.Check(p.CheckRequest{Urn: providertest.URN(cloudflare.WorkerToken, "w"), Inputs: providertest.Props(t, map[string]any{
		"name":              "Bad Name",
		"content":           "",
		"vars":              map[string]any{"DB": "x"},
		"d1Databases":       providertest.List(map[string]any{"binding": "DB", "databaseId": "id"}),
		"crons":             []any{"* * * * *", "61 * * * *"},
		"compatibilityDate": "yesterday",
		"queueConsumers":    providertest.List(map[string]any{"queueId": "q", "maxBatchSize": 500.0}),
	})})
	require.NoError(t, err)
	reasons := family.ProblemsByField(check.Failures)
	assert.Contains(t, reasons["name"], "Bad Name")
	assert.Contains(t, reasons["content"], "no code")
	assert.Contains(t, reasons["vars.DB"], "d1Databases[0].binding")
	assert.Contains(t, reasons["crons[1]"], "61")
	assert.Contains(t, reasons["compatibilityDate"], "yesterday")
	assert.Contains(t, reasons["queueConsumers[0].maxBatchSize"], "500")
	assert.Zero(t, h.Emu.CloudflareCalls())
}

// An API error on an upload carrying secrets never repeats their values.
func TestWorkerErrorsNeverCarrySecrets(t *testing.T) {
	h := providertest.NewHarness(t)
	inputs := providertest.Props(t, map[string]any{"name": "oi-leak", "content": providertest.FixtureWorker,
		"kvNamespaces": providertest.List(map[string]any{"binding": "KV", "namespaceId": "00000000000000000000000000000000"})})
	_, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.WorkerToken, "w"),
		Properties: inputs.Set("secrets", providertest.Value(t, map[string]any{"KEY": fixtureSecret}).WithSecret(true))})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "10041")
	assert.NotContains(t, err.Error(), fixtureSecret)
}

func TestWorkerRefreshNoticesOutOfBandChange(t *testing.T) {
	h := providertest.NewHarness(t)
	client, _ := newTargets(t, h)
	u := providertest.URN(cloudflare.WorkerToken, "w")
	inputs := providertest.Props(t, map[string]any{"name": "oi-drift", "content": providertest.FixtureWorker})
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)

	_, err = client.UploadScript(t.Context(), cfapi.ScriptUpload{Name: "oi-drift", MainModule: "index.js",
		Modules: []cfapi.Module{{Name: "index.js", Content: []byte("export default { fetch() { return new Response('hacked') } }")}}})
	require.NoError(t, err)

	read, err := h.Server.Read(p.ReadRequest{ID: "oi-drift", Urn: u, Properties: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	diff, err := h.Server.Diff(p.DiffRequest{ID: "oi-drift", Urn: u, State: read.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.True(t, diff.HasChanges, "refresh must surface the out-of-band upload")
	h.Emu.ResetCounts()
	_, err = h.Server.Update(p.UpdateRequest{ID: "oi-drift", Urn: u, State: read.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.Equal(t, 1, h.Emu.Counts()[uploadKey], "the next up restores the program's code")
}

// A worker whose service target never appears is kept in state (uploaded
// without the binding); once the target exists, the next update adds it.
// While it waits for a target no worker of the program is named, it says so
// at once, not only when the wait ends.
func TestWorkerMissingServiceTargetIsFinishedLater(t *testing.T) {
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	h := providertest.NewHarness(t, provider.WithWorker(&cloudflare.Worker{
		ServiceTargetWait: 200 * time.Millisecond, ServiceTargetPoll: 20 * time.Millisecond}))
	u := providertest.URN(cloudflare.WorkerToken, "w")
	inputs := providertest.Props(t, map[string]any{"name": "oi-lonely", "content": providertest.FixtureWorker,
		"services": providertest.List(map[string]any{"binding": "GHOST", "service": "oi-ghost"})})
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "oi-ghost")
	assert.Contains(t, logs.String(), "worker oi-lonely: no worker of this program is named oi-ghost; "+
		"unless something else creates it, this up fails in 200ms")
	require.Equal(t, "oi-lonely", created.ID)
	w, ok := h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-lonely")
	require.True(t, ok, "the worker exists, without the binding")
	assert.Empty(t, w.Bindings)

	_, err = h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.WorkerToken, "ghost"), Properties: providertest.Props(t, map[string]any{"name": "oi-ghost", "content": providertest.FixtureWorker})})
	require.NoError(t, err)
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	require.True(t, diff.HasChanges)
	assert.NotContains(t, diff.DetailedDiff, "name", "never a replacement")
	_, err = h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	w, _ = h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-lonely")
	require.Len(t, w.Bindings, 1)
	assert.Equal(t, "oi-ghost", w.Bindings[0].Service)
}

// Once a step of the run fails, the engine starts no further step: a worker
// waiting for a target this program plans, whose create has not started,
// stops waiting at once, saying why, while one waiting for a target nothing
// here plans (another program may make it) waits to its deadline.
func TestWorkerStopsWaitingForWhatAFailedRunWillNotCreate(t *testing.T) {
	h := providertest.NewHarness(t, provider.WithWorker(&cloudflare.Worker{
		ServiceTargetWait: 2 * time.Second, ServiceTargetPoll: 20 * time.Millisecond}))
	cloudflare.PlanScripts("oi-planned-never-made")
	waiter := func(name, target string) (p.CreateResponse, error) {
		return h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.WorkerToken, name),
			Properties: providertest.Props(t, map[string]any{"name": name, "content": providertest.FixtureWorker,
				"services": providertest.List(map[string]any{"binding": "TARGET", "service": target})})})
	}
	done := make(chan error, 1)
	go func() {
		_, err := waiter("oi-waits-for-planned", "oi-planned-never-made")
		done <- err
	}()
	require.Eventually(t, func() bool {
		_, ok := h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-waits-for-planned")
		return ok
	}, 10*time.Second, 10*time.Millisecond, "the waiter uploads without its binding, then waits")

	// Another resource of the run fails: here, a lock whose zone the account lacks.
	_, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN("openinspect:index:NameLock", "names"),
		Properties: providertest.Props(t, map[string]any{"namePrefix": "oi", "deploymentName": "x",
			"hostnames": providertest.List(map[string]any{"field": "web.customDomain", "hostname": "a.example.com",
				"zoneId": "0123456789abcdef0123456789abcdef"})})})
	require.Error(t, err)

	err = <-done
	require.Error(t, err)
	assert.Contains(t, err.Error(), "oi-planned-never-made are this program's, and this up will not create them")
	assert.NotContains(t, err.Error(), "did not appear within", "it stopped when the run failed, not at its deadline")

	_, err = waiter("oi-waits-for-elsewhere", "oi-made-elsewhere")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the target workers oi-made-elsewhere did not appear within 2s",
		"a target nothing here plans may still come from another program")
}

// pulumi import reads what the API tells about a script: its bindings, vars
// and migration tag (code and secret values are write-only).
func TestWorkerImportByName(t *testing.T) {
	h := providertest.NewHarness(t)
	client, tg := newTargets(t, h)
	text := "v"
	_, err := client.UploadScript(t.Context(), cfapi.ScriptUpload{
		Name: "oi-imported", MainModule: "index.js", Modules: []cfapi.Module{{Name: "index.js", Content: []byte(providertest.FixtureWorker)}},
		Bindings: []cfapi.Binding{
			{Type: "d1", Name: "DB", ID: tg.db},
			{Type: "plain_text", Name: "MODE", Text: &text},
			{Type: "durable_object_namespace", Name: "SESSION", ClassName: "SessionDO"},
		},
		Migrations: &cfapi.Migration{NewTag: "v4", NewSqliteClasses: []string{"SessionDO"}},
	})
	require.NoError(t, err)

	read, err := h.Server.Read(p.ReadRequest{ID: "oi-imported", Urn: providertest.URN(cloudflare.WorkerToken, "w")})
	require.NoError(t, err)
	assert.Equal(t, "oi-imported", read.ID)
	assert.Equal(t, "oi-imported", read.Inputs.Get("name").AsString())
	assert.Equal(t, "v", read.Inputs.Get("vars").AsMap().Get("MODE").AsString())
	d1 := read.Inputs.Get("d1Databases").AsArray().AsSlice()
	require.Len(t, d1, 1)
	assert.Equal(t, tg.db, d1[0].AsMap().Get("databaseId").AsString())
	assert.Equal(t, "v4", read.Properties.Get("migrationTag").AsString())
	assert.Equal(t, []string{"SessionDO"}, providertest.Strings(read.Properties.Get("durableObjectClasses")))
}

// The detailed diff names each var, secret, binding and cron that moved, by
// name, and only inputs: whether an update uploads is the log line's to say
// (TestWorkerDiffSaysWhetherItUploads).
func TestWorkerDetailedDiffNamesEachChange(t *testing.T) {
	h := providertest.NewHarness(t)
	_, tg := newTargets(t, h)
	u := providertest.URN(cloudflare.WorkerToken, "cp")
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: checked(t, h, u, fullWorkerInputs(t, tg, "hello"))})
	require.NoError(t, err)
	diff := func(edit func(m property.Map) property.Map) map[string]p.PropertyDiff {
		t.Helper()
		h.Emu.ResetCounts()
		d, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties,
			Inputs: checked(t, h, u, edit(fullWorkerInputs(t, tg, "hello")))})
		require.NoError(t, err)
		assert.Zero(t, h.Emu.CloudflareCalls(), "a diff makes no call")
		return d.DetailedDiff
	}
	assert.Equal(t, map[string]p.PropertyDiff{
		`vars["LOG_LEVEL"]`: {Kind: p.Add, InputDiff: true},
	}, diff(func(m property.Map) property.Map {
		return m.Set("vars", providertest.Value(t, map[string]any{"GREETING": "hello", "APP_NAME": "Open Inspect", "LOG_LEVEL": "debug"}))
	}), "a var added")
	assert.Equal(t, map[string]p.PropertyDiff{
		`secrets["TOKEN_ENCRYPTION_KEY"]`: {Kind: p.Update, InputDiff: true},
	}, diff(func(m property.Map) property.Map {
		return m.Set("secrets", providertest.Value(t, map[string]any{"TOKEN_ENCRYPTION_KEY": "rotated-value"}).WithSecret(true))
	}), "a secret rotated: named, its value never")
	assert.Equal(t, map[string]p.PropertyDiff{
		"d1Databases[0]": {Kind: p.Update, InputDiff: true},
	}, diff(func(m property.Map) property.Map {
		return m.Set("d1Databases", providertest.Value(t, providertest.List(map[string]any{"binding": "DB", "databaseId": "another-db"})))
	}), "a binding retargeted")
	assert.Equal(t, map[string]p.PropertyDiff{
		"crons[2]":   {Kind: p.Update, InputDiff: true},
		"workersDev": {Kind: p.Update, InputDiff: true},
	}, diff(func(m property.Map) property.Map {
		return m.Set("crons", providertest.Value(t, []any{"* * * * *", "7,37 * * * *", "*/30 * * * *"})).
			Set("workersDev", property.New(false))
	}), "crons and workers.dev alone: no upload")
}
