package cloudflare_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapitest"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// Fixture migrations written for these tests: a trigger with inner
// semicolons, a PRAGMA, and a string literal holding a semicolon.
var fixtureMigrations = map[string]string{
	"0001_sessions.sql": `-- sessions; the core table
CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT NOT NULL, updated INTEGER NOT NULL DEFAULT 0);
CREATE TABLE session_events (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, note TEXT);
`,
	"0002_touch_trigger.sql": `PRAGMA foreign_keys = ON;
CREATE TRIGGER sessions_touch AFTER INSERT ON session_events
BEGIN
  UPDATE sessions SET updated = updated + 1 WHERE id = NEW.session_id;
  INSERT INTO session_events (session_id, note) SELECT NEW.session_id, 'touched; by trigger' WHERE NEW.note IS NOT 'touched; by trigger';
END;
`,
	"0005_seed.sql": "INSERT INTO sessions (id, title) VALUES ('s1', 'first; session');\nINSERT INTO session_events (session_id, note) VALUES ('s1', 'hello')",
}

func migrationInputs(t testing.TB, dbID string, files map[string]string) property.Map {
	t.Helper()
	m := map[string]property.Value{}
	for k, v := range files {
		m[k] = property.New(v)
	}
	return property.NewMap(map[string]property.Value{
		"databaseId": property.New(dbID),
		"migrations": property.New(m),
	})
}

func withFile(base map[string]string, name, sql string) map[string]string {
	out := map[string]string{name: sql}
	for k, v := range base {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

func scalar(t *testing.T, client *cfapi.Client, dbID, sql string) any {
	t.Helper()
	res, err := client.Query(t.Context(), dbID, sql)
	require.NoError(t, err)
	require.NotEmpty(t, res)
	require.NotEmpty(t, res[0].Rows, sql)
	for _, v := range res[0].Rows[0] {
		return v
	}
	return nil
}

func versions(props property.Map) []string {
	var out []string
	for _, row := range props.Get("applied").AsArray().All {
		out = append(out, row.AsMap().Get("version").AsString())
	}
	return out
}

// migrationsOnNewDatabase is a harness, a new database in its emulator (and
// a client of it), and the URN and inputs of a D1Migrations resource named
// name applying fixtureMigrations to that database.
func migrationsOnNewDatabase(t *testing.T, name string) (*providertest.Harness, *cfapi.Client, string, resource.URN, property.Map) {
	t.Helper()
	h := providertest.NewHarness(t)
	client, dbID := cfapitest.NewDatabase(t, h)
	return h, client, dbID, providertest.URN(cloudflare.D1MigrationsToken, name), migrationInputs(t, dbID, fixtureMigrations)
}

func TestD1MigrationsApplyInOrderWithLedger(t *testing.T) {
	h, client, dbID, u, inputs := migrationsOnNewDatabase(t, "migrations")

	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)

	assert.Len(t, check.Inputs.Get("files").AsMap().AsMap(), 3, "Check records each file's hash")

	// The database exists before its migrations: the create's preview reads
	// its ledger (none yet) and lists every file, known.
	h.Emu.ResetCounts()
	preview, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs, DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, 1, h.Emu.CloudflareCalls(), "one look for the ledger, nothing written")
	require.False(t, preview.Properties.Get("pending").IsComputed())
	assert.Equal(t, []string{"0001_sessions.sql", "0002_touch_trigger.sql", "0005_seed.sql"}, providertest.Strings(preview.Properties.Get("pending")))
	assert.Equal(t, 3.0, preview.Properties.Get("appliedCount").AsNumber())
	assert.Equal(t, "0005", preview.Properties.Get("latestVersion").AsString())
	assert.EqualValues(t, 0, scalar(t, client, dbID, "SELECT count(*) FROM sqlite_master WHERE name = '_schema_migrations'"),
		"the preview created no ledger")

	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	assert.Equal(t, dbID, created.ID)
	assert.Equal(t, []string{"0001", "0002", "0005"}, versions(created.Properties))
	assert.Equal(t, 3.0, created.Properties.Get("appliedCount").AsNumber())
	assert.Equal(t, "0005", created.Properties.Get("latestVersion").AsString())
	// The trigger survived whole: the seed's event insert fired it.
	assert.EqualValues(t, 1, scalar(t, client, dbID, "SELECT updated FROM sessions WHERE id = 's1'"))
	assert.EqualValues(t, "first; session", scalar(t, client, dbID, "SELECT title FROM sessions WHERE id = 's1'"))
	assert.EqualValues(t, "0002_touch_trigger.sql", scalar(t, client, dbID, "SELECT name FROM _schema_migrations WHERE version = '0002'"))

	// Unchanged: no diff, and no call to find that out.
	h.Emu.ResetCounts()
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges)
	assert.Zero(t, h.Emu.CloudflareCalls())

	// A new file shows as pending in the diff, then applies alone.
	more := checked(t, h, u, migrationInputs(t, dbID, withFile(fixtureMigrations, "0006_index.sql", "CREATE INDEX idx_events ON session_events(session_id);")))
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: more})
	require.NoError(t, err)
	assert.True(t, diff.HasChanges)
	assert.Equal(t, map[string]p.PropertyDiff{`files["0006_index.sql"]`: {Kind: p.Add, InputDiff: true}}, diff.DetailedDiff)
	h.Emu.ResetCounts()
	previewed, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: more, DryRun: true})
	require.NoError(t, err)
	assert.Zero(t, h.Emu.CloudflareCalls(), "an update's preview plans from state")
	assert.Equal(t, []string{"0006_index.sql"}, providertest.Strings(previewed.Properties.Get("pending")))
	assert.Equal(t, 4.0, previewed.Properties.Get("appliedCount").AsNumber())
	assert.Equal(t, "0006", previewed.Properties.Get("latestVersion").AsString())
	assert.False(t, previewed.Properties.Get("changed").IsComputed())
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: more})
	require.NoError(t, err)
	assert.Equal(t, []string{"0001", "0002", "0005", "0006"}, versions(updated.Properties))
	assert.Empty(t, providertest.Strings(updated.Properties.Get("pending")))
}

