package emulator_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/d1"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

func createDB(t *testing.T, c *cloudflare.Client, name string) *d1.D1 {
	t.Helper()
	db, err := c.D1.Database.New(context.Background(), d1.DatabaseNewParams{
		AccountID: cloudflare.F(acct), Name: cloudflare.F(name),
	})
	require.NoError(t, err)
	return db
}

// query runs sql through the SDK's Query and returns each statement's rows.
func query(t *testing.T, c *cloudflare.Client, dbID, sql string, opts ...option.RequestOption) [][]map[string]any {
	t.Helper()
	page, err := c.D1.Database.Query(context.Background(), dbID, d1.DatabaseQueryParams{
		AccountID: cloudflare.F(acct), Sql: cloudflare.F(sql),
	}, opts...)
	require.NoError(t, err)
	var out [][]map[string]any
	for _, res := range page.Result {
		require.True(t, res.Success)
		rows := []map[string]any{}
		for _, r := range res.Results {
			rows = append(rows, r.(map[string]any))
		}
		out = append(out, rows)
	}
	return out
}

func TestD1Lifecycle(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()

	db := createDB(t, c, "lifecycle")
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, db.UUID)
	assert.Equal(t, "lifecycle", db.Name)
	assert.Equal(t, "production", db.Version)
	assert.Equal(t, d1.D1ReadReplicationModeDisabled, db.ReadReplication.Mode)
	assert.False(t, db.CreatedAt.IsZero(), "created_at parses as a time")
	assert.Zero(t, db.NumTables)

	query(t, c, db.UUID, "CREATE TABLE a(x); CREATE TABLE b(y)")
	got, err := c.D1.Database.Get(ctx, db.UUID, d1.DatabaseGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Equal(t, db.UUID, got.UUID)
	assert.EqualValues(t, 2, got.NumTables, "num_tables comes from the SQLite file")
	assert.Positive(t, got.FileSize)

	_, err = c.D1.Database.Delete(ctx, db.UUID, d1.DatabaseDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	_, err = c.D1.Database.Get(ctx, db.UUID, d1.DatabaseGetParams{AccountID: cloudflare.F(acct)})
	apiErr := requireAPIError(t, err, http.StatusNotFound, 7404)
	assert.Contains(t, apiErr.Errors[0].Message, db.UUID)
	_, err = c.D1.Database.Delete(ctx, db.UUID, d1.DatabaseDeleteParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 7404)
	_, err = c.D1.Database.Query(ctx, db.UUID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct), Sql: cloudflare.F("SELECT 1")})
	requireAPIError(t, err, http.StatusNotFound, 7404)
	assert.True(t, s.Inventory().Empty())
}

func TestD1ListPaginates(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	want := map[string]bool{}
	for i := range 5 {
		name := fmt.Sprintf("db-%d", i)
		createDB(t, c, name)
		want[name] = true
	}

	// The auto-pager asks for page+1 until a page is empty; it must stop.
	pager := c.D1.Database.ListAutoPaging(ctx, d1.DatabaseListParams{AccountID: cloudflare.F(acct), PerPage: cloudflare.F(2.0)})
	seen := map[string]bool{}
	for n := 1; pager.Next(); n++ {
		seen[pager.Current().Name] = true
		require.LessOrEqual(t, n, 5, "pager did not terminate or repeated items")
	}
	require.NoError(t, pager.Err())
	assert.Equal(t, want, seen)
	list := "GET /client/v4/accounts/{account_id}/d1/database"
	assert.Equal(t, 4, s.Counts()[list], "pages 1-3 plus the empty page 4")

	// What a provider does to find a database by name.
	pager = c.D1.Database.ListAutoPaging(ctx, d1.DatabaseListParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("db-3")})
	var found []string
	for pager.Next() {
		found = append(found, pager.Current().Name)
		require.LessOrEqual(t, len(found), 1, "pager did not terminate")
	}
	require.NoError(t, pager.Err())
	assert.Equal(t, []string{"db-3"}, found)

	page, err := c.D1.Database.List(ctx, d1.DatabaseListParams{AccountID: cloudflare.F(acct), Page: cloudflare.F(9.0)})
	require.NoError(t, err)
	assert.Empty(t, page.Result, "a page past the end is empty, not an error")
	assert.EqualValues(t, 9, page.ResultInfo.Page)
}

