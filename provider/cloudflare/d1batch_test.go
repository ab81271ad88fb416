package cloudflare_test

import (
	"testing"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapitest"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/tests/migrationset"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// batchFiles are five files that fit one request, each seeding a row, so a
// file applied twice would show as a second row (or a failed run).
var batchFiles = map[string]string{
	"0001_a.sql": "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);\nINSERT INTO a (v) VALUES ('a; seeded');\n",
	"0002_b.sql": "CREATE TABLE b (id INTEGER PRIMARY KEY, v TEXT);\nINSERT INTO b (v) VALUES ('b');\nINSERT INTO a (v) VALUES ('from b');\n",
	// The failing statement sits in the middle of its file, after one that
	// succeeds, and the file in the middle of the batch.
	"0003_c.sql": "CREATE TABLE c (id INTEGER PRIMARY KEY);\nINSERT INTO no_such_table (v) VALUES ('x');\nCREATE TABLE c2 (id INTEGER);\n",
	"0004_d.sql": "CREATE TABLE d (id INTEGER PRIMARY KEY);\nINSERT INTO a (v) VALUES ('from d');\n",
	"0005_e.sql": "CREATE TABLE e (id INTEGER PRIMARY KEY);\n",
}

func ledgerNames(t *testing.T, h *providertest.Harness, dbID string) []string {
	t.Helper()
	client := cfapitest.Client(t, h)
	res, err := client.Query(t.Context(), dbID, "SELECT version, name FROM _schema_migrations ORDER BY version")
	require.NoError(t, err)
	var out []string
	for _, row := range res[0].Rows {
		out = append(out, row["version"].(string)+" "+row["name"].(string))
	}
	return out
}

func tableCount(t *testing.T, client *cfapi.Client, dbID, name string) any {
	t.Helper()
	return scalar(t, client, dbID, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '"+name+"'")
}

// TestD1MigrationsBatchFailureFallsBackPerFile: the five pending files go to
// D1 in one request; a statement in the middle of the middle file fails, D1
// rolls the request back whole, and the files are applied one per request
// until the failing one, which the error names. The files before it are
// applied and recorded exactly once, nothing after it runs, and once the
// file is fixed the next update applies the rest in one request.
func TestD1MigrationsBatchFailureFallsBackPerFile(t *testing.T) {
	h := providertest.NewHarness(t)
	client, dbID := cfapitest.NewDatabase(t, h)
	u := providertest.URN(cloudflare.D1MigrationsToken, "m")

	h.Emu.ResetCounts()
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: migrationInputs(t, dbID, batchFiles)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "migration 0003_c.sql failed")
	assert.Contains(t, err.Error(), "no_such_table")
	assert.NotContains(t, err.Error(), "0004_d.sql")
	// 1 ledger create-and-read, 1 batch of five (rolled back), 1 ledger
	// read before the retry (a batch whose answer was lost may have
	// committed), 0001 and 0002 alone, 0003 alone (fails), 1 ledger read.
	assert.Equal(t, 7, h.Emu.CloudflareCalls(), "%v", h.Emu.Counts())

	assert.Equal(t, []string{"0001 0001_a.sql", "0002 0002_b.sql"}, ledgerNames(t, h, dbID), "the ledger holds exactly the files applied")
	assert.EqualValues(t, 2, scalar(t, client, dbID, "SELECT count(*) FROM a"), "0001's seed and 0002's row, once each")
	assert.EqualValues(t, 1, scalar(t, client, dbID, "SELECT count(*) FROM b"))
	assert.EqualValues(t, 0, tableCount(t, client, dbID, "c"), "the failing file's first statement was rolled back")
	assert.EqualValues(t, 0, tableCount(t, client, dbID, "d"), "nothing after the failing file ran")
	assert.Equal(t, []string{"0001", "0002"}, versions(created.Properties), "the state keeps the partial progress")
	assert.Equal(t, []string{"0003_c.sql", "0004_d.sql", "0005_e.sql"}, providertest.Strings(created.Properties.Get("pending")))

	// Fixed, the next update applies the remaining three in one request
	// that also reads the ledger back.
	fixed := withFile(batchFiles, "0003_c.sql", "CREATE TABLE c (id INTEGER PRIMARY KEY);\nINSERT INTO c (id) VALUES (1);\n")
	h.Emu.ResetCounts()
	updated, err := h.Server.Update(p.UpdateRequest{ID: dbID, Urn: u, State: created.Properties, Inputs: migrationInputs(t, dbID, fixed)})
	require.NoError(t, err)
	assert.Equal(t, 2, h.Emu.CloudflareCalls(), "ledger create-and-read, then one request for 0003-0005: %v", h.Emu.Counts())
	assert.Equal(t, []string{"0001", "0002", "0003", "0004", "0005"}, versions(updated.Properties))
	assert.Empty(t, providertest.Strings(updated.Properties.Get("pending")))
	assert.Equal(t, []string{"0001 0001_a.sql", "0002 0002_b.sql", "0003 0003_c.sql", "0004 0004_d.sql", "0005 0005_e.sql"},
		ledgerNames(t, h, dbID))
	assert.EqualValues(t, 3, scalar(t, client, dbID, "SELECT count(*) FROM a"), "0001 and 0002 did not run again")
	assert.EqualValues(t, 1, scalar(t, client, dbID, "SELECT count(*) FROM c"))
	for _, row := range updated.Properties.Get("applied").AsArray().All {
		assert.NotEmpty(t, row.AsMap().Get("appliedAt").AsString(), "the ledger read back carries applied_at")
		assert.Len(t, row.AsMap().Get("hash").AsString(), 64)
	}

	// Nothing pending: one request finds that out.
	h.Emu.ResetCounts()
	_, err = h.Server.Update(p.UpdateRequest{ID: dbID, Urn: u, State: updated.Properties, Inputs: migrationInputs(t, dbID, fixed)})
	require.NoError(t, err)
	assert.Equal(t, 1, h.Emu.CloudflareCalls())
}

// TestD1MigrationsBatchBudget: the requests respect maxFilesPerBatch and
// maxBatchBytes; a file larger than the byte budget goes alone.
func TestD1MigrationsBatchBudget(t *testing.T) {
	h := providertest.NewHarness(t)
	u := providertest.URN(cloudflare.D1MigrationsToken, "m")
	files := withFile(batchFiles, "0003_c.sql", "CREATE TABLE c (id INTEGER PRIMARY KEY);\n")
	for _, tc := range []struct {
		name   string
		budget map[string]property.Value
		calls  int
	}{
		{"defaults: one request for all five", nil, 1 + 1},
		{"two files per request", map[string]property.Value{"maxFilesPerBatch": property.New(2.0)}, 1 + 3},
		{"one file per request", map[string]property.Value{"maxFilesPerBatch": property.New(1.0)}, 1 + 5},
		// Each file with its ledger row is over 100 bytes: every one alone.
		{"byte budget below a file", map[string]property.Value{"maxBatchBytes": property.New(100.0)}, 1 + 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, dbID := cfapitest.NewDatabase(t, h)
			inputs := migrationInputs(t, dbID, files)
			for k, v := range tc.budget {
				inputs = inputs.Set(k, v)
			}
			inputs = checked(t, h, u, inputs)
			h.Emu.ResetCounts()
			created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
			require.NoError(t, err)
			assert.Equal(t, tc.calls, h.Emu.CloudflareCalls(), "%v", h.Emu.Counts())
			assert.Equal(t, []string{"0001", "0002", "0003", "0004", "0005"}, versions(created.Properties))
		})
	}
}

