package cloudflare

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseMigrationsOrdersAndValidates(t *testing.T) {
	files, problems := parseMigrations(map[string]string{
		"0002_b.sql":  "B;",
		"0001_a.sql":  "A;",
		"0010_c.sql":  "C;",
		"README.md":   "ignored",
		"9_short.sql": "D;",
	})
	assert.Empty(t, problems)
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"0001_a.sql", "0002_b.sql", "9_short.sql", "0010_c.sql"}, names)
	assert.Equal(t, "0001", files[0].Version, "the prefix keeps its zeros")
	assert.Len(t, files[0].Hash, 64)
}

func TestParseMigrationsNamesBadFiles(t *testing.T) {
	_, problems := parseMigrations(map[string]string{
		"0001_a.sql":     "A;",
		"0001_again.sql": "B;",
		"init.sql":       "C;",
	})
	assert.Len(t, problems, 2)
	assert.Equal(t, "0001_a.sql, 0001_again.sql", problems[0].File)
	assert.Contains(t, problems[0].Reason, "0001")
	assert.Equal(t, "init.sql", problems[1].File)
	assert.Contains(t, problems[1].Reason, "numeric prefix")
}

func TestWithLedgerInsertKeepsTheFileWhole(t *testing.T) {
	trigger := "CREATE TRIGGER t AFTER INSERT ON x BEGIN UPDATE y SET n = n + 1; SELECT ';'; END;\n-- trailing comment\n"
	got := withLedgerInsert(migrationFile{Version: "0003", Name: "0003_it's.sql", SQL: trigger})
	assert.Equal(t, "CREATE TRIGGER t AFTER INSERT ON x BEGIN UPDATE y SET n = n + 1; SELECT ';'; END;\n-- trailing comment\n-- */\n"+
		"INSERT INTO _schema_migrations (version, name) VALUES ('0003', '0003_it''s.sql');", got)

	unterminated := withLedgerInsert(migrationFile{Version: "1", Name: "1_x.sql", SQL: "CREATE TABLE x (id INTEGER)\n"})
	assert.Equal(t, "CREATE TABLE x (id INTEGER)\n-- */\n;\nINSERT INTO _schema_migrations (version, name) VALUES ('1', '1_x.sql');", unterminated)

	// A statement left open before an open comment still gets its ';'
	// after the comment is closed.
	open := withLedgerInsert(migrationFile{Version: "2", Name: "2_y.sql", SQL: "CREATE TABLE y (id INTEGER) /* note"})
	assert.Equal(t, "CREATE TABLE y (id INTEGER) /* note\n-- */\n;\nINSERT INTO _schema_migrations (version, name) VALUES ('2', '2_y.sql');", open)
}

func TestPackBatchesKeepsOrderAndBudget(t *testing.T) {
	var files []migrationFile
	for i := 1; i <= 7; i++ {
		sql := "CREATE TABLE t (id INTEGER);"
		if i == 4 {
			sql = strings.Repeat("-- big\n", 100) + sql // over the budget alone
		}
		files = append(files, migrationFile{Version: fmt.Sprintf("%04d", i), Name: fmt.Sprintf("%04d_t.sql", i), SQL: sql})
	}
	names := func(batches [][]migrationFile) [][]string {
		var out [][]string
		for _, b := range batches {
			var n []string
			for _, f := range b {
				n = append(n, f.Version)
			}
			out = append(out, n)
		}
		return out
	}
	one := len(withLedgerInsert(files[0])) + 1
	// Room for two small files and the closing ledger read.
	budget := migrationBudget{maxBytes: len(ledgerSelect) + 2*one}
	assert.Equal(t, [][]string{{"0001", "0002"}, {"0003"}, {"0004"}, {"0005", "0006"}, {"0007"}}, names(packBatches(files, budget)),
		"in order; the big file alone; nothing over the budget but it")
	for _, b := range packBatches(files, budget) {
		if len(b) > 1 {
			assert.LessOrEqual(t, len(batchSQL(b, true)), budget.maxBytes)
		}
	}
	assert.Equal(t, [][]string{{"0001", "0002", "0003"}, {"0004", "0005", "0006"}, {"0007"}},
		names(packBatches(files, migrationBudget{maxBytes: 1 << 20, maxFiles: 3})))
	assert.Len(t, packBatches(files, migrationBudget{maxBytes: 1 << 20}), 1)
	assert.Empty(t, packBatches(nil, migrationBudget{maxBytes: 1}))
}

