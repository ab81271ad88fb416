package emulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/kv"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/cloudflare/cloudflare-go/v4/queues"
	"github.com/cloudflare/cloudflare-go/v4/r2"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emuworkers "github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
)

// Counts keys of the Workers routes.
const (
	scriptUploadKey    = "PUT /client/v4/accounts/{account_id}/workers/scripts/{script_name}"
	scriptSettingsKey  = "GET /client/v4/accounts/{account_id}/workers/scripts/{script_name}/settings"
	scriptSchedulesKey = "PUT /client/v4/accounts/{account_id}/workers/scripts/{script_name}/schedules"
	scriptSubdomainKey = "POST /client/v4/accounts/{account_id}/workers/scripts/{script_name}/subdomain"
)

type M = map[string]any

// mod is one module part of an upload.
type mod struct{ name, contentType, body string }

// indexJS exports the Durable Object classes the tests declare: Cloudflare
// refuses a class the main module does not export (workers_limits_test.go).
var indexJS = mod{"index.js", "application/javascript+module",
	"export class Room {}\nexport class Lobby {}\nexport class Hall {}\nexport class Counter {}\n" +
		"export default { fetch() { return new Response('ok') } }"}

// meta is upload metadata with index.js as main module and these bindings.
func meta(bindings ...M) M {
	if bindings == nil {
		bindings = []M{}
	}
	return M{"main_module": "index.js", "compatibility_date": "2025-01-01", "bindings": bindings}
}

// multipartBody builds a script upload the way the provider does: the
// metadata part first, then one part per module.
func multipartBody(t *testing.T, metadata M, mods ...mod) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	part := func(name, filename, contentType string, body []byte) {
		h := textproto.MIMEHeader{}
		d := fmt.Sprintf("form-data; name=%q", name)
		if filename != "" {
			d += fmt.Sprintf("; filename=%q", filename)
		}
		h.Set("Content-Disposition", d)
		h.Set("Content-Type", contentType)
		w, err := mw.CreatePart(h)
		require.NoError(t, err)
		_, err = w.Write(body)
		require.NoError(t, err)
	}
	if metadata != nil {
		b, err := json.Marshal(metadata)
		require.NoError(t, err)
		part("metadata", "", "application/json", b)
	}
	for _, m := range mods {
		part(m.name, m.name, m.contentType, []byte(m.body))
	}
	require.NoError(t, mw.Close())
	return mw.FormDataContentType(), buf.Bytes()
}

// upload sends a script through the SDK's Scripts.Update with a hand-built
// multipart body; no modules means index.js.
func upload(t *testing.T, c *cloudflare.Client, name string, metadata M, mods ...mod) (*workers.ScriptUpdateResponse, error) {
	t.Helper()
	if mods == nil {
		mods = []mod{indexJS}
	}
	ct, body := multipartBody(t, metadata, mods...)
	return c.Workers.Scripts.Update(context.Background(), name, workers.ScriptUpdateParams{AccountID: cloudflare.F(acct)},
		option.WithRequestBody(ct, body))
}

func mustUpload(t *testing.T, c *cloudflare.Client, name string, metadata M, mods ...mod) *workers.ScriptUpdateResponse {
	t.Helper()
	res, err := upload(t, c, name, metadata, mods...)
	require.NoError(t, err)
	return res
}

func createQueue(t *testing.T, c *cloudflare.Client, name string) *queues.Queue {
	t.Helper()
	q, err := c.Queues.New(context.Background(), queues.QueueNewParams{AccountID: cloudflare.F(acct), QueueName: cloudflare.F(name)})
	require.NoError(t, err)
	return q
}

