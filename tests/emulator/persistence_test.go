package emulator_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/d1"
	"github.com/cloudflare/cloudflare-go/v4/kv"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/cloudflare/cloudflare-go/v4/r2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

func TestStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()

	first, err := emulator.Start(emulator.Options{DataDir: dir})
	require.NoError(t, err)
	c := newClient(first)
	db := createDB(t, c, "durable")
	query(t, c, db.UUID, "CREATE TABLE t(v TEXT); INSERT INTO t VALUES ('kept')")
	ns, err := c.KV.Namespaces.New(ctx, kv.NamespaceNewParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("ns")})
	require.NoError(t, err)
	_, err = c.KV.Namespaces.Values.Update(ctx, ns.ID, "k", kv.NamespaceValueUpdateParams{AccountID: cloudflare.F(acct), Value: cloudflare.F("")},
		option.WithRequestBody("text/plain", []byte("v")))
	require.NoError(t, err)
	_, err = c.R2.Buckets.New(ctx, r2.BucketNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("bkt")})
	require.NoError(t, err)
	require.NoError(t, first.R2().PutObject(acct, "bkt", "o", []byte("x")))
	before := first.Inventory()
	require.NoError(t, first.Close())
	_, err = os.Stat(dir)
	require.NoError(t, err, "a caller's DataDir is never removed")

	second := start(t, emulator.Options{DataDir: dir})
	assert.Equal(t, before, second.Inventory())
	c = newClient(second)
	got, err := c.D1.Database.Get(ctx, db.UUID, d1.DatabaseGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Equal(t, "durable", got.Name)
	assert.Equal(t, db.CreatedAt, got.CreatedAt)
	assert.Equal(t, []map[string]any{{"v": "kept"}}, query(t, c, db.UUID, "SELECT v FROM t")[0])
	resp, err := c.KV.Namespaces.Values.Get(ctx, ns.ID, "k", kv.NamespaceValueGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	v, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, "v", string(v))

	// Deleting everything empties the inventory and removes the SQLite file.
	_, err = c.D1.Database.Delete(ctx, db.UUID, d1.DatabaseDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	_, err = c.KV.Namespaces.Delete(ctx, ns.ID, kv.NamespaceDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	require.NoError(t, second.R2().DeleteObject(acct, "bkt", "o"))
	_, err = c.R2.Buckets.Delete(ctx, "bkt", r2.BucketDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.True(t, second.Inventory().Empty(), "%+v", second.Inventory())
	files, err := filepath.Glob(filepath.Join(dir, "d1", "*"))
	require.NoError(t, err)
	assert.Empty(t, files, "the database file and its WAL are gone")
}

func TestTempDataDirIsRemoved(t *testing.T) {
	s, err := emulator.Start(emulator.Options{})
	require.NoError(t, err)
	createDB(t, newClient(s), "temp")
	dir := s.DataDir()
	_, err = os.Stat(filepath.Join(dir, "d1.json"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "temp DataDir removed on Close: %v", err)
	require.NoError(t, s.Close(), "Close is idempotent")
}

func TestCorruptStateIsReported(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state.json"), []byte("{not json"), 0o600))
	_, err := emulator.New(emulator.Options{DataDir: dir})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "state.json")
}

// A DataDir written when every Cloudflare API shared state.json keeps its
// contents: New splits the file into the families' files.
func TestLegacyStateIsSplit(t *testing.T) {
	dir := t.TempDir()
	legacy := `{"version": 1,
	  "kv_namespaces": {"ns1": {"id": "ns1", "account_id": "` + acct + `", "title": "old", "created_at": "2024-01-01T00:00:00Z",
	    "values": {"k": {"value": "dg=="}}}},
	  "r2_buckets": {"` + acct + `/bkt": {"account_id": "` + acct + `", "name": "bkt", "creation_date": "2024-01-01T00:00:00Z",
	    "location": "enam", "storage_class": "Standard", "objects": {}}},
	  "queues": {"q1": {"id": "q1", "account_id": "` + acct + `", "name": "jobs", "created_on": "2024-01-01T00:00:00Z",
	    "modified_on": "2024-01-01T00:00:00Z", "consumers": []}}}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state.json"), []byte(legacy), 0o600))
	s := start(t, emulator.Options{DataDir: dir})
	inv := s.Inventory()
	assert.Equal(t, []emulator.KVEntry{{AccountID: acct, ID: "ns1", Title: "old", Keys: 1}}, inv.KV)
	assert.Equal(t, []emulator.R2Entry{{AccountID: acct, Name: "bkt", Objects: 0}}, inv.R2)
	require.Len(t, inv.Queues, 1)
	assert.Equal(t, "jobs", inv.Queues[0].Name)
	for _, f := range []string{"state.json.split", "kv.json", "r2.json", "queues.json", "d1.json", "zones.json"} {
		_, err := os.Stat(filepath.Join(dir, f))
		assert.NoError(t, err, f)
	}
}