func TestD1MigrationsFailingFileIsAtomicAndNamed(t *testing.T) {
	h := providertest.NewHarness(t)
	client, dbID := cfapitest.NewDatabase(t, h)
	u := providertest.URN(cloudflare.D1MigrationsToken, "migrations")
	files := withFile(fixtureMigrations, "0003_broken.sql",
		"CREATE TABLE half_done (id INTEGER);\nALTER TABLE no_such_table ADD COLUMN x TEXT;\n")

	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: migrationInputs(t, dbID, files)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "0003_broken.sql")
	assert.Contains(t, err.Error(), "no_such_table")
	// Partial progress is kept in state so the next up continues.
	assert.Equal(t, []string{"0001", "0002"}, versions(created.Properties))
	assert.EqualValues(t, 0, scalar(t, client, dbID, "SELECT count(*) FROM sqlite_master WHERE name = 'half_done'"),
		"the failing file's first statement was rolled back")
	assert.EqualValues(t, 2, scalar(t, client, dbID, "SELECT count(*) FROM _schema_migrations"))

	// Fixing the file lets the next update finish the job.
	fixed := migrationInputs(t, dbID, withFile(fixtureMigrations, "0003_broken.sql", "CREATE TABLE half_done (id INTEGER);"))
	updated, err := h.Server.Update(p.UpdateRequest{ID: dbID, Urn: u, State: created.Properties, Inputs: fixed})
	require.NoError(t, err)
	assert.Equal(t, []string{"0001", "0002", "0003", "0005"}, versions(updated.Properties))
}

