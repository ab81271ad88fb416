package cloudflare

import (
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
	assert.Equal(t, "CREATE TRIGGER t AFTER INSERT ON x BEGIN UPDATE y SET n = n + 1; SELECT ';'; END;\n-- trailing comment\n"+
		"INSERT INTO _schema_migrations (version, name) VALUES ('0003', '0003_it''s.sql');", got)

	unterminated := withLedgerInsert(migrationFile{Version: "1", Name: "1_x.sql", SQL: "CREATE TABLE x (id INTEGER)\n"})
	assert.Equal(t, "CREATE TABLE x (id INTEGER)\n;\nINSERT INTO _schema_migrations (version, name) VALUES ('1', '1_x.sql');", unterminated)
}
