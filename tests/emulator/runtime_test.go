package emulator_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/kv"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/cloudflare/cloudflare-go/v4/r2"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// The producer writes to D1 and KV, sends to a queue, calls the consumer
// through a service binding and counts in a Durable Object; the consumer
// stores what it receives in KV and retries what asks to fail.
const producerJS = `
export class Counter {
  constructor(state) { this.state = state; }
  async fetch() {
    const sql = this.state.storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS hits (n INTEGER)");
    sql.exec("INSERT INTO hits VALUES (1)");
    return new Response(String(sql.exec("SELECT count(*) AS c FROM hits").one().c));
  }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    switch (url.pathname) {
      case "/write": {
        await env.DB.prepare("INSERT INTO notes (body, data) VALUES (?1, ?2)").bind(url.searchParams.get("body"), new Uint8Array([1, 2, 3])).run();
        const row = await env.DB.prepare("SELECT count(*) AS n FROM notes").first();
        await env.CACHE.put("last", url.searchParams.get("body"), { metadata: { by: "producer" } });
        return Response.json({ notes: row.n, greeting: env.GREETING, secret: env.TOKEN.length });
      }
      case "/kv": {
        const { value, metadata } = await env.CACHE.getWithMetadata("last");
        const list = await env.CACHE.list({ prefix: "l" });
        return Response.json({ value, metadata, keys: list.keys.map((k) => k.name) });
      }
      case "/r2": {
        await env.MEDIA.put("notes/a.txt", "alpha", { httpMetadata: { contentType: "text/plain" }, customMetadata: { by: "producer" } });
        await env.MEDIA.put("notes/b.txt", "beta");
        const a = await env.MEDIA.get("notes/a.txt");
        const part = await env.MEDIA.get("notes/a.txt", { range: { offset: 1, length: 3 } });
        const head = await env.MEDIA.head("notes/b.txt");
        const list = await env.MEDIA.list({ prefix: "notes/" });
        await env.MEDIA.delete("notes/b.txt");
        return Response.json({
          text: await a.text(), type: a.httpMetadata.contentType, by: a.customMetadata.by, part: await part.text(),
          size: head.size, keys: list.objects.map((o) => o.key), missing: await env.MEDIA.get("nope"),
        });
      }
      case "/send":
        await env.JOBS.send({ id: url.searchParams.get("id"), fail: url.searchParams.has("fail") });
        return new Response("sent", { status: 202 });
      case "/peer":
        return env.PEER.fetch("https://peer/hello?from=producer");
      case "/count":
        return env.COUNTER.get(env.COUNTER.idFromName("one")).fetch(request);
      case "/error":
        try {
          await env.DB.prepare("SELECT * FROM missing_table").all();
        } catch (e) {
          return new Response(e.message, { status: 500 });
        }
    }
    return new Response(request.url, { status: 404 });
  },
  async scheduled(event, env) {
    await env.CACHE.put("cron", event.cron);
  },
};`

const consumerJS = `
export default {
  async fetch(request) {
    const url = new URL(request.url);
    return new Response("peer saw " + url.pathname + url.search);
  },
  async queue(batch, env) {
    for (const m of batch.messages) {
      if (m.body.fail) { m.retry(); continue; }
      await env.STORE.put("job:" + m.body.id, JSON.stringify({ attempts: m.attempts, queue: batch.queue }));
      m.ack();
    }
  },
};`