func TestD1MigrationsChangedAppliedFileIsReported(t *testing.T) {
	h := providertest.NewHarness(t)
	client, dbID := cfapitest.NewDatabase(t, h)
	u := providertest.URN(cloudflare.D1MigrationsToken, "migrations")
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: migrationInputs(t, dbID, fixtureMigrations)})
	require.NoError(t, err)

	edited := checked(t, h, u, migrationInputs(t, dbID,
		withFile(fixtureMigrations, "0001_sessions.sql", "-- a comment added upstream\n"+fixtureMigrations["0001_sessions.sql"])))
	diff, err := h.Server.Diff(p.DiffRequest{ID: dbID, Urn: u, State: created.Properties, Inputs: edited})
	require.NoError(t, err)
	assert.Equal(t, map[string]p.PropertyDiff{`files["0001_sessions.sql"]`: {Kind: p.Update, InputDiff: true}}, diff.DetailedDiff)
	previewed, err := h.Server.Update(p.UpdateRequest{ID: dbID, Urn: u, State: created.Properties, Inputs: edited, DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"0001_sessions.sql"}, providertest.Strings(previewed.Properties.Get("changed")), "known in preview")
	assert.Empty(t, providertest.Strings(previewed.Properties.Get("pending")))
	updated, err := h.Server.Update(p.UpdateRequest{ID: dbID, Urn: u, State: created.Properties, Inputs: edited})
	require.NoError(t, err, "a changed applied file is not fatal")
	assert.Equal(t, []string{"0001_sessions.sql"}, providertest.Strings(updated.Properties.Get("changed")))
	assert.EqualValues(t, 3, scalar(t, client, dbID, "SELECT count(*) FROM _schema_migrations"), "nothing re-applied")

	// Once reported, the same content is quiet.
	diff, err = h.Server.Diff(p.DiffRequest{ID: dbID, Urn: u, State: updated.Properties, Inputs: edited})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges)

	// Put back as it was applied, the file is named again and leaves `changed`.
	restored := checked(t, h, u, migrationInputs(t, dbID, fixtureMigrations))
	diff, err = h.Server.Diff(p.DiffRequest{ID: dbID, Urn: u, State: updated.Properties, Inputs: restored})
	require.NoError(t, err)
	assert.Equal(t, map[string]p.PropertyDiff{`files["0001_sessions.sql"]`: {Kind: p.Update, InputDiff: true}}, diff.DetailedDiff)
}

// checked runs inputs through Check, as the engine does before Diff.
func checked(t *testing.T, h *providertest.Harness, u resource.URN, inputs property.Map) property.Map {
	t.Helper()
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	return check.Inputs
}

// elided is inputs as the engine hands them to Diff: an archive carries
// only its hash. In process, Check returns the archive in its wire form (a
// map with the archive signature); over gRPC the engine decodes it.
func elided(inputs property.Map) property.Map {
	dir := inputs.Get("directory")
	var hash string
	if dir.IsArchive() {
		hash = dir.AsArchive().Hash
	} else {
		hash = dir.AsMap().Get("hash").AsString()
	}
	return inputs.Set("directory", property.New(&resource.Archive{Hash: hash}))
}

// TestD1MigrationsPreviewFromDirectory: with a migrations directory, the
// engine's Diff sees the archive's hash alone; the diff still names each new
// file (from what Check recorded), and a renumbered or removed applied file
// is refused at preview, naming the files, without a call.
func TestD1MigrationsPreviewFromDirectory(t *testing.T) {
	h := providertest.NewHarness(t)
	_, dbID := cfapitest.NewDatabase(t, h)
	u := providertest.URN(cloudflare.D1MigrationsToken, "m")
	dir := t.TempDir()
	write := func(name, sql string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(sql), 0o600))
	}
	for name, sql := range fixtureMigrations {
		write(name, sql)
	}
	inputs := func() property.Map {
		archive, err := resource.NewPathArchive(dir)
		require.NoError(t, err)
		return checked(t, h, u, property.NewMap(map[string]property.Value{
			"databaseId": property.New(dbID),
			"directory":  property.New(archive),
		}))
	}
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs()})
	require.NoError(t, err)

	write("0007_labels.sql", "CREATE TABLE labels (id INTEGER);")
	write("0006_index.sql", "CREATE INDEX idx_events ON session_events(session_id);")
	write("0002_touch_trigger.sql", "-- edited\n"+fixtureMigrations["0002_touch_trigger.sql"])
	next := inputs()
	h.Emu.ResetCounts()
	diff, err := h.Server.Diff(p.DiffRequest{ID: dbID, Urn: u, State: created.Properties, Inputs: elided(next)})
	require.NoError(t, err)
	assert.Equal(t, map[string]p.PropertyDiff{
		`files["0006_index.sql"]`:         {Kind: p.Add, InputDiff: true},
		`files["0007_labels.sql"]`:        {Kind: p.Add, InputDiff: true},
		`files["0002_touch_trigger.sql"]`: {Kind: p.Update, InputDiff: true},
	}, diff.DetailedDiff)
	previewed, err := h.Server.Update(p.UpdateRequest{ID: dbID, Urn: u, State: created.Properties, Inputs: next, DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"0006_index.sql", "0007_labels.sql"}, providertest.Strings(previewed.Properties.Get("pending")), "in apply order")
	assert.Equal(t, []string{"0002_touch_trigger.sql"}, providertest.Strings(previewed.Properties.Get("changed")))
	assert.Zero(t, h.Emu.CloudflareCalls())
	updated, err := h.Server.Update(p.UpdateRequest{ID: dbID, Urn: u, State: created.Properties, Inputs: next})
	require.NoError(t, err)
	assert.Equal(t, []string{"0001", "0002", "0005", "0006", "0007"}, versions(updated.Properties))

	// Renumbered: 0007 becomes 0008 under the same content.
	require.NoError(t, os.Rename(filepath.Join(dir, "0007_labels.sql"), filepath.Join(dir, "0008_labels.sql")))
	h.Emu.ResetCounts()
	_, err = h.Server.Diff(p.DiffRequest{ID: dbID, Urn: u, State: updated.Properties, Inputs: elided(inputs())})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "0007_labels.sql was applied and is no longer in the migrations, and 0008_labels.sql has its content")
	// Removed outright.
	require.NoError(t, os.Remove(filepath.Join(dir, "0008_labels.sql")))
	_, err = h.Server.Diff(p.DiffRequest{ID: dbID, Urn: u, State: updated.Properties, Inputs: elided(inputs())})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "0007_labels.sql was applied and is no longer in the migrations; restore it")
	// Another file under an applied version.
	write("0007_other.sql", "SELECT 1;")
	_, err = h.Server.Diff(p.DiffRequest{ID: dbID, Urn: u, State: updated.Properties, Inputs: elided(inputs())})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "0007_other.sql (ledger has 0007_labels.sql)")
	assert.Zero(t, h.Emu.CloudflareCalls(), "refused from state")
}