func TestD1CreateValidation(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	createDB(t, c, "taken")
	_, err := c.D1.Database.New(context.Background(), d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("taken")})
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 7502)
	assert.Contains(t, apiErr.Errors[0].Message, "already exists")

	for _, name := range []string{"", "bad name!", strings.Repeat("x", 65), "semi;colon"} {
		_, err := c.D1.Database.New(context.Background(), d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F(name)})
		apiErr := requireAPIError(t, err, http.StatusBadRequest, 7400)
		assert.Contains(t, apiErr.Errors[0].Message, "name", "name %q", name)
	}
	_, err = c.D1.Database.New(context.Background(), d1.DatabaseNewParams{AccountID: cloudflare.F(acct),
		Name: cloudflare.F("hinted"), PrimaryLocationHint: cloudflare.F(d1.DatabaseNewParamsPrimaryLocationHint("mars"))})
	requireAPIError(t, err, http.StatusBadRequest, 7400)
	assert.Len(t, s.Inventory().D1, 1, "failed creates leave nothing behind")
}

func TestD1QueryAndRawWithParams(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	db := createDB(t, c, "params")
	query(t, c, db.UUID, "CREATE TABLE t(id INTEGER PRIMARY KEY, n, s TEXT, at DATETIME, b BLOB)")

	// The SDK types params as strings; WithJSONSet sends real JSON numbers
	// and null, as D1 accepts them.
	res := query(t, c, db.UUID, "INSERT INTO t(n, s, at, b) VALUES (?, ?, ?, x'00ff') RETURNING id, typeof(n) AS tn, typeof(s) AS ts",
		option.WithJSONSet("params", []any{1, nil, "2024-01-02 03:04:05"}))
	require.Len(t, res, 1)
	assert.Equal(t, []map[string]any{{"id": 1.0, "tn": "integer", "ts": "null"}}, res[0])

	page, err := c.D1.Database.Query(ctx, db.UUID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct),
		Sql: cloudflare.F("INSERT INTO t(n, s) VALUES (?, ?)")}, option.WithJSONSet("params", []any{2.5, "x"}))
	require.NoError(t, err)
	meta := page.Result[0].Meta
	assert.EqualValues(t, 1, meta.Changes)
	assert.EqualValues(t, 2, meta.LastRowID)
	assert.True(t, meta.ChangedDB)
	assert.Positive(t, meta.SizeAfter)

	rows := query(t, c, db.UUID, "SELECT * FROM t WHERE s = ? OR id = ? ORDER BY id", option.WithJSONSet("params", []any{"x", 1}))[0]
	require.Len(t, rows, 2)
	// DATETIME text comes back verbatim, the way D1 stores it.
	assert.Equal(t, map[string]any{"id": 1.0, "n": 1.0, "s": nil, "at": "2024-01-02 03:04:05", "b": []any{0.0, 255.0}}, rows[0])
	assert.Equal(t, map[string]any{"id": 2.0, "n": 2.5, "s": "x", "at": nil, "b": nil}, rows[1])

	raw, err := c.D1.Database.Raw(ctx, db.UUID, d1.DatabaseRawParams{AccountID: cloudflare.F(acct),
		Sql: cloudflare.F("SELECT id, s FROM t WHERE id > ? ORDER BY id; SELECT count(*) AS c FROM t")},
		option.WithJSONSet("params", []any{0}))
	require.NoError(t, err)
	require.Len(t, raw.Result, 2)
	assert.Equal(t, []string{"id", "s"}, raw.Result[0].Results.Columns)
	assert.Equal(t, [][]any{{1.0, nil}, {2.0, "x"}}, raw.Result[0].Results.Rows)
	assert.Equal(t, [][]any{{2.0}}, raw.Result[1].Results.Rows)

	// String params through the SDK's own typed field.
	page, err = c.D1.Database.Query(ctx, db.UUID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct),
		Sql: cloudflare.F("SELECT ? || ? AS v"), Params: cloudflare.F([]string{"a", "b"})})
	require.NoError(t, err)
	assert.Equal(t, "ab", page.Result[0].Results[0].(map[string]any)["v"])

	_, err = c.D1.Database.Query(ctx, db.UUID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct),
		Sql: cloudflare.F("SELECT ?, ?")}, option.WithJSONSet("params", []any{1}))
	requireAPIError(t, err, http.StatusBadRequest, 7500)
}

// A migration file as wrangler would send it: a trigger whose body has
// semicolons, a string literal and comments containing ';'.
const migration = `-- 0001_init.sql; creates things
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL, updated TEXT);
CREATE TABLE audit (note_id INTEGER, what TEXT);
/* the trigger keeps an audit trail; it has two statements */
CREATE TRIGGER notes_audit AFTER INSERT ON notes
BEGIN
  INSERT INTO audit(note_id, what) VALUES (new.id, 'insert; with semicolon');
  UPDATE notes SET updated = 'yes;' WHERE id = new.id;
END;
INSERT INTO notes(body) VALUES ('first; not a separator'), ('it''s -- not a comment; really');
;;
-- trailing comment only; nothing to run`