func TestRuntimeRunsScriptsWithTheirBindings(t *testing.T) {
	s := start(t, emulator.Options{Logf: t.Logf}) // what the scripts log, on failure
	c := newClient(s)
	ctx := context.Background()
	db := createDB(t, c, "rt")
	query(t, c, db.UUID, "CREATE TABLE notes (body TEXT, data BLOB)")
	cache, err := c.KV.Namespaces.New(ctx, kv.NamespaceNewParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("rt-cache")})
	require.NoError(t, err)
	store, err := c.KV.Namespaces.New(ctx, kv.NamespaceNewParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("rt-store")})
	require.NoError(t, err)
	jobs := createQueue(t, c, "rt-jobs")
	_, err = c.R2.Buckets.New(ctx, r2.BucketNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("rt-media")})
	require.NoError(t, err)
	createQueue(t, c, "rt-jobs-dlq")

	mustUpload(t, c, "rt-consumer", M{"main_module": "index.js", "compatibility_date": "2025-01-01", "bindings": []M{
		{"type": "kv_namespace", "name": "STORE", "namespace_id": store.ID},
	}}, mod{"index.js", "application/javascript+module", consumerJS})
	mustUpload(t, c, "rt-producer", M{"main_module": "index.js", "compatibility_date": "2025-01-01",
		"migrations": M{"new_tag": "v1", "new_sqlite_classes": []string{"Counter"}},
		"bindings": []M{
			{"type": "d1", "name": "DB", "id": db.UUID},
			{"type": "kv_namespace", "name": "CACHE", "namespace_id": cache.ID},
			{"type": "queue", "name": "JOBS", "queue_name": "rt-jobs"},
			{"type": "r2_bucket", "name": "MEDIA", "bucket_name": "rt-media"},
			{"type": "service", "name": "PEER", "service": "rt-consumer"},
			{"type": "durable_object_namespace", "name": "COUNTER", "class_name": "Counter"},
			{"type": "plain_text", "name": "GREETING", "text": "hello"},
			{"type": "secret_text", "name": "TOKEN", "text": "abcdef"},
		}}, mod{"index.js", "application/javascript+module", producerJS})
	_, err = c.Queues.Consumers.New(ctx, jobs.QueueID, consumerParams("rt-consumer", "rt-jobs-dlq", M{"batch_size": 1, "max_retries": 1, "max_wait_time_ms": 100, "retry_delay": 0}))
	require.NoError(t, err)

	get := func(path string) (int, string) {
		res, body := do(t, http.MethodGet, s.Workers().WorkerURL("rt-producer")+path, "", "")
		return res.StatusCode, body
	}

	// D1 through the binding: the row is in the database the API queries.
	status, body := get("/write?body=first")
	require.Equal(t, 200, status, body)
	assert.JSONEq(t, `{"notes":1,"greeting":"hello","secret":6}`, body)
	assert.Equal(t, [][]map[string]any{{{"body": "first", "data": "010203"}}}, query(t, c, db.UUID, "SELECT body, hex(data) AS data FROM notes"))
	status, body = get("/error")
	assert.Equal(t, 500, status)
	assert.Contains(t, body, "no such table: missing_table", "the binding throws SQLite's error")

	// KV through the binding, visible through the API.
	_, body = get("/kv")
	assert.JSONEq(t, `{"value":"first","metadata":{"by":"producer"},"keys":["last"]}`, body)
	v, ok := kvValue(t, c, cache.ID, "last")
	assert.True(t, ok)
	assert.Equal(t, "first", v)

	// R2 through the binding: the object stays in the bucket the API serves.
	status, body = get("/r2")
	require.Equal(t, 200, status, body)
	assert.JSONEq(t, `{"text":"alpha","type":"text/plain","by":"producer","part":"lph","size":4,"keys":["notes/a.txt","notes/b.txt"],"missing":null}`, body)
	res, out := do(t, http.MethodGet, s.CloudflareBaseURL()+"accounts/"+acct+"/r2/buckets/rt-media/objects/notes/a.txt", "Bearer "+emulator.DefaultToken, "")
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "alpha", out)

	// A service binding reaches the other script.
	_, body = get("/peer")
	assert.Equal(t, "peer saw /hello?from=producer", body)

	// Durable Objects keep their SQLite storage, also across a restart of
	// the runtime (a new upload of the consumer changes the configuration).
	_, body = get("/count")
	assert.Equal(t, "1", body)
	mustUpload(t, c, "rt-consumer", M{"main_module": "index.js", "compatibility_date": "2025-01-01", "bindings": []M{
		{"type": "kv_namespace", "name": "STORE", "namespace_id": store.ID},
		{"type": "plain_text", "name": "VERSION", "text": "2"},
	}}, mod{"index.js", "application/javascript+module", consumerJS})
	_, body = get("/count")
	assert.Equal(t, "2", body)

	// The queue delivers to the consumer; a message it retries lands in
	// the dead-letter queue after max_retries+1 deliveries.
	status, _ = get("/send?id=a")
	assert.Equal(t, 202, status)
	get("/send?id=b&fail")
	require.Eventually(t, func() bool {
		_, ok := kvValue(t, c, store.ID, "job:a")
		dead, _ := s.Queues().Messages(acct, "rt-jobs-dlq")
		return ok && len(dead) == 1
	}, 20*time.Second, 50*time.Millisecond)
	v, _ = kvValue(t, c, store.ID, "job:a")
	assert.JSONEq(t, `{"attempts":1,"queue":"rt-jobs"}`, v)
	dead, _ := s.Queues().Messages(acct, "rt-jobs-dlq")
	assert.Equal(t, "json", dead[0].ContentType)
	assert.JSONEq(t, `{"id":"b","fail":true}`, dead[0].Body)
	left, _ := s.Queues().Messages(acct, "rt-jobs")
	assert.Empty(t, left)

	// Crons fire on request.
	res, out = do(t, http.MethodPost, s.URL()+"/__emulator/scheduled/rt-producer?cron="+strings.ReplaceAll("*/5 * * * *", " ", "%20"), "", "")
	require.Equal(t, 200, res.StatusCode, out)
	assert.JSONEq(t, `{"outcome":"ok","noRetry":false}`, out)
	v, _ = kvValue(t, c, cache.ID, "cron")
	assert.Equal(t, "*/5 * * * *", v)
}

