package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// cloudflareRaw calls the emulator's Cloudflare API with the test token and
// returns the status and raw body.
func (e *emulatorProcess) cloudflareRaw(t *testing.T, method, path string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, e.cloudflareBaseURL()+"accounts/"+emulatorAccount+"/"+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+emulatorToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, raw
}

// d1Rows runs SQL on a database through the emulator's Cloudflare API and
// returns the rows of its last statement.
func (e *emulatorProcess) d1Rows(t *testing.T, databaseID, sql string, params ...any) []map[string]any {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"sql": sql, "params": params})
	require.NoError(t, err)
	status, body := e.cloudflareRaw(t, http.MethodPost, "d1/database/"+databaseID+"/query", raw)
	require.Equal(t, http.StatusOK, status, sql)
	var out struct {
		Result []struct {
			Results []map[string]any `json:"results"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(body, &out))
	require.NotEmpty(t, out.Result, sql)
	return out.Result[len(out.Result)-1].Results
}

// d1Dump is every row of every table of a database, keyed by table.
func (e *emulatorProcess) d1Dump(t *testing.T, databaseID string) map[string][]map[string]any {
	t.Helper()
	dump := map[string][]map[string]any{}
	for _, row := range e.d1Rows(t, databaseID, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`) {
		table := row["name"].(string)
		dump[table] = e.d1Rows(t, databaseID, "SELECT * FROM "+table+" ORDER BY rowid")
	}
	return dump
}

// registryDatabase is the account's ownership registry, where queues record
// their installation (provider/cloudflare/registry.go).
const registryDatabase = "openinspect-registry"

func withoutRegistry(dbs []emulator.D1Entry) []emulator.D1Entry {
	return slices.DeleteFunc(slices.Clone(dbs), func(d emulator.D1Entry) bool { return d.Name == registryDatabase })
}