func settingsJSON(t *testing.T, c *cloudflare.Client, name string) M {
	t.Helper()
	res, err := c.Workers.Scripts.ScriptAndVersionSettings.Get(context.Background(), name,
		workers.ScriptScriptAndVersionSettingGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	var out M
	require.NoError(t, json.Unmarshal([]byte(res.JSON.RawJSON()), &out))
	return out
}

func TestWorkerUploadWithEveryBindingType(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()

	db := createDB(t, c, "app-db")
	ns, err := c.KV.Namespaces.New(ctx, kv.NamespaceNewParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("cache")})
	require.NoError(t, err)
	_, err = c.R2.Buckets.New(ctx, r2.BucketNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("blobs")})
	require.NoError(t, err)
	createQueue(t, c, "jobs")

	// A helper script declaring a Durable Object class other scripts use.
	helper := meta()
	helper["migrations"] = M{"new_tag": "h1", "new_sqlite_classes": []string{"Counter"}}
	mustUpload(t, c, "helper", helper)

	const secret = "s3cr3t-value-never-over-http"
	m := meta(
		M{"type": "d1", "name": "DB", "id": db.UUID},
		M{"type": "kv_namespace", "name": "CACHE", "namespace_id": ns.ID},
		M{"type": "r2_bucket", "name": "BLOBS", "bucket_name": "blobs"},
		M{"type": "queue", "name": "JOBS", "queue_name": "jobs"},
		M{"type": "service", "name": "HELPER", "service": "helper", "environment": "production"},
		M{"type": "service", "name": "SELF", "service": "app"},
		M{"type": "durable_object_namespace", "name": "ROOMS", "class_name": "Room"},
		M{"type": "durable_object_namespace", "name": "COUNTERS", "class_name": "Counter", "script_name": "helper"},
		M{"type": "plain_text", "name": "MODE", "text": "production"},
		M{"type": "plain_text", "name": "EMPTY", "text": ""},
		M{"type": "secret_text", "name": "TOKEN", "text": secret},
	)
	m["compatibility_flags"] = []string{"nodejs_compat"}
	m["migrations"] = M{"new_tag": "v1", "new_sqlite_classes": []string{"Room"}}
	lib := mod{"lib/util.js", "application/javascript+module", "export const x = 1"}
	res := mustUpload(t, c, "app", m, indexJS, lib)
	assert.Equal(t, "app", res.ID)
	assert.Regexp(t, `^[0-9a-f]{64}$`, res.Etag)
	assert.True(t, res.HasModules)
	assert.False(t, res.HasAssets)
	assert.EqualValues(t, 1, res.StartupTimeMs)
	assert.False(t, res.CreatedOn.IsZero())
	assert.Equal(t, res.CreatedOn, res.ModifiedOn)
	assert.Contains(t, res.JSON.RawJSON(), `"tail_consumers":[]`)
	assert.NotContains(t, res.JSON.RawJSON(), secret)

	d, ok := s.Workers().Worker(acct, "app")
	require.True(t, ok)
	assert.Equal(t, "index.js", d.MainModule)
	assert.Equal(t, map[string]string{"index.js": indexJS.body, "lib/util.js": "export const x = 1"}, d.Modules)
	assert.Equal(t, "2025-01-01", d.CompatibilityDate)
	assert.Equal(t, []string{"nodejs_compat"}, d.CompatibilityFlags)
	assert.Equal(t, map[string]string{"TOKEN": secret}, d.Secrets)
	assert.Equal(t, map[string]string{"MODE": "production", "EMPTY": ""}, d.Vars)
	assert.Equal(t, "v1", d.MigrationTag)
	assert.Equal(t, []string{"Room"}, d.Classes)
	assert.Equal(t, res.Etag, d.Etag)
	assert.Equal(t, 1, d.Uploads)
	require.Len(t, d.Bindings, 11)
	assert.Equal(t, emuworkers.WorkerBinding{Type: "d1", Name: "DB", ID: db.UUID, Raw: json.RawMessage(`{"database_id":"` + db.UUID + `","id":"` + db.UUID + `","name":"DB","type":"d1"}`)}, d.Bindings[0])
	assert.Equal(t, "helper", d.Bindings[7].ScriptName)

	// Settings: every binding as uploaded, the secret without its text.
	set := settingsJSON(t, c, "app")
	raw, err := json.Marshal(set)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), secret)
	assert.Equal(t, "2025-01-01", set["compatibility_date"])
	assert.Equal(t, []any{"nodejs_compat"}, set["compatibility_flags"])
	assert.Equal(t, M{"new_tag": "v1"}, set["migrations"])
	assert.Equal(t, "standard", set["usage_model"])
	bindings := set["bindings"].([]any)
	require.Len(t, bindings, 11)
	assert.Equal(t, M{"type": "secret_text", "name": "TOKEN"}, bindings[10])
	assert.Equal(t, M{"type": "plain_text", "name": "MODE", "text": "production"}, bindings[8])
	assert.Equal(t, M{"type": "durable_object_namespace", "name": "COUNTERS", "class_name": "Counter", "script_name": "helper"}, bindings[7])
	// The raw HTTP answer, not just what the SDK kept, is free of the secret.
	_, body := do(t, http.MethodGet, s.CloudflareBaseURL()+"accounts/"+acct+"/workers/scripts/app/settings", "Bearer "+emulator.DefaultToken, "")
	assert.NotContains(t, body, secret)
	_, body = do(t, http.MethodGet, s.URL()+"/__emulator/inventory", "", "")
	assert.NotContains(t, body, secret)

	// Content is the main module, outside the envelope.
	content, err := c.Workers.Scripts.Get(ctx, "app", workers.ScriptGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Equal(t, indexJS.body, *content)

	list, err := c.Workers.Scripts.List(ctx, workers.ScriptListParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	require.Len(t, list.Result, 2)
	assert.Equal(t, "app", list.Result[0].ID)
	assert.Equal(t, res.Etag, list.Result[0].Etag)
	assert.Equal(t, "helper", list.Result[1].ID)
	assert.Contains(t, list.Result[0].JSON.RawJSON(), `"migration_tag":"v1"`)

	// The queue reports the script as its producer.
	qs, err := c.Queues.List(ctx, queues.QueueListParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	require.Len(t, qs.Result, 1)
	require.Len(t, qs.Result[0].Producers, 1)
	assert.Equal(t, "app", qs.Result[0].Producers[0].Script)

	inv := s.Inventory()
	require.Len(t, inv.Workers, 2)
	assert.Equal(t, emulator.WorkerEntry{AccountID: acct, Name: "app", Etag: res.Etag, MigrationTag: "v1",
		Classes: []string{"Room"}, Crons: []string{}, Bindings: 11}, inv.Workers[0])
	assert.Equal(t, []string{"Counter"}, inv.Workers[1].Classes)
	assert.Equal(t, 2, s.Counts()[scriptUploadKey])
	assert.Equal(t, 2, s.Counts()[scriptSettingsKey], "the SDK call and the raw GET")
}

func TestWorkerUploadRejectsMissingTargets(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	db := createDB(t, c, "real-db")
	mustUpload(t, c, "other", meta())

	cases := []struct {
		name    string
		binding M
		code    int
		message string
	}{
		{"d1", M{"type": "d1", "name": "DB", "id": "00000000-0000-4000-8000-000000000000"}, 10181, `"DB"`},
		{"d1 id that is not a database", M{"type": "d1", "name": "DB", "id": db.UUID + "x"}, 10181, `"DB"`},
		{"kv", M{"type": "kv_namespace", "name": "CACHE", "namespace_id": "0123456789abcdef0123456789abcdef"}, 10041, `"CACHE"`},
		{"r2", M{"type": "r2_bucket", "name": "BLOBS", "bucket_name": "nope"}, 10085, `'nope'`},
		{"queue", M{"type": "queue", "name": "JOBS", "queue_name": "nope"}, 11000, `"nope"`},
		{"service", M{"type": "service", "name": "SLACK_BOT", "service": "x"}, 10143,
			`workers.api.error.service_binding_error: could not resolve binding "SLACK_BOT": script "x" not found`},
		{"durable object class not declared", M{"type": "durable_object_namespace", "name": "ROOMS", "class_name": "Room"}, 10061, `"Room"`},
		{"durable object script missing", M{"type": "durable_object_namespace", "name": "ROOMS", "class_name": "Room", "script_name": "ghost"}, 10061, `"ghost"`},
		{"durable object class not in the other script", M{"type": "durable_object_namespace", "name": "ROOMS", "class_name": "Room", "script_name": "other"}, 10061, `"other"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := upload(t, c, "app", meta(M{"type": "plain_text", "name": "OK", "text": "fine"}, tc.binding))
			apiErr := requireAPIError(t, err, http.StatusBadRequest, tc.code)
			assert.Contains(t, apiErr.Errors[0].Message, tc.message)
		})
	}
	_, ok := s.Workers().Worker(acct, "app")
	assert.False(t, ok, "no failed upload stored anything")
	assert.Len(t, s.Inventory().Workers, 1)
}

func TestWorkerUploadValidation(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	noMain := meta()
	delete(noMain, "main_module")
	otherMain := meta()
	otherMain["main_module"] = "worker.js"
	cases := []struct {
		name    string
		script  string
		meta    M
		mods    []mod
		code    int
		message string
	}{
		{"no metadata", "app", nil, nil, 10021, "metadata"},
		{"no main_module", "app", noMain, nil, 10021, "main_module"},
		{"main_module not a part", "app", otherMain, nil, 10021, `"worker.js"`},
		{"empty main module", "app", meta(), []mod{{"index.js", "application/javascript+module", "  "}}, 10021, `"index.js" is empty`},
		{"unknown binding type", "app", meta(M{"type": "carrier_pigeon", "name": "BIRD"}), nil, 10021, "binding BIRD of type carrier_pigeon is invalid"},
		{"duplicate binding names", "app", meta(M{"type": "plain_text", "name": "A", "text": "1"}, M{"type": "plain_text", "name": "A", "text": "2"}), nil, 10021, "A"},
		{"secret without text", "app", meta(M{"type": "secret_text", "name": "TOKEN"}), nil, 10021, "TOKEN"},
		{"plain_text without text", "app", meta(M{"type": "plain_text", "name": "MODE"}), nil, 10021, "MODE"},
		{"d1 without id", "app", meta(M{"type": "d1", "name": "DB"}), nil, 10021, `"database_id"`},
		{"binding without name", "app", meta(M{"type": "plain_text", "text": "x"}), nil, 10021, "no name"},
		{"bad compatibility date", "app", M{"main_module": "index.js", "compatibility_date": "yesterday"}, nil, 10021, "yesterday"},
		{"upper-case script name", "App", meta(), nil, 10016, "invalid_script_name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := upload(t, c, tc.script, tc.meta, tc.mods...)
			apiErr := requireAPIError(t, err, http.StatusBadRequest, tc.code)
			assert.Contains(t, apiErr.Errors[0].Message, tc.message)
		})
	}
	// A JSON body (what Scripts.Update sends without a custom body).
	resp, body := do(t, http.MethodPut, s.CloudflareBaseURL()+"accounts/"+acct+"/workers/scripts/app",
		"Bearer "+emulator.DefaultToken, `{"metadata":{"main_module":"index.js"}}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body, `"code":10021`)
	assert.Empty(t, s.Inventory().Workers)
}

func TestWorkerDurableObjectMigrations(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	rooms := M{"type": "durable_object_namespace", "name": "ROOMS", "class_name": "Room"}
	withMigration := func(m M, migration M) M {
		m["migrations"] = migration
		return m
	}

	_, err := upload(t, c, "chat", meta(rooms))
	requireAPIError(t, err, http.StatusBadRequest, 10061)

	_, err = upload(t, c, "chat", withMigration(meta(rooms), M{"old_tag": "v0", "new_tag": "v1", "new_sqlite_classes": []string{"Room"}}))
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 10079)
	assert.Contains(t, apiErr.Errors[0].Message, `""`, "a new script has no tag")

	_, err = upload(t, c, "chat", withMigration(meta(rooms), M{"new_tag": "v1", "new_classes": []string{"Room"}}))
	apiErr = requireAPIError(t, err, http.StatusBadRequest, 10097)
	assert.Contains(t, apiErr.Errors[0].Message, "new_sqlite_classes")

	mustUpload(t, c, "chat", withMigration(meta(rooms), M{"new_tag": "v1", "new_sqlite_classes": []string{"Room"}}))
	d, _ := s.Workers().Worker(acct, "chat")
	assert.Equal(t, "v1", d.MigrationTag)
	assert.Equal(t, []string{"Room"}, d.Classes)

	// The tag is now a precondition.
	for _, mig := range []M{
		{"new_tag": "v2", "new_sqlite_classes": []string{"Lobby"}},
		{"old_tag": "v0", "new_tag": "v2", "new_sqlite_classes": []string{"Lobby"}},
	} {
		_, err = upload(t, c, "chat", withMigration(meta(rooms), mig))
		apiErr = requireAPIError(t, err, http.StatusBadRequest, 10079)
		assert.Contains(t, apiErr.Errors[0].Message, "v1")
	}
	_, err = upload(t, c, "chat", withMigration(meta(rooms), M{"old_tag": "v1", "new_tag": "v2", "new_sqlite_classes": []string{"Room"}}))
	requireAPIError(t, err, http.StatusBadRequest, 10074)
	_, err = upload(t, c, "chat", withMigration(meta(rooms), M{"old_tag": "v1", "new_tag": "v2", "deleted_classes": []string{"Ghost"}}))
	requireAPIError(t, err, http.StatusBadRequest, 10074)

	// Without migrations the classes and tag stay, so the binding still holds.
	mustUpload(t, c, "chat", meta(rooms))
	d, _ = s.Workers().Worker(acct, "chat")
	assert.Equal(t, "v1", d.MigrationTag)
	assert.Equal(t, []string{"Room"}, d.Classes)

	// Deleting a class that is still bound fails; without the binding it works.
	_, err = upload(t, c, "chat", withMigration(meta(rooms), M{"old_tag": "v1", "new_tag": "v2", "deleted_classes": []string{"Room"}}))
	apiErr = requireAPIError(t, err, http.StatusBadRequest, 10061)
	assert.Contains(t, apiErr.Errors[0].Message, "deletes")
	mustUpload(t, c, "chat", withMigration(meta(), M{"old_tag": "v1", "new_tag": "v2", "deleted_classes": []string{"Room"}}))
	d, _ = s.Workers().Worker(acct, "chat")
	assert.Equal(t, "v2", d.MigrationTag)
	assert.Empty(t, d.Classes)
	assert.Equal(t, 3, d.Uploads, "failed uploads are not counted")
	// The accepted uploads' migrations, for tests that check how a class
	// went: the refused ones left none.
	assert.Equal(t, []emuworkers.AppliedMigration{
		{Version: 1, NewTag: "v1", NewSqliteClasses: []string{"Room"}},
		{Version: 3, OldTag: "v1", NewTag: "v2", DeletedClasses: []string{"Room"}},
	}, d.Migrations)

	// Multi-step migrations apply in order.
	mustUpload(t, c, "chat", withMigration(meta(M{"type": "durable_object_namespace", "name": "L", "class_name": "Lobby"}),
		M{"old_tag": "v2", "new_tag": "v4", "steps": []M{
			{"new_sqlite_classes": []string{"Hall"}},
			{"renamed_classes": []M{{"from": "Hall", "to": "Lobby"}}},
		}}))
	d, _ = s.Workers().Worker(acct, "chat")
	assert.Equal(t, []string{"Lobby"}, d.Classes)
	assert.Equal(t, M{"new_tag": "v4"}, settingsJSON(t, c, "chat")["migrations"])
}

func TestWorkerServiceBindingsBothWays(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	toB := M{"type": "service", "name": "B", "service": "worker-b"}
	toA := M{"type": "service", "name": "A", "service": "worker-a"}

	_, err := upload(t, c, "worker-a", meta(toB))
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 10143)
	assert.Contains(t, apiErr.Errors[0].Message, `could not resolve binding "B": script "worker-b" not found`)
	mustUpload(t, c, "worker-a", meta())
	mustUpload(t, c, "worker-b", meta(toA))
	mustUpload(t, c, "worker-a", meta(toB))

	// Each is bound by the other, so neither deletes without force.
	_, err = c.Workers.Scripts.Delete(ctx, "worker-a", workers.ScriptDeleteParams{AccountID: cloudflare.F(acct)})
	apiErr = requireAPIError(t, err, http.StatusBadRequest, 10064)
	assert.Contains(t, apiErr.Errors[0].Message, "worker-b")
	_, err = c.Workers.Scripts.Delete(ctx, "worker-a", workers.ScriptDeleteParams{AccountID: cloudflare.F(acct), Force: cloudflare.F(false)})
	requireAPIError(t, err, http.StatusBadRequest, 10064)
	_, err = c.Workers.Scripts.Delete(ctx, "worker-a", workers.ScriptDeleteParams{AccountID: cloudflare.F(acct), Force: cloudflare.F(true)})
	require.NoError(t, err)

	// The other script's binding dangles; uploading it again fails.
	d, ok := s.Workers().Worker(acct, "worker-b")
	require.True(t, ok)
	assert.Equal(t, "worker-a", d.Bindings[0].Service)
	_, err = upload(t, c, "worker-b", meta(toA))
	requireAPIError(t, err, http.StatusBadRequest, 10143)
	_, err = c.Workers.Scripts.Get(ctx, "worker-a", workers.ScriptGetParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 10007)
	_, err = c.Workers.Scripts.Delete(ctx, "worker-a", workers.ScriptDeleteParams{AccountID: cloudflare.F(acct), Force: cloudflare.F(true)})
	requireAPIError(t, err, http.StatusNotFound, 10007)

	// worker-b no longer referenced: deletes without force.
	_, err = c.Workers.Scripts.Delete(ctx, "worker-b", workers.ScriptDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.True(t, s.Inventory().Empty())
}

func TestWorkerDeleteRefusedForDurableObjectUsers(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	host := meta()
	host["migrations"] = M{"new_tag": "v1", "new_sqlite_classes": []string{"Counter"}}
	mustUpload(t, c, "host", host)
	mustUpload(t, c, "user", meta(M{"type": "durable_object_namespace", "name": "C", "class_name": "Counter", "script_name": "host"}))
	_, err := c.Workers.Scripts.Delete(context.Background(), "host", workers.ScriptDeleteParams{AccountID: cloudflare.F(acct)})
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 10064)
	assert.Contains(t, apiErr.Errors[0].Message, "user")
	_, ok := s.Workers().Worker(acct, "host")
	assert.True(t, ok)
}

func TestWorkerEtag(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	first := mustUpload(t, c, "app", meta())
	again := mustUpload(t, c, "app", meta())
	assert.Equal(t, first.Etag, again.Etag, "identical uploads, identical etag")
	assert.Equal(t, first.CreatedOn, again.CreatedOn)
	assert.False(t, again.ModifiedOn.Before(first.ModifiedOn))

	changed := mustUpload(t, c, "app", meta(), mod{"index.js", "application/javascript+module", "export default {}"})
	assert.NotEqual(t, first.Etag, changed.Etag, "a changed module changes the etag")
	m := meta()
	m["compatibility_date"] = "2025-02-02"
	redated := mustUpload(t, c, "app", m)
	assert.NotEqual(t, first.Etag, redated.Etag, "changed metadata changes the etag")
	back := mustUpload(t, c, "app", meta())
	assert.Equal(t, first.Etag, back.Etag)

	d, _ := s.Workers().Worker(acct, "app")
	assert.Equal(t, 5, d.Uploads)
	assert.Equal(t, back.Etag, d.Etag)
	assert.Equal(t, 5, s.Counts()[scriptUploadKey])
}

func TestWorkerSchedules(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	mustUpload(t, c, "cron", meta())
	set := func(script string, crons ...string) (*workers.ScriptScheduleUpdateResponse, error) {
		body := []workers.ScriptScheduleUpdateParamsBody{}
		for _, cr := range crons {
			body = append(body, workers.ScriptScheduleUpdateParamsBody{Cron: cloudflare.F(cr)})
		}
		return c.Workers.Scripts.Schedules.Update(ctx, script, workers.ScriptScheduleUpdateParams{AccountID: cloudflare.F(acct), Body: body})
	}

	valid := []string{"* * * * *", "*/5 * * * *", "0 17 * * sun", "10 7 * * mon-fri", "0 15 1 * *", "59 23 LW * *",
		"0 18 * * 6L", "0 9 * * 2#1", "0,30 8-18/2 1-15 jan-jun,DEC 1-7", "15 3 15W * *"}
	res, err := set("cron", valid...)
	require.NoError(t, err)
	require.Len(t, res.Schedules, len(valid))
	assert.Equal(t, "*/5 * * * *", res.Schedules[1].Cron)
	assert.NotEmpty(t, res.Schedules[0].CreatedOn)
	got, err := c.Workers.Scripts.Schedules.Get(ctx, "cron", workers.ScriptScheduleGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	require.Len(t, got.Schedules, len(valid))
	for i, sch := range got.Schedules {
		assert.Equal(t, valid[i], sch.Cron)
	}

	invalid := []string{
		"* * * *",          // four fields
		"* * * * * *",      // six fields
		"60 * * * *",       // minute out of range
		"* 24 * * *",       // hour out of range
		"* * 0 * *",        // day of month starts at 1
		"* * * 13 *",       // month out of range
		"* * * FOO *",      // unknown month name
		"* * * * 0",        // Cloudflare weekdays are 1-7
		"* * * * 8",        // weekday out of range
		"*/0 * * * *",      // zero step
		"*/60 * * * *",     // step above the minute span (ranges may wrap: 5-1 is valid)
		"1,,2 * * * *",     // empty list item
		"every day please", // words
		"* * * * 2#6",      // no sixth Monday
	}
	for _, cr := range invalid {
		_, err := set("cron", cr)
		apiErr := requireAPIError(t, err, http.StatusBadRequest, 10100)
		assert.Contains(t, apiErr.Errors[0].Message, cr)
	}
	_, err = set("cron", "* * * * *", "* * * * *")
	requireAPIError(t, err, http.StatusBadRequest, 10100)
	d, _ := s.Workers().Worker(acct, "cron")
	assert.Equal(t, valid, d.Crons, "rejected updates change nothing")

	// Replacing keeps the created_on of crons that stay.
	res, err = set("cron", "0 15 1 * *", "0 0 * * *")
	require.NoError(t, err)
	assert.Equal(t, got.Schedules[4].CreatedOn, res.Schedules[0].CreatedOn)
	assert.Equal(t, []string{"0 15 1 * *", "0 0 * * *"}, s.Inventory().Workers[0].Crons)
	res, err = set("cron")
	require.NoError(t, err)
	assert.Empty(t, res.Schedules)

	_, err = set("ghost", "* * * * *")
	requireAPIError(t, err, http.StatusNotFound, 10007)
	_, err = c.Workers.Scripts.Schedules.Get(ctx, "ghost", workers.ScriptScheduleGetParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 10007)
	assert.Equal(t, 2+len(invalid)+1+1+1, s.Counts()[scriptSchedulesKey])
}

func TestWorkerSubdomains(t *testing.T) {
	ctx := context.Background()
	s := start(t, emulator.Options{})
	c := newClient(s)
	sub, err := c.Workers.Subdomains.Get(ctx, workers.SubdomainGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Equal(t, emuworkers.DefaultSubdomain, sub.Subdomain)
	set, err := c.Workers.Subdomains.Update(ctx, workers.SubdomainUpdateParams{AccountID: cloudflare.F(acct), Subdomain: cloudflare.F("acme-dev")})
	require.NoError(t, err)
	assert.Equal(t, "acme-dev", set.Subdomain)
	sub, err = c.Workers.Subdomains.Get(ctx, workers.SubdomainGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Equal(t, "acme-dev", sub.Subdomain)
	_, err = c.Workers.Subdomains.Update(ctx, workers.SubdomainUpdateParams{AccountID: cloudflare.F(acct), Subdomain: cloudflare.F("Not_A_Label")})
	requireAPIError(t, err, http.StatusBadRequest, 10021)

	custom := start(t, emulator.Options{Workers: emuworkers.Options{Subdomain: "acme"}})
	sub, err = newClient(custom).Workers.Subdomains.Get(ctx, workers.SubdomainGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Equal(t, "acme", sub.Subdomain)
	_, err = emulator.New(emulator.Options{Workers: emuworkers.Options{Subdomain: "bad name"}})
	require.Error(t, err)

	// The script's workers.dev route.
	mustUpload(t, c, "site", meta())
	st, err := c.Workers.Scripts.Subdomain.Get(ctx, "site", workers.ScriptSubdomainGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.False(t, st.Enabled)
	on, err := c.Workers.Scripts.Subdomain.New(ctx, "site", workers.ScriptSubdomainNewParams{AccountID: cloudflare.F(acct), Enabled: cloudflare.F(true)})
	require.NoError(t, err)
	assert.True(t, on.Enabled)
	assert.True(t, on.PreviewsEnabled, "previews follow enabled when not given")
	st, err = c.Workers.Scripts.Subdomain.Get(ctx, "site", workers.ScriptSubdomainGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.True(t, st.Enabled)
	assert.True(t, s.Inventory().Workers[0].WorkersDev)
	mustUpload(t, c, "site", meta())
	d, _ := s.Workers().Worker(acct, "site")
	assert.True(t, d.WorkersDev, "a re-upload keeps workers.dev")

	on, err = c.Workers.Scripts.Subdomain.New(ctx, "site", workers.ScriptSubdomainNewParams{AccountID: cloudflare.F(acct),
		Enabled: cloudflare.F(true), PreviewsEnabled: cloudflare.F(false)})
	require.NoError(t, err)
	assert.True(t, on.Enabled)
	assert.False(t, on.PreviewsEnabled)
	off, err := c.Workers.Scripts.Subdomain.New(ctx, "site", workers.ScriptSubdomainNewParams{AccountID: cloudflare.F(acct), Enabled: cloudflare.F(false)})
	require.NoError(t, err)
	assert.False(t, off.Enabled)
	assert.False(t, s.Inventory().Workers[0].WorkersDev)

	_, err = c.Workers.Scripts.Subdomain.New(ctx, "ghost", workers.ScriptSubdomainNewParams{AccountID: cloudflare.F(acct), Enabled: cloudflare.F(true)})
	requireAPIError(t, err, http.StatusNotFound, 10007)
	_, err = c.Workers.Scripts.Subdomain.Get(ctx, "ghost", workers.ScriptSubdomainGetParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 10007)
	assert.Equal(t, 4, s.Counts()[scriptSubdomainKey])
}

func TestWorkerSettingsOfMissingScript(t *testing.T) {
	s := start(t, emulator.Options{})
	_, err := newClient(s).Workers.Scripts.ScriptAndVersionSettings.Get(context.Background(), "ghost",
		workers.ScriptScriptAndVersionSettingGetParams{AccountID: cloudflare.F(acct)})
	apiErr := requireAPIError(t, err, http.StatusNotFound, 10007)
	assert.Equal(t, "workers.api.error.script_not_found", apiErr.Errors[0].Message)
	// Another account's scripts are out of reach.
	resp, body := do(t, http.MethodGet, s.CloudflareBaseURL()+"accounts/"+strings.Repeat("a", 32)+"/workers/scripts", "Bearer "+emulator.DefaultToken, "")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, body)
}

func TestWorkerKeepBindings(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	mustUpload(t, c, "app", meta(M{"type": "secret_text", "name": "TOKEN", "text": "kept"}, M{"type": "plain_text", "name": "MODE", "text": "a"}))
	m := meta(M{"type": "plain_text", "name": "MODE", "text": "b"})
	m["keep_bindings"] = []string{"secret_text"}
	mustUpload(t, c, "app", m)
	d, _ := s.Workers().Worker(acct, "app")
	assert.Equal(t, map[string]string{"TOKEN": "kept"}, d.Secrets)
	assert.Equal(t, map[string]string{"MODE": "b"}, d.Vars)
}
