package wrangler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/d1"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/cloudflare/cloudflare-go/v4/queues"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emuworkers "github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
)

const acct = emulator.DefaultAccountID

// TestMain keeps the Go side of the suite (cloudflare-go) from picking up a
// developer's CLOUDFLARE_* variables; wrangler gets its own environment.
func TestMain(m *testing.M) {
	if base := os.Getenv(rssChildEnv); base != "" {
		rssChild(base)
		os.Exit(0)
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CLOUDFLARE_") {
			_ = os.Unsetenv(k)
		}
	}
	os.Exit(m.Run())
}

func startEmulator(tb testing.TB) *emulator.Server {
	tb.Helper()
	s, err := emulator.Start(emulator.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func cfClient(s *emulator.Server) *cloudflare.Client {
	return cloudflare.NewClient(option.WithBaseURL(s.CloudflareBaseURL()), option.WithAPIToken(emulator.DefaultToken), option.WithMaxRetries(0))
}

// apiGet reads a raw body from the emulator's API.
func apiGet(t *testing.T, s *emulator.Server, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.CloudflareBaseURL()+strings.TrimPrefix(path, "/"), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+emulator.DefaultToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// workerConfig is the fixture worker's wrangler.json: one binding of every
// kind the emulator models, a Durable Object class with its migration and a
// queue consumer.
func workerConfig(name, greeting, dbID, kvID string) string {
	return fixtureConfig{name: name, greeting: greeting, dbName: "oi-db", dbID: dbID, kvID: kvID,
		bucket: "oi-files", queue: "jobs", migrationsDir: "migrations"}.json()
}

type fixtureConfig struct {
	name, greeting, dbName, dbID, kvID, bucket, queue, migrationsDir string
}

func (c fixtureConfig) json() string {
	cfg := map[string]any{
		"name":               c.name,
		"main":               "src/index.js",
		"compatibility_date": "2025-01-01",
		"vars":               map[string]string{"GREETING": c.greeting},
		"d1_databases": []map[string]string{{
			"binding": "DB", "database_name": c.dbName, "database_id": c.dbID, "migrations_dir": c.migrationsDir,
		}},
		"kv_namespaces": []map[string]string{{"binding": "CACHE", "id": c.kvID}},
		"r2_buckets":    []map[string]string{{"binding": "FILES", "bucket_name": c.bucket}},
		"queues": map[string]any{
			"producers": []map[string]string{{"binding": "JOBS", "queue": c.queue}},
			"consumers": []map[string]any{{"queue": c.queue, "max_batch_size": 5}},
		},
		"durable_objects": map[string]any{"bindings": []map[string]string{{"name": "COUNTER", "class_name": "Counter"}}},
		"migrations":      []map[string]any{{"tag": "v1", "new_sqlite_classes": []string{"Counter"}}},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	return string(b)
}

func bindingByName(d emuworkers.WorkerDetail, name string) (emuworkers.WorkerBinding, bool) {
	for _, b := range d.Bindings {
		if b.Name == name {
			return b, true
		}
	}
	return emuworkers.WorkerBinding{}, false
}

func queueNames(inv emulator.Inventory) []string {
	var out []string
	for _, q := range inv.Queues {
		out = append(out, q.Name)
	}
	return out
}

func queueByName(inv emulator.Inventory, name string) (emulator.QueueEntry, bool) {
	for _, q := range inv.Queues {
		if q.Name == name {
			return q, true
		}
	}
	return emulator.QueueEntry{}, false
}

// TestWranglerConformance drives wrangler through the storage, queue and
// Worker lifecycle commands against the emulator. Each step asserts what
// wrangler printed and what the emulator holds afterwards; independent steps
// run in parallel.
func TestWranglerConformance(t *testing.T) {
	start := time.Now()
	emu := startEmulator(t)
	e := newEnv(t, emu)
	cf := cfClient(emu)
	ctx := context.Background()
	project := t.TempDir()
	copyDir(t, filepath.Join("testdata", "worker"), project)
	scratch := t.TempDir() // for commands that need no config
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	var dbID, kvID string
	step("create", func(t *testing.T) {
		t.Run("d1", func(t *testing.T) {
			t.Parallel()
			out := e.must(t, scratch, "", []string{"d1", "create", "oi-db"},
				"Successfully created DB 'oi-db' in region ENAM")
			inv := emu.Inventory()
			require.Len(t, inv.D1, 1)
			dbID = inv.D1[0].ID
			assert.Contains(t, out, dbID, "wrangler prints the new database's ID")
		})
		t.Run("kv", func(t *testing.T) {
			t.Parallel()
			out := e.must(t, scratch, "", []string{"kv", "namespace", "create", "oi-cache"}, "Success!")
			inv := emu.Inventory()
			require.Len(t, inv.KV, 1)
			kvID = inv.KV[0].ID
			assert.Equal(t, "oi-cache", inv.KV[0].Title)
			assert.Contains(t, out, kvID)
		})
		t.Run("r2", func(t *testing.T) {
			t.Parallel()
			e.must(t, scratch, "", []string{"r2", "bucket", "create", "oi-files"}, "Created bucket 'oi-files'")
			inv := emu.Inventory()
			require.Len(t, inv.R2, 1)
			assert.Equal(t, "oi-files", inv.R2[0].Name)
		})
		t.Run("queues", func(t *testing.T) {
			t.Parallel()
			// Several queues, so that the one named is never the first in
			// name order: alpha < doomed < jobs < zeta. Two are made through
			// the API, to spare wrangler runs.
			for _, q := range []string{"zeta", "alpha"} {
				_, err := cf.Queues.New(ctx, queues.QueueNewParams{AccountID: cloudflare.F(acct), QueueName: cloudflare.F(q)})
				require.NoError(t, err)
			}
			for _, q := range []string{"jobs", "doomed"} {
				e.must(t, scratch, "", []string{"queues", "create", q}, "Created queue '"+q+"'")
			}
			assert.Equal(t, []string{"alpha", "doomed", "jobs", "zeta"}, queueNames(emu.Inventory()))
		})
	})
	require.NoError(t, os.WriteFile(filepath.Join(project, "wrangler.json"), []byte(workerConfig("fixture-worker", "hello", dbID, kvID)), 0o644))

	step("storage", func(t *testing.T) {
		t.Run("d1 list and execute", func(t *testing.T) {
			t.Parallel()
			e.must(t, scratch, "", []string{"d1", "list"}, "oi-db", dbID)
			e.must(t, project, "", []string{"d1", "execute", "oi-db", "--remote", "--command",
				"CREATE TABLE kv_notes (k TEXT PRIMARY KEY, v TEXT); INSERT INTO kv_notes VALUES ('a', '1')"},
				"Executed 2 commands")
			importFile, err := filepath.Abs(filepath.Join("testdata", "import.sql"))
			require.NoError(t, err)
			// --file goes through D1 import: init, upload, ingest, poll.
			e.must(t, project, "", []string{"d1", "execute", "oi-db", "--remote", "--file", importFile},
				"Uploading complete", "Executed 4 queries", "3 rows written")
			out := e.must(t, project, "", []string{"d1", "execute", "oi-db", "--remote", "--json", "--command",
				"SELECT name FROM imported ORDER BY id"})
			assert.Contains(t, out, `"b;c"`, "the file ran whole, not split on the ; inside a string")
			res, err := cf.D1.Database.Query(ctx, dbID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct),
				Sql: cloudflare.F("SELECT (SELECT count(*) FROM imported) AS imported, (SELECT v FROM kv_notes) AS v")})
			require.NoError(t, err)
			require.Len(t, res.Result, 1)
			assert.Equal(t, []any{map[string]any{"imported": float64(3), "v": "1"}}, res.Result[0].Results)
		})
		t.Run("d1 migrations apply twice", func(t *testing.T) {
			t.Parallel()
			e.must(t, project, "", []string{"d1", "migrations", "apply", "oi-db", "--remote"},
				"0001_notes.sql", "0002_tags.sql", "0003_seed.sql")
			out := e.must(t, project, "", []string{"d1", "migrations", "apply", "oi-db", "--remote"}, "No migrations to apply")
			assert.NotContains(t, out, "0001_notes.sql")
			res, err := cf.D1.Database.Query(ctx, dbID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct),
				Sql: cloudflare.F("SELECT name FROM d1_migrations ORDER BY id")})
			require.NoError(t, err)
			assert.Equal(t, []any{
				map[string]any{"name": "0001_notes.sql"}, map[string]any{"name": "0002_tags.sql"}, map[string]any{"name": "0003_seed.sql"},
			}, res.Result[0].Results, "each migration is recorded once")
			res, err = cf.D1.Database.Query(ctx, dbID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct),
				Sql: cloudflare.F("SELECT tag FROM tags")})
			require.NoError(t, err)
			assert.Equal(t, []any{map[string]any{"tag": "seed"}}, res.Result[0].Results, "0003 ran once")
		})
		t.Run("kv keys", func(t *testing.T) {
			t.Parallel()
			e.must(t, scratch, "", []string{"kv", "key", "put", "greeting", "hi there", "--namespace-id", kvID, "--remote"}, "Writing the value")
			out := e.must(t, scratch, "", []string{"kv", "key", "get", "greeting", "--namespace-id", kvID, "--remote", "--text"})
			assert.Contains(t, out, "hi there")
			bulk := filepath.Join(t.TempDir(), "bulk.json")
			require.NoError(t, os.WriteFile(bulk, []byte(`[{"key":"b1","value":"one"},{"key":"b2","value":"dHdv","base64":true},{"key":"b3","value":"three"}]`), 0o644))
			e.must(t, scratch, "", []string{"kv", "bulk", "put", bulk, "--namespace-id", kvID, "--remote"}, "Success!")
			del := filepath.Join(t.TempDir(), "delete.json")
			require.NoError(t, os.WriteFile(del, []byte(`["b3"]`), 0o644))
			e.must(t, scratch, "", []string{"kv", "bulk", "delete", del, "--namespace-id", kvID, "--remote", "--force"}, "Success!")
			out = e.must(t, scratch, "", []string{"kv", "key", "list", "--namespace-id", kvID, "--remote"})
			var keys []struct {
				Name string `json:"name"`
			}
			require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "\n[")+1:]), &keys), out)
			var names []string
			for _, k := range keys {
				names = append(names, k.Name)
			}
			assert.Equal(t, []string{"b1", "b2", "greeting"}, names)
			status, body := apiGet(t, emu, "accounts/"+acct+"/storage/kv/namespaces/"+kvID+"/values/b2")
			assert.Equal(t, http.StatusOK, status)
			assert.Equal(t, "two", body, "base64 values are stored decoded")
			inv := emu.Inventory()
			assert.Equal(t, 3, inv.KV[0].Keys)
		})
		t.Run("r2 objects", func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "report.txt")
			require.NoError(t, os.WriteFile(file, []byte("object body\n"), 0o644))
			e.must(t, scratch, "", []string{"r2", "object", "put", "oi-files/reports/2025/report.txt", "--file", file, "--remote"}, "Upload complete")
			out := e.must(t, scratch, "", []string{"r2", "object", "get", "oi-files/reports/2025/report.txt", "--remote", "--pipe"})
			assert.Contains(t, out, "object body")
			inv := emu.Inventory()
			assert.Equal(t, 1, inv.R2[0].Objects)
			status, body := apiGet(t, emu, "accounts/"+acct+"/r2/buckets/oi-files/objects/reports/2025/report.txt")
			assert.Equal(t, http.StatusOK, status)
			assert.Equal(t, "object body\n", body)
		})
		t.Run("queues info and delete", func(t *testing.T) {
			t.Parallel()
			jobs, ok := queueByName(emu.Inventory(), "jobs")
			require.True(t, ok)
			e.must(t, scratch, "", []string{"queues", "info", "jobs"}, "Queue Name: jobs", "Queue ID: "+jobs.ID)
			e.must(t, scratch, "", []string{"queues", "delete", "doomed"}, "Deleted queue doomed")
			assert.Equal(t, []string{"alpha", "jobs", "zeta"}, queueNames(emu.Inventory()),
				"only the queue named was deleted, not the first in name order")
		})
	})

	var firstVersion string
	step("deploy", func(t *testing.T) {
		out := e.must(t, project, "", []string{"deploy"},
			"Uploaded fixture-worker", "env.DB (oi-db)", "env.CACHE ("+kvID+")", "env.FILES (oi-files)",
			"env.JOBS (jobs)", "env.COUNTER (Counter)", `env.GREETING ("hello")`, "Consumer for jobs", "Current Version ID: ")
		d, ok := emu.Workers().Worker(acct, "fixture-worker")
		require.True(t, ok)
		firstVersion = d.DeployedVersion
		assert.Contains(t, out, "Current Version ID: "+firstVersion)
		assert.Equal(t, "wrangler", d.LastDeployedFrom)
		assert.Equal(t, "v1", d.MigrationTag)
		assert.Equal(t, []string{"Counter"}, d.Classes)
		assert.Equal(t, "2025-01-01", d.CompatibilityDate)
		assert.Equal(t, map[string]string{"GREETING": "hello"}, d.Vars)
		for name, check := range map[string]func(b emuworkers.WorkerBinding) bool{
			"DB":    func(b emuworkers.WorkerBinding) bool { return b.Type == "d1" && b.ID == dbID },
			"CACHE": func(b emuworkers.WorkerBinding) bool { return b.Type == "kv_namespace" && b.NamespaceID == kvID },
			"FILES": func(b emuworkers.WorkerBinding) bool { return b.Type == "r2_bucket" && b.BucketName == "oi-files" },
			"JOBS":  func(b emuworkers.WorkerBinding) bool { return b.Type == "queue" && b.QueueName == "jobs" },
			"COUNTER": func(b emuworkers.WorkerBinding) bool {
				return b.Type == "durable_object_namespace" && b.ClassName == "Counter"
			},
		} {
			b, ok := bindingByName(d, name)
			assert.True(t, ok && check(b), "binding %s: %+v", name, b)
		}
		jobs, _ := queueByName(emu.Inventory(), "jobs")
		assert.Equal(t, []string{"fixture-worker"}, jobs.Consumers)
		alpha, _ := queueByName(emu.Inventory(), "alpha")
		assert.Empty(t, alpha.Consumers, "the consumer went to the queue named")
	})

	step("secret put", func(t *testing.T) {
		e.must(t, project, "s3cr3t-value\n", []string{"secret", "put", "API_KEY"}, "Success! Uploaded secret API_KEY")
		d, _ := emu.Workers().Worker(acct, "fixture-worker")
		assert.Equal(t, map[string]string{"API_KEY": "s3cr3t-value"}, d.Secrets)
	})

	var secondVersion string
	step("redeploy", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(project, "wrangler.json"), []byte(workerConfig("fixture-worker", "hello again", dbID, kvID)), 0o644))
		before := emu.Counts()
		out := e.must(t, project, "", []string{"deploy"}, `env.GREETING ("hello again")`, "Current Version ID: ")
		after := emu.Counts()
		// An existing module Worker whose migrations are applied is
		// redeployed through the versions API.
		const versions = "POST /client/v4/accounts/{account_id}/workers/scripts/{script_name}/versions"
		const deployments = "POST /client/v4/accounts/{account_id}/workers/scripts/{script_name}/deployments"
		assert.Equal(t, 1, after[versions]-before[versions])
		assert.Equal(t, 1, after[deployments]-before[deployments])
		d, _ := emu.Workers().Worker(acct, "fixture-worker")
		secondVersion = d.DeployedVersion
		assert.Contains(t, out, "Current Version ID: "+secondVersion)
		assert.NotEqual(t, firstVersion, secondVersion)
		assert.Equal(t, map[string]string{"GREETING": "hello again"}, d.Vars)
		assert.Equal(t, map[string]string{"API_KEY": "s3cr3t-value"}, d.Secrets, "the secret survives a deploy that does not send it")
		assert.Equal(t, "v1", d.MigrationTag)
		assert.Len(t, d.Versions, 3, "upload, secret change, redeploy")
		jobs, _ := queueByName(emu.Inventory(), "jobs")
		assert.Equal(t, []string{"fixture-worker"}, jobs.Consumers, "still exactly one consumer")
	})

	step("deployments list", func(t *testing.T) {
		out := e.must(t, project, "", []string{"deployments", "list"}, firstVersion, secondVersion, "Source:      Wrangler")
		assert.Equal(t, 3, strings.Count(out, "(100%)"), "three deployments: upload, secret, redeploy")
	})

	step("secret list and delete", func(t *testing.T) {
		out := e.must(t, project, "", []string{"secret", "list"}, `"name": "API_KEY"`)
		assert.NotContains(t, out, "s3cr3t-value")
		e.must(t, project, "", []string{"secret", "delete", "API_KEY"}, "Success! Deleted secret API_KEY")
		d, _ := emu.Workers().Worker(acct, "fixture-worker")
		assert.Empty(t, d.Secrets)
		assert.Equal(t, map[string]string{"GREETING": "hello again"}, d.Vars, "deleting a secret keeps the rest")
	})

	step("interop", func(t *testing.T) {
		t.Run("wrangler's worker read back the provider's way", func(t *testing.T) {
			t.Parallel()
			// What the provider's GetScriptSettings reads.
			res, err := cf.Workers.Scripts.ScriptAndVersionSettings.Get(ctx, "fixture-worker",
				workers.ScriptScriptAndVersionSettingGetParams{AccountID: cloudflare.F(acct)})
			require.NoError(t, err)
			var raw struct {
				Bindings []struct {
					Type        string `json:"type"`
					Name        string `json:"name"`
					ID          string `json:"id"`
					NamespaceID string `json:"namespace_id"`
					BucketName  string `json:"bucket_name"`
					QueueName   string `json:"queue_name"`
					ClassName   string `json:"class_name"`
					Text        string `json:"text"`
				} `json:"bindings"`
				CompatibilityDate string `json:"compatibility_date"`
				Migrations        struct {
					NewTag string `json:"new_tag"`
				} `json:"migrations"`
			}
			require.NoError(t, json.Unmarshal([]byte(res.JSON.RawJSON()), &raw))
			assert.Equal(t, "2025-01-01", raw.CompatibilityDate)
			assert.Equal(t, "v1", raw.Migrations.NewTag)
			got := map[string]string{}
			for _, b := range raw.Bindings {
				got[b.Name] = b.Type + ":" + b.ID + b.NamespaceID + b.BucketName + b.QueueName + b.ClassName + b.Text
			}
			assert.Equal(t, map[string]string{
				"DB": "d1:" + dbID, "CACHE": "kv_namespace:" + kvID, "FILES": "r2_bucket:oi-files", "JOBS": "queue:jobs",
				"COUNTER": "durable_object_namespace:Counter", "GREETING": "plain_text:hello again",
			}, got)
			list, err := cf.Workers.Scripts.List(ctx, workers.ScriptListParams{AccountID: cloudflare.F(acct)})
			require.NoError(t, err)
			var ids []string
			for _, sc := range list.Result {
				ids = append(ids, sc.ID)
			}
			assert.Contains(t, ids, "fixture-worker")
		})
		t.Run("the provider's upload seen by wrangler", func(t *testing.T) {
			t.Parallel()
			ct, body := providerUpload("provider-worker", dbID, map[string]string{"TOKEN": "provider-secret"}, []byte(fixtureModule))
			res, err := cf.Workers.Scripts.Update(ctx, "provider-worker", workers.ScriptUpdateParams{AccountID: cloudflare.F(acct)},
				option.WithRequestBody(ct, body))
			require.NoError(t, err)
			d, ok := emu.Workers().Worker(acct, "provider-worker")
			require.True(t, ok)
			assert.Equal(t, res.Etag, d.Etag)
			assert.Equal(t, "api", d.LastDeployedFrom)
			dir := t.TempDir()
			out := e.must(t, dir, "", []string{"deployments", "list", "--name", "provider-worker"}, d.DeployedVersion, "Source:      API")
			assert.Equal(t, 1, strings.Count(out, "(100%)"))
			out = e.must(t, dir, "", []string{"versions", "view", d.DeployedVersion, "--name", "provider-worker"},
				"Version ID:  "+d.DeployedVersion, "Handlers:             fetch", "Compatibility Date:   2025-01-01",
				"Secret Name:  TOKEN", "env.DB ("+dbID+")", `env.MODE ("provider")`)
			assert.NotContains(t, out, "provider-secret")
			e.must(t, dir, "", []string{"secret", "list", "--name", "provider-worker"}, `"name": "TOKEN"`)
		})
	})

	step("delete", func(t *testing.T) {
		e.must(t, project, "", []string{"delete"}, "Successfully deleted fixture-worker")
		_, ok := emu.Workers().Worker(acct, "fixture-worker")
		assert.False(t, ok)
		jobs, _ := queueByName(emu.Inventory(), "jobs")
		assert.Empty(t, jobs.Consumers, "the consumer went with the worker")
		_, ok = emu.Workers().Worker(acct, "provider-worker")
		assert.True(t, ok, "the other worker is untouched")
	})

	// Nothing wrangler did left the machine or missed a route.
	assert.Zero(t, e.sentinel.conns.Load(), "wrangler tried to reach a host other than the emulator")
	assert.Zero(t, emu.Counts()["UNMATCHED"], "wrangler called a route the emulator does not serve: %v", unmatchedHint(emu))
	t.Logf("conformance suite: %s wall, %d Cloudflare API calls", time.Since(start).Round(time.Millisecond), emu.CloudflareCalls())
}

// unmatchedHint lists the routes counted, for a failure message.
func unmatchedHint(emu *emulator.Server) string {
	var keys []string
	for k, v := range emu.Counts() {
		keys = append(keys, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(keys)
	return strings.Join(slices.Compact(keys), ", ")
}