// A database the upstream script already migrated is continued, not redone.
func TestD1MigrationsContinueUpstreamLedger(t *testing.T) {
	h := providertest.NewHarness(t)
	client, dbID := cfapitest.NewDatabase(t, h)
	// The ledger as upstream's migration script creates it, written out here
	// rather than taken from the provider, so the test proves compatibility.
	upstreamLedger := `CREATE TABLE IF NOT EXISTS _schema_migrations (
  version TEXT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (datetime('now')));`
	_, err := client.Query(t.Context(), dbID, upstreamLedger+"\n"+fixtureMigrations["0001_sessions.sql"]+
		"\nINSERT INTO _schema_migrations (version, name) VALUES ('0001', '0001_sessions.sql');")
	require.NoError(t, err)

	created, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.D1MigrationsToken, "m"), Properties: migrationInputs(t, dbID, fixtureMigrations)})
	require.NoError(t, err)
	assert.Equal(t, []string{"0001", "0002", "0005"}, versions(created.Properties))

	// A version the ledger holds under another name is refused.
	renumbered := withFile(fixtureMigrations, "0005_other.sql", "SELECT 1;")
	delete(renumbered, "0005_seed.sql")
	_, err = h.Server.Update(p.UpdateRequest{ID: dbID, Urn: providertest.URN(cloudflare.D1MigrationsToken, "m"), State: created.Properties,
		Inputs: migrationInputs(t, dbID, renumbered)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "0005_other.sql (ledger has 0005_seed.sql)")
}

func TestD1MigrationsRefreshSeesOutOfBandLedger(t *testing.T) {
	h, client, dbID, u, inputs := migrationsOnNewDatabase(t, "m")
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	_, err = client.Query(t.Context(), dbID, "DELETE FROM _schema_migrations WHERE version = '0005'")
	require.NoError(t, err)

	read, err := h.Server.Read(p.ReadRequest{ID: dbID, Urn: u, Properties: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.Equal(t, []string{"0001", "0002"}, versions(read.Properties))
	diff, err := h.Server.Diff(p.DiffRequest{ID: dbID, Urn: u, State: read.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.Contains(t, diff.DetailedDiff, `files["0005_seed.sql"]`)

	// Import by database ID reads the ledger too.
	imported, err := h.Server.Read(p.ReadRequest{ID: dbID, Urn: u})
	require.NoError(t, err)
	assert.Equal(t, 2.0, imported.Properties.Get("appliedCount").AsNumber())
}

func TestD1MigrationsFromDirectoryArchive(t *testing.T) {
	h := providertest.NewHarness(t)
	_, dbID := cfapitest.NewDatabase(t, h)
	dir := t.TempDir()
	for name, sql := range fixtureMigrations {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(sql), 0o600))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("not a migration"), 0o600))
	archive, err := resource.NewPathArchive(dir)
	require.NoError(t, err)
	inputs := property.NewMap(map[string]property.Value{
		"databaseId": property.New(dbID),
		"directory":  property.New(archive),
	})
	created, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.D1MigrationsToken, "m"), Properties: inputs})
	require.NoError(t, err)
	assert.Equal(t, []string{"0001", "0002", "0005"}, versions(created.Properties))
}