func kvValue(t *testing.T, c *cloudflare.Client, ns, key string) (string, bool) {
	t.Helper()
	res, err := c.KV.Namespaces.Values.Get(context.Background(), ns, key, kv.NamespaceValueGetParams{AccountID: cloudflare.F(acct)})
	if err != nil {
		return "", false
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), err == nil
}

// A script that throws at startup is refused at upload with the runtime's
// message, as Cloudflare refuses it (10021), and the deployed version stays.
func TestRuntimeRefusesAScriptThatDoesNotStart(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	mustUpload(t, c, "rt-start", meta(), mod{"index.js", "application/javascript+module", "export default { fetch() { return new Response('v1') } }"})
	_, err := upload(t, c, "rt-start", meta(), mod{"index.js", "application/javascript+module", "const x = undefinedThing.y;\nexport default {};"})
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 10021)
	assert.Equal(t, "Uncaught ReferenceError: undefinedThing is not defined\n  at index.js:1:11", apiErr.Errors[0].Message)
	_, body := do(t, http.MethodGet, s.Workers().WorkerURL("rt-start")+"/", "", "")
	assert.Equal(t, "v1", body)
}

// The configuration is derived on every request but workerd restarts only
// when it changed: a version_metadata binding carries the version's own
// values, and two accounts' buckets of one name stay two backends.
func TestRuntimeRestartsOnlyWhenTheConfigurationChanges(t *testing.T) {
	other := "1111111111111111aaaaaaaaaaaaaaaa"
	s := start(t, emulator.Options{Tokens: map[string]string{emulator.DefaultToken: acct, "other-token": other}})
	ctx := context.Background()
	const code = `export default { async fetch(req, env) {
  await env.MEDIA.put("who", env.WHO);
  return Response.json({ version: env.VERSION.id, who: await (await env.MEDIA.get("who")).text() });
} };`
	for _, a := range []struct{ token, account, who string }{{emulator.DefaultToken, acct, "first"}, {"other-token", other, "second"}} {
		cl := newClient(s, option.WithAPIToken(a.token))
		_, err := cl.R2.Buckets.New(ctx, r2.BucketNewParams{AccountID: cloudflare.F(a.account), Name: cloudflare.F("media")})
		require.NoError(t, err)
		ct, body := multipartBody(t, M{"main_module": "index.js", "compatibility_date": "2025-01-01", "bindings": []M{
			{"type": "r2_bucket", "name": "MEDIA", "bucket_name": "media"},
			{"type": "version_metadata", "name": "VERSION"},
			{"type": "plain_text", "name": "WHO", "text": a.who},
		}}, mod{"index.js", "application/javascript+module", code})
		_, err = cl.Workers.Scripts.Update(ctx, "rt-"+a.who, workers.ScriptUpdateParams{AccountID: cloudflare.F(a.account)}, option.WithRequestBody(ct, body))
		require.NoError(t, err)
	}
	first := versionOf(t, s, emulator.DefaultToken, acct, "rt-first")
	second := versionOf(t, s, "other-token", other, "rt-second")
	for range 3 {
		_, body := do(t, http.MethodGet, s.Workers().WorkerURL("rt-first")+"/", "", "")
		assert.JSONEq(t, `{"version":"`+first+`","who":"first"}`, body)
		_, body = do(t, http.MethodGet, s.Workers().WorkerURL("rt-second")+"/", "", "")
		assert.JSONEq(t, `{"version":"`+second+`","who":"second"}`, body)
	}
	assert.Equal(t, 1, s.Workers().RuntimeStats().Starts, "nothing changed between the requests")
}

// versionOf is the ID of a script's newest version, read through the API.
func versionOf(t *testing.T, s *emulator.Server, token, account, script string) string {
	t.Helper()
	res, body := do(t, http.MethodGet, s.CloudflareBaseURL()+"accounts/"+account+"/workers/scripts/"+script+"/versions", "Bearer "+token, "")
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	var out struct {
		Result struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	require.NotEmpty(t, out.Result.Items)
	return out.Result.Items[0].ID
}
