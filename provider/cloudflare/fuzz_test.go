package cloudflare

import (
	"path"
	"strings"
	"testing"
)

// FuzzParseMigrations: any set of file names and contents parses without a
// panic; every file returned is a numbered .sql file, in apply order, and
// its ledger statement keeps the SQL and ends with the ledger row.
func FuzzParseMigrations(f *testing.F) {
	f.Add("0001_init.sql", "CREATE TABLE a (x);", "0002_more.sql", "ALTER TABLE a ADD y; -- done")
	f.Add("0001_a.sql", "SELECT 1", "0001_b.sql", "SELECT 2;")
	f.Add("init.sql", "", "README.md", "not sql")
	f.Add("sub/dir/10_x.sql", "-- only a comment", "9_y.sql", "INSERT INTO t VALUES ('it''s');")
	f.Add("18446744073709551616_big.sql", "x", "0_zero.sql", "\r\n;\r\n")
	f.Fuzz(func(t *testing.T, name1, sql1, name2, sql2 string) {
		files, problems := parseMigrations(map[string]string{name1: sql1, name2: sql2})
		for _, p := range problems {
			if p.File == "" || p.Reason == "" {
				t.Fatalf("a problem without its file or reason: %q", p.String())
			}
		}
		for i, file := range files {
			if !strings.HasSuffix(file.Name, ".sql") || file.Name != path.Base(file.Name) {
				t.Fatalf("%q is not a bare .sql file name", file.Name)
			}
			if !strings.HasPrefix(file.Name, file.Version+"_") {
				t.Fatalf("%q does not start with its version %q", file.Name, file.Version)
			}
			if i > 0 && migrationLess(file.Version, file.Name, files[i-1].Version, files[i-1].Name) {
				t.Fatalf("%q is ordered after %q", file.Name, files[i-1].Name)
			}
			stmt := withLedgerInsert(file)
			if !strings.Contains(stmt, strings.TrimRight(file.SQL, " \t\r\n")) {
				t.Fatalf("the ledger statement of %q lost its SQL", file.Name)
			}
			if !strings.HasSuffix(stmt, "VALUES ("+sqlQuote(file.Version)+", "+sqlQuote(file.Name)+");") {
				t.Fatalf("the ledger statement of %q does not end with its row", file.Name)
			}
		}
	})
}