func TestD1MigrationsCheckNamesBadFiles(t *testing.T) {
	h := providertest.NewHarness(t)
	check, err := h.Server.Check(p.CheckRequest{Urn: providertest.URN(cloudflare.D1MigrationsToken, "m"), Inputs: migrationInputs(t, "db",
		map[string]string{"0001_a.sql": "SELECT 1;", "0001_b.sql": "SELECT 2;", "setup.sql": "SELECT 3;"})})
	require.NoError(t, err)
	require.Len(t, check.Failures, 2)
	assert.Equal(t, "migrations", family.FailureField(check.Failures[0]))
	assert.Contains(t, check.Failures[0].Reason, "0001_a.sql, 0001_b.sql")
	assert.Contains(t, check.Failures[1].Reason, "setup.sql")
	assert.Zero(t, h.Emu.CloudflareCalls())
}

// TestD1MigrationsRefusesAnotherAccount: the state records the account, and a
// provider configured for another one refuses to refresh or delete instead
// of reading the database as gone and dropping it from state.
func TestD1MigrationsRefusesAnotherAccount(t *testing.T) {
	const other = "ffffffffffffffffffffffffffffffff"
	h, _, dbID, u, inputs := migrationsOnNewDatabase(t, "migrations")
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	assert.Equal(t, emulator.DefaultAccountID, created.Properties.Get("accountId").AsString())

	moved := providertest.NewServer(t)
	require.NoError(t, moved.Configure(p.ConfigureRequest{Args: property.NewMap(map[string]property.Value{
		"cloudflareApiToken":   property.New(emulator.DefaultToken).WithSecret(true),
		"cloudflareAccountId":  property.New(other),
		"cloudflareApiBaseUrl": property.New(h.Emu.CloudflareBaseURL()),
	})}))
	h.Emu.ResetCounts()
	_, err = moved.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: created.Properties, Inputs: inputs})
	require.Error(t, err, "refresh is refused, not read as gone")
	assert.Contains(t, err.Error(), emulator.DefaultAccountID)
	assert.Contains(t, err.Error(), other)
	err = moved.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties})
	require.Error(t, err)
	assert.Contains(t, err.Error(), emulator.DefaultAccountID)
	assert.Contains(t, err.Error(), other)
	_, err = moved.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties,
		Inputs: migrationInputs(t, dbID, withFile(fixtureMigrations, "0006_more.sql", "CREATE TABLE more (id INTEGER);"))})
	require.Error(t, err)
	assert.Contains(t, err.Error(), other)
	assert.Zero(t, h.Emu.CloudflareCalls(), "nothing is asked of the other account")

	// The provider configured for the recorded account still refreshes it.
	read, err := h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.Equal(t, dbID, read.ID)
	assert.Equal(t, []string{"0001", "0002", "0005"}, versions(read.Properties))
}

// TestD1MigrationsStateWithoutAccount: state written before the account was
// recorded refreshes, updates and deletes as before, and a refresh records
// the account.
func TestD1MigrationsStateWithoutAccount(t *testing.T) {
	h, _, dbID, u, inputs := migrationsOnNewDatabase(t, "migrations")
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	old := created.Properties.Delete("accountId")

	read, err := h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: old, Inputs: inputs})
	require.NoError(t, err)
	assert.Equal(t, dbID, read.ID)
	assert.Equal(t, []string{"0001", "0002", "0005"}, versions(read.Properties))
	assert.Equal(t, emulator.DefaultAccountID, read.Properties.Get("accountId").AsString())

	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: old,
		Inputs: migrationInputs(t, dbID, withFile(fixtureMigrations, "0006_more.sql", "CREATE TABLE more (id INTEGER);"))})
	require.NoError(t, err)
	assert.Equal(t, []string{"0001", "0002", "0005", "0006"}, versions(updated.Properties))
	assert.Equal(t, emulator.DefaultAccountID, updated.Properties.Get("accountId").AsString())

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: old}))
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}))
	require.Len(t, h.Emu.Inventory().D1, 1, "deleting the migrations leaves the database")
}