func TestD1MultiStatementMigration(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	db := createDB(t, c, "migrations")
	res := query(t, c, db.UUID, migration)
	require.Len(t, res, 4, "four statements; empty statements and the comment tail are skipped")

	rows := query(t, c, db.UUID, "SELECT n.body, n.updated, a.what FROM notes n JOIN audit a ON a.note_id = n.id ORDER BY n.id")[0]
	assert.Equal(t, []map[string]any{
		{"body": "first; not a separator", "updated": "yes;", "what": "insert; with semicolon"},
		{"body": "it's -- not a comment; really", "updated": "yes;", "what": "insert; with semicolon"},
	}, rows)
}

func TestD1RequestIsAtomic(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	db := createDB(t, c, "atomic")
	query(t, c, db.UUID, "CREATE TABLE kept(x)")

	_, err := c.D1.Database.Query(ctx, db.UUID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct),
		Sql: cloudflare.F("CREATE TABLE gone(x); INSERT INTO kept VALUES (1); FOO BAR; INSERT INTO kept VALUES (2)")})
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 7500)
	assert.Contains(t, apiErr.Errors[0].Message, `near "FOO": syntax error`)
	assert.True(t, strings.HasSuffix(apiErr.Errors[0].Message, ": SQLITE_ERROR"), apiErr.Errors[0].Message)

	rows := query(t, c, db.UUID, "SELECT count(*) AS n FROM kept; SELECT count(*) AS n FROM sqlite_schema WHERE name = 'gone'")
	assert.Equal(t, 0.0, rows[0][0]["n"], "the INSERT before the failure was rolled back")
	assert.Equal(t, 0.0, rows[1][0]["n"], "the CREATE before the failure was rolled back")

	// A constraint failure mid-request is reported with its SQLite code.
	query(t, c, db.UUID, "CREATE TABLE u(id INTEGER PRIMARY KEY)")
	_, err = c.D1.Database.Query(ctx, db.UUID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct),
		Sql: cloudflare.F("INSERT INTO u VALUES (1); INSERT INTO u VALUES (1)")})
	apiErr = requireAPIError(t, err, http.StatusBadRequest, 7500)
	assert.Equal(t, "UNIQUE constraint failed: u.id: SQLITE_CONSTRAINT", apiErr.Errors[0].Message)
	assert.Equal(t, 0.0, query(t, c, db.UUID, "SELECT count(*) AS n FROM u")[0][0]["n"])
}

func TestD1RejectsTransactionStatements(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	db := createDB(t, c, "tx")
	query(t, c, db.UUID, "CREATE TABLE t(x)")
	for _, sql := range []string{
		"BEGIN; INSERT INTO t VALUES (1); COMMIT;",
		"INSERT INTO t VALUES (1); BEGIN TRANSACTION",
		"SAVEPOINT a",
		"/* sneaky */ COMMIT",
		"ATTACH DATABASE '/tmp/x.db' AS x",
	} {
		_, err := c.D1.Database.Query(context.Background(), db.UUID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct), Sql: cloudflare.F(sql)})
		apiErr := requireAPIError(t, err, http.StatusBadRequest, 7500)
		assert.Contains(t, apiErr.Errors[0].Message, "SQLITE_AUTH", sql)
	}
	assert.Equal(t, 0.0, query(t, c, db.UUID, "SELECT count(*) AS n FROM t")[0][0]["n"])
	// PRAGMAs are fine, including the ones D1 migrations use.
	res := query(t, c, db.UUID, "PRAGMA defer_foreign_keys = on; PRAGMA table_info(t)")
	assert.Equal(t, "x", res[1][0]["name"])
}

func TestD1ForeignKeysEnforced(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	db := createDB(t, c, "fk")
	query(t, c, db.UUID, "CREATE TABLE p(id INTEGER PRIMARY KEY); CREATE TABLE ch(p INTEGER REFERENCES p(id))")
	_, err := c.D1.Database.Query(context.Background(), db.UUID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct),
		Sql: cloudflare.F("INSERT INTO ch VALUES (42)")})
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 7500)
	assert.Contains(t, apiErr.Errors[0].Message, "FOREIGN KEY constraint failed")
}

func TestD1ConcurrentRequests(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	db := createDB(t, c, "busy")
	query(t, c, db.UUID, "CREATE TABLE n(v INTEGER)")
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := c.D1.Database.Query(context.Background(), db.UUID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct),
				Sql: cloudflare.F("INSERT INTO n VALUES (?); INSERT INTO n VALUES (?)")}, option.WithJSONSet("params", []any{i}))
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := c.D1.Database.New(context.Background(), d1.DatabaseNewParams{AccountID: cloudflare.F(acct),
				Name: cloudflare.F(fmt.Sprintf("par-%d", i))})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, 40.0, query(t, c, db.UUID, "SELECT count(*) AS n FROM n")[0][0]["n"])
	assert.Len(t, s.Inventory().D1, 21)
}