// registryRecords is every record of the account's ownership registry as
// "kind/name=owner", sorted; nil when the account has none (or it has no
// table yet).
func (e *emulatorProcess) registryRecords(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, d := range e.fullInventory(t).D1 {
		if d.Name != registryDatabase {
			continue
		}
		if len(e.d1Rows(t, d.ID, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'objects'")) == 0 {
			return nil
		}
		for _, row := range e.d1Rows(t, d.ID, "SELECT kind, name, owner FROM objects ORDER BY kind, name") {
			out = append(out, fmt.Sprintf("%s/%s=%s", row["kind"], row["name"], row["owner"]))
		}
	}
	return out
}

// cloudflareObjects is an inventory's Cloudflare side keyed by kind and
// name, each entry as the emulator reports it (IDs, script etags, key and
// object counts, queue consumers): equal maps mean nothing was created,
// deleted or changed.
func cloudflareObjects(inv emulator.Inventory) map[string]any {
	out := map[string]any{}
	for _, d := range inv.D1 {
		out["d1/"+d.Name] = d
	}
	for _, k := range inv.KV {
		out["kv/"+k.Title] = k
	}
	for _, r := range inv.R2 {
		out["r2/"+r.Name] = r
	}
	for _, w := range inv.Workers {
		out["worker/"+w.Name] = w
	}
	for _, q := range inv.Queues {
		out["queue/"+q.Name] = q
	}
	return out
}

// without is objects minus the keys of other.
func without(objects, other map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range objects {
		if _, ok := other[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// installationID reads an installation's identity from its stack's state.
func installationID(t *testing.T, pt *pulumitest.PulumiTest) string {
	t.Helper()
	var deployment struct {
		Resources []struct {
			Type    string         `json:"type"`
			Outputs map[string]any `json:"outputs"`
		} `json:"resources"`
	}
	require.NoError(t, json.Unmarshal(pt.ExportStack(t).Deployment, &deployment))
	for _, r := range deployment.Resources {
		if r.Type == "openinspect:index:NameLock" {
			id, _ := r.Outputs["installationId"].(string)
			require.NotEmpty(t, id)
			return id
		}
	}
	t.Fatal("no NameLock in the stack")
	return ""
}

// unmanagedSandbox keeps the Modal side out: this test is about the
// Cloudflare account the installations share (TestModalInstallation covers
// two installations' Modal environments).
const unmanagedSandbox = "      sandbox:\n        manage: false\n"

// TestCollidingNamesTenancy deploys two installations whose names
// concatenate alike into ONE emulator account: A (namePrefix open-inspect,
// deploymentName x-y) and B (namePrefix open-inspect-x, deploymentName y).
// Their D1 databases are both named open-inspect-x-y (D1 names are
// <prefix>-<deployment>); every other object is <prefix>-<logical>-<deployment>
// and differs. The provider's behaviour, asserted exactly: B's up is refused
// at the D1 database, naming A's identity; with --continue-on-error B's
// objects that do not collide (its KV namespaces, media bucket and queues)
// are created beside A's, recording B; its control plane, which binds the
// database, is never uploaded. A is untouched throughout (every object,
// script etag and D1 row), destroying B leaves exactly A, destroying A
// leaves exactly B's objects, and B deploys once the name is free.
func TestCollidingNamesTenancy(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	checkout := filepath.Join(repoRoot(), "tests", "fixtures", "upstream")

	a := newInstallationTest(t, emu)
	a.SetConfig(t, "deploymentName", "x-y")
	editProgram(t, a, withSandbox(unmanagedSandbox))
	upA := previewUp(t, a)
	idA := installationID(t, a)
	dbA := upA.Outputs["databaseId"].Value.(string)
	emu.d1(t, dbA, "INSERT INTO sessions (id, title) VALUES (?, ?)", "session-of-a", "A's data")

	objectsA := cloudflareObjects(emu.inventory(t))
	assert.Contains(t, objectsA, "d1/open-inspect-x-y")
	assert.Contains(t, objectsA, "worker/open-inspect-control-plane-x-y")
	// A's KV namespaces and bucket record A.
	for _, title := range []string{"open-inspect-session-index-x-y", "open-inspect-slack-kv-x-y"} {
		require.Contains(t, objectsA, "kv/"+title)
		ns := objectsA["kv/"+title].(emulator.KVEntry)
		status, body := emu.cloudflareRaw(t, http.MethodGet, "storage/kv/namespaces/"+ns.ID+"/values/_openinspect_owner", nil)
		require.Equal(t, http.StatusOK, status, title)
		assert.Equal(t, idA, string(body), title)
	}
	status, body := emu.cloudflareRaw(t, http.MethodGet, "r2/buckets/open-inspect-media-x-y/objects/.openinspect-owner", nil)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, idA, string(body))
	dumpA := emu.d1Dump(t, dbA)
	require.Equal(t, []map[string]any{{"id": "session-of-a", "title": "A's data", "touched": 0.0, "repo_owner": nil, "repo_name": nil,
		"status": "created", "created_by": nil, "sandbox_id": nil, "created_at": nil}}, dumpA["sessions"])
	require.Len(t, dumpA["_openinspect_owner"], 1)
	assert.Equal(t, idA, dumpA["_openinspect_owner"][0]["installation"])

	// B runs without the Slack bot. The bot binds no database, so a refused
	// up with --continue-on-error uploads it (without its binding to the
	// control plane, which does not exist) and then waits the bounded
	// 3 minutes for that control plane before failing: real behaviour
	// (docs/component.md, "Workers that bind each other"), and all it adds here is the
	// wait, twice.
	b := secondInstallation(t, emu, checkout, unmanagedSandbox+"      slack:\n        enabled: false\n")
	b.SetConfig(t, "deploymentName", "y")
	editProgram(t, b, func(program string) string {
		return strings.Replace(program, componentProperties, componentProperties+"      namePrefix: open-inspect-x\n", 1)
	})
	// partialB is what B creates beside A: everything that does not bind
	// the database, under B's own names.
	partialB := []string{
		"kv/open-inspect-x-session-index-y", "r2/open-inspect-x-media-y",
		"queue/open-inspect-x-image-build-finalization-y", "queue/open-inspect-x-image-build-finalization-dlq-y",
	}
	upRefused := func() map[string]any {
		t.Helper()
		// Up directly: this update is about being refused.
		_, err := b.CurrentStack().Up(t.Context(), optup.ContinueOnError())
		require.Error(t, err, "B's D1 database is A's")
		idB := installationID(t, b)
		require.NotEqual(t, idA, idB)
		assert.Contains(t, err.Error(), fmt.Sprintf(`D1 database "open-inspect-x-y" already exists in account %s (id %s) `+
			`and belongs to installation %s, not this one (%s)`, emulatorAccount, dbA, idA, idB))
		assert.Contains(t, err.Error(), "takeOverFrom: "+idA)

		objects := cloudflareObjects(emu.inventory(t))
		for k, v := range objectsA {
			assert.Equal(t, v, objects[k], "%s of A is untouched", k)
		}
		created := without(objects, objectsA)
		assert.ElementsMatch(t, partialB, keys(created), "B's objects beside A's")
		for _, k := range partialB {
			if ns, ok := created[k].(emulator.KVEntry); ok {
				status, body := emu.cloudflareRaw(t, http.MethodGet, "storage/kv/namespaces/"+ns.ID+"/values/_openinspect_owner", nil)
				require.Equal(t, http.StatusOK, status, k)
				assert.Equal(t, idB, string(body), "%s records B", k)
			}
		}
		status, body := emu.cloudflareRaw(t, http.MethodGet, "r2/buckets/open-inspect-x-media-y/objects/.openinspect-owner", nil)
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, idB, string(body), "B's bucket records B")
		assert.Equal(t, dumpA, emu.d1Dump(t, dbA), "A's D1 rows are untouched")
		return created
	}

	upRefused()
	b.Destroy(t)
	assert.Equal(t, objectsA, cloudflareObjects(emu.inventory(t)), "destroying B leaves exactly A")
	assert.Equal(t, dumpA, emu.d1Dump(t, dbA))

	objectsB := upRefused()
	a.Destroy(t)
	assert.Equal(t, objectsB, cloudflareObjects(emu.inventory(t)), "destroying A leaves exactly B's objects")

	// The name is free again: B's next up completes, its database recording B.
	upB := previewUp(t, b)
	dbB := upB.Outputs["databaseId"].Value.(string)
	assert.NotEqual(t, dbA, dbB)
	owner := emu.d1Rows(t, dbB, "SELECT installation FROM _openinspect_owner")
	require.Len(t, owner, 1)
	assert.Equal(t, installationID(t, b), owner[0]["installation"])
	objects := cloudflareObjects(emu.inventory(t))
	for k, v := range objectsB {
		switch was := v.(type) {
		case emulator.KVEntry:
			assert.Equal(t, was.ID, objects[k].(emulator.KVEntry).ID, "%s of B is kept, not recreated", k)
		case emulator.QueueEntry:
			assert.Equal(t, was.ID, objects[k].(emulator.QueueEntry).ID, "%s of B is kept, not recreated", k)
		default:
			assert.Contains(t, objects, k)
		}
	}
	b.Destroy(t)
	emu.requireEmpty(t)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// queueRecords are the registry records an installation's queues should
// have: each name recorded for owner.
func queueRecords(owner string, names ...string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, "queue/"+n+"="+owner)
	}
	slices.Sort(out)
	return out
}

// TestQueueTenancy deploys two installations into ONE emulator account
// whose names collide only at one queue: A (namePrefix oi-a, deploymentName
// tq (t would be read as a boolean), an extra queue x) and B (namePrefix oi,
// deploymentName tq, an extra
// queue a-x, adoptExisting: true): both extra queues are named oi-a-x-tq.
// Queues carry no metadata; the account's ownership registry records A's.
// B's up, with adoptExisting, is refused at that queue naming A's identity
// (with --continue-on-error its other objects are created, its queues
// recorded for B); A is untouched. Destroying B leaves exactly A (its queue
// included, still recorded for A); destroying A after B's second try leaves
// exactly B's objects; then B creates the freed queue as its own.
func TestQueueTenancy(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	checkout := filepath.Join(repoRoot(), "tests", "fixtures", "upstream")
	const shared = "oi-a-x-tq"

	a := newInstallationTest(t, emu)
	a.SetConfig(t, "deploymentName", "tq")
	editProgram(t, a, withSandbox(unmanagedSandbox+"      slack:\n        enabled: false\n"+
		"      namePrefix: oi-a\n      queues: [x]\n"))
	previewUp(t, a)
	idA := installationID(t, a)
	objectsA := cloudflareObjects(emu.inventory(t))
	require.Contains(t, objectsA, "queue/"+shared)
	queueA := objectsA["queue/"+shared].(emulator.QueueEntry)
	recordsA := queueRecords(idA, shared, "oi-a-image-build-finalization-tq", "oi-a-image-build-finalization-dlq-tq")
	require.Equal(t, recordsA, emu.registryRecords(t), "A's queues are recorded for A")

	b := secondInstallation(t, emu, checkout, unmanagedSandbox+"      slack:\n        enabled: false\n"+
		"      namePrefix: oi\n      queues: [a-x]\n      adoptExisting: true\n")
	b.SetConfig(t, "deploymentName", "tq")
	ownB := []string{"oi-image-build-finalization-tq", "oi-image-build-finalization-dlq-tq"}
	upRefused := func() map[string]any {
		t.Helper()
		// Up directly: this update is about being refused.
		_, err := b.CurrentStack().Up(t.Context(), optup.ContinueOnError())
		require.Error(t, err, "B's extra queue is A's")
		idB := installationID(t, b)
		require.NotEqual(t, idA, idB)
		assert.Contains(t, err.Error(), fmt.Sprintf(`queue %q already exists in account %s (id %s) `+
			`and belongs to installation %s, not this one (%s)`, shared, emulatorAccount, queueA.ID, idA, idB))
		assert.Contains(t, err.Error(), "takeOverFrom: "+idA)

		objects := cloudflareObjects(emu.inventory(t))
		for k, v := range objectsA {
			assert.Equal(t, v, objects[k], "%s of A is untouched", k)
		}
		created := without(objects, objectsA)
		for _, q := range ownB {
			assert.Contains(t, created, "queue/"+q, "B's own queues are created beside A's")
		}
		assert.Contains(t, created, "worker/oi-control-plane-tq")
		want := append(queueRecords(idB, ownB...), recordsA...)
		slices.Sort(want)
		assert.Equal(t, want, emu.registryRecords(t), "B's queues recorded for B, A's shared queue still A's")
		return created
	}

	upRefused()
	b.Destroy(t)
	assert.Equal(t, objectsA, cloudflareObjects(emu.inventory(t)), "destroying B leaves exactly A, its queue included")
	assert.Equal(t, recordsA, emu.registryRecords(t))

	objectsB := upRefused()
	a.Destroy(t)
	assert.Equal(t, objectsB, cloudflareObjects(emu.inventory(t)), "destroying A leaves exactly B's objects, its queues included")
	assert.Equal(t, queueRecords(installationID(t, b), ownB...), emu.registryRecords(t), "A's records went with its queues")

	// The name is free again: B creates the queue as its own.
	previewUp(t, b)
	objects := cloudflareObjects(emu.inventory(t))
	require.Contains(t, objects, "queue/"+shared)
	assert.NotEqual(t, queueA.ID, objects["queue/"+shared].(emulator.QueueEntry).ID, "a new queue, not A's")
	assert.Equal(t, queueRecords(installationID(t, b), append([]string{shared}, ownB...)...), emu.registryRecords(t))
	b.Destroy(t)
	emu.requireEmpty(t)
}