// TestD1MigrationsBatchBudgetChecked: a budget no request can meet is
// refused at preview, naming the field; a changed budget shows in the diff
// without anything to apply.
func TestD1MigrationsBatchBudgetChecked(t *testing.T) {
	h := providertest.NewHarness(t)
	u := providertest.URN(cloudflare.D1MigrationsToken, "m")
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: migrationInputs(t, "db", batchFiles).
		Set("maxBatchBytes", property.New(0.0)).Set("maxFilesPerBatch", property.New(-1.0))})
	require.NoError(t, err)
	require.Len(t, check.Failures, 2)
	assert.Equal(t, "maxBatchBytes", family.FailureField(check.Failures[0]))
	assert.Contains(t, check.Failures[0].Reason, "at least 1")
	assert.Equal(t, "maxFilesPerBatch", family.FailureField(check.Failures[1]))
	assert.Contains(t, check.Failures[1].Reason, "not -1")
	assert.Zero(t, h.Emu.CloudflareCalls())

	_, dbID := cfapitest.NewDatabase(t, h)
	files := withFile(batchFiles, "0003_c.sql", "CREATE TABLE c (id INTEGER PRIMARY KEY);\n")
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: checked(t, h, u, migrationInputs(t, dbID, files))})
	require.NoError(t, err)
	smaller := checked(t, h, u, migrationInputs(t, dbID, files).Set("maxFilesPerBatch", property.New(1.0)))
	diff, err := h.Server.Diff(p.DiffRequest{ID: dbID, Urn: u, State: created.Properties, Inputs: smaller})
	require.NoError(t, err)
	assert.Equal(t, map[string]p.PropertyDiff{"maxFilesPerBatch": {Kind: p.Update, InputDiff: true}}, diff.DetailedDiff)
}