// TestParseMigrationsNamesWhatWouldBeSkippedOrRefused: a .sql file the
// upstream runner would skip (upper-case extension, a subdirectory), and one
// D1 would refuse (not UTF-8 text, a statement over 100,000 bytes), is
// named with what to do, and the rest of the set is still parsed.
func TestParseMigrationsNamesWhatWouldBeSkippedOrRefused(t *testing.T) {
	long := "INSERT INTO t VALUES ('" + strings.Repeat("x", 100_001) + "');"
	files, problems := parseMigrations(map[string]string{
		"0001_a.sql":          "CREATE TABLE t (x TEXT);",
		"0002_B.SQL":          "SELECT 1;",
		"archive/0003_c.sql":  "SELECT 1;",
		"0004_utf16.sql":      "C\x00R\x00E\x00A\x00T\x00E\x00",
		"0005_latin1.sql":     "SELECT 'caf\xe9';",
		"0006_long.sql":       "-- seed\nCREATE TABLE u (x);\n\n" + long,
		"0007_many_small.sql": strings.Repeat("INSERT INTO t VALUES ('"+strings.Repeat("y", 900)+"');\n", 200),
	})
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"0001_a.sql", "0007_many_small.sql"}, names, "a 180 KB file of small statements is fine")
	got := map[string]string{}
	for _, p := range problems {
		got[p.File] = p.Reason
	}
	assert.Len(t, got, 5)
	assert.Contains(t, got["0002_B.SQL"], "ends in .SQL, and upstream's runner takes only *.sql (lower case), so it would be skipped: rename it to 0002_B.sql")
	assert.Contains(t, got["archive/0003_c.sql"], "is in the subdirectory archive")
	assert.Contains(t, got["0004_utf16.sql"], "holds a NUL byte at offset 1")
	assert.Contains(t, got["0005_latin1.sql"], "is not UTF-8 text (an invalid byte at offset 11)")
	assert.Contains(t, got["0006_long.sql"], "the statement starting on line 4 is 100027 bytes, and D1 refuses a statement over 100000 bytes")
}

// TestSQLStatements: statements end at ';' outside strings, quoted names,
// comments and trigger bodies, each with the line it starts on.
func TestSQLStatements(t *testing.T) {
	sql := "-- header\nCREATE TABLE a (x TEXT DEFAULT ';');\n" +
		"CREATE TEMP TRIGGER t AFTER INSERT ON a BEGIN\n  UPDATE b SET n = n + 1;\n  SELECT \"x;y\", [a;b], `c;d`;\nEND;\n" +
		"/* a; comment\n */ INSERT INTO a VALUES ('it''s;');\nPRAGMA foreign_keys = ON"
	var got []string
	var lines []int
	for _, s := range sqlStatements(sql) {
		got = append(got, s.text)
		lines = append(lines, s.line)
	}
	assert.Equal(t, []string{
		"-- header\nCREATE TABLE a (x TEXT DEFAULT ';');",
		"CREATE TEMP TRIGGER t AFTER INSERT ON a BEGIN\n  UPDATE b SET n = n + 1;\n  SELECT \"x;y\", [a;b], `c;d`;\nEND;",
		"/* a; comment\n */ INSERT INTO a VALUES ('it''s;');",
		"PRAGMA foreign_keys = ON",
	}, got)
	assert.Equal(t, []int{1, 3, 7, 9}, lines)
}