// TestD1MigrationsUpstreamSizedSetInFewRequests: the 66-file set the
// benchmarks use applies to an empty database in at most 6 requests
// (wrangler makes 68), each file recorded once.
func TestD1MigrationsUpstreamSizedSetInFewRequests(t *testing.T) {
	h := providertest.NewHarness(t)
	client, dbID := cfapitest.NewDatabase(t, h)
	files := migrationset.Files()
	require.Len(t, files, 66)
	h.Emu.ResetCounts()
	created, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.D1MigrationsToken, "m"), Properties: migrationInputs(t, dbID, files)})
	require.NoError(t, err)
	calls := h.Emu.CloudflareCalls()
	t.Logf("66 files in %d requests", calls)
	assert.LessOrEqual(t, calls, 6)
	assert.Equal(t, 66.0, created.Properties.Get("appliedCount").AsNumber())
	assert.EqualValues(t, 66, scalar(t, client, dbID, "SELECT count(DISTINCT version) FROM _schema_migrations"))
	// The triggers survived whole.
	assert.EqualValues(t, len(migrationset.TriggerVersions), scalar(t, client, dbID,
		"SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"))
}

// TestD1MigrationsBatchOpenComment: a file ending inside a /* comment (which
// SQLite lets run to the end of the text) does not swallow its ledger row or
// the next file of its batch.
func TestD1MigrationsBatchOpenComment(t *testing.T) {
	h := providertest.NewHarness(t)
	client, dbID := cfapitest.NewDatabase(t, h)
	files := map[string]string{
		"0001_open.sql": "CREATE TABLE x (id INTEGER);\n/* a note that is never closed; CREATE TABLE never_made (id INTEGER);",
		"0002_next.sql": "CREATE TABLE y (id INTEGER)",
	}
	h.Emu.ResetCounts()
	created, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.D1MigrationsToken, "m"), Properties: migrationInputs(t, dbID, files)})
	require.NoError(t, err)
	assert.Equal(t, 2, h.Emu.CloudflareCalls())
	assert.Equal(t, []string{"0001", "0002"}, versions(created.Properties))
	assert.EqualValues(t, 1, tableCount(t, client, dbID, "y"))
	assert.EqualValues(t, 0, tableCount(t, client, dbID, "never_made"), "the comment stayed a comment")
}
