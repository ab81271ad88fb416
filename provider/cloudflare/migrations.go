package cloudflare

import (
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// migrationFile is one numbered SQL file of the upstream migration set.
type migrationFile struct {
	Version string // the numeric prefix as written, zeros kept ("0001")
	Name    string // the full file name, as the ledger records it
	SQL     string
	Hash    string // sha256 of SQL, hex
}

var migrationNamePattern = regexp.MustCompile(`^([0-9]+)_[^/]+\.sql$`)

// migrationProblem is a validation failure tied to a file.
type migrationProblem struct {
	File   string
	Reason string
}

func (p migrationProblem) String() string { return p.File + ": " + p.Reason }

// parseMigrations validates a migration set the way the upstream runner
// does: every .sql file needs a numeric prefix and no two files may share
// one. Files that are not .sql are ignored, like the upstream runner ignores
// them. A file the runner would skip while it looks like a migration (.SQL,
// or one in a subdirectory: the runner reads only the directory's own
// *.sql), and one D1 would refuse (not text, or a statement over D1's
// length limit), is named before anything runs instead of being skipped or
// failing halfway. The result is in apply order: by number, then by name.
func parseMigrations(files map[string]string) ([]migrationFile, []migrationProblem) {
	var out []migrationFile
	var problems []migrationProblem
	byVersion := map[string][]string{}
	for name, sql := range files {
		base := path.Base(name)
		if !strings.HasSuffix(strings.ToLower(base), ".sql") {
			continue
		}
		if reason := skippedMigrationReason(name); reason != "" {
			problems = append(problems, migrationProblem{File: name, Reason: reason})
			continue
		}
		if reason := sqlTextProblem(sql); reason != "" {
			problems = append(problems, migrationProblem{File: base, Reason: reason})
			continue
		}
		m := migrationNamePattern.FindStringSubmatch(base)
		if m == nil {
			problems = append(problems, migrationProblem{File: base,
				Reason: "has no numeric prefix; migration files are named NNNN_description.sql"})
			continue
		}
		out = append(out, migrationFile{Version: m[1], Name: base, SQL: sql, Hash: family.SHA256Hex([]byte(sql))})
		byVersion[m[1]] = append(byVersion[m[1]], base)
	}
	for version, names := range byVersion {
		if len(names) > 1 {
			sort.Strings(names)
			problems = append(problems, migrationProblem{File: strings.Join(names, ", "),
				Reason: fmt.Sprintf("share the prefix %s; renumber all but one", version)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return migrationLess(out[i].Version, out[i].Name, out[j].Version, out[j].Name) })
	sort.Slice(problems, func(i, j int) bool { return problems[i].File < problems[j].File })
	return out, problems
}

// skippedMigrationReason says why upstream's runner would never apply the
// .sql file at name (a slash path inside the migrations directory), or "".
func skippedMigrationReason(name string) string {
	name = strings.TrimPrefix(path.Clean(name), "./")
	base := path.Base(name)
	if dir := path.Dir(name); dir != "." {
		return fmt.Sprintf("is in the subdirectory %s, and upstream's runner applies only the files directly in the "+
			"migrations directory: move it up beside the others, or out of the directory", dir)
	}
	if ext := path.Ext(base); ext != ".sql" {
		return fmt.Sprintf("ends in %s, and upstream's runner takes only *.sql (lower case), so it would be skipped: "+
			"rename it to %s.sql", ext, strings.TrimSuffix(base, ext))
	}
	return ""
}

// sqlTextProblem says why D1 would refuse sql before running it, or "": it
// is not UTF-8 text, or one statement is longer than D1 takes.
func sqlTextProblem(sql string) string {
	if at := strings.IndexByte(sql, 0); at >= 0 {
		return fmt.Sprintf("holds a NUL byte at offset %d: it is not SQL text (a binary or UTF-16 file?); save it as UTF-8", at)
	}
	if !utf8.ValidString(sql) {
		at := 0
		for at < len(sql) {
			r, size := utf8.DecodeRuneInString(sql[at:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			at += size
		}
		return fmt.Sprintf("is not UTF-8 text (an invalid byte at offset %d); D1 takes SQL as UTF-8: save it as UTF-8", at)
	}
	for _, stmt := range sqlStatements(sql) {
		if n := len(stmt.text); n > d1MaxStatementBytes {
			return fmt.Sprintf("the statement starting on line %d is %d bytes, and D1 refuses a statement over %d bytes "+
				"(https://developers.cloudflare.com/d1/platform/limits/): split it into smaller statements", stmt.line, n, d1MaxStatementBytes)
		}
	}
	return ""
}

// migrationLess orders by numeric value so "10" follows "9" whatever the padding.
func migrationLess(v1, n1, v2, n2 string) bool {
	a, errA := strconv.ParseUint(v1, 10, 64)
	b, errB := strconv.ParseUint(v2, 10, 64)
	if errA == nil && errB == nil && a != b {
		return a < b
	}
	if v1 != v2 {
		return v1 < v2
	}
	return n1 < n2
}

// readMigrationArchive flattens a Pulumi archive (usually a FileArchive of the
// migrations directory) into file name -> content.
func readMigrationArchive(a *resource.Archive) (map[string]string, error) {
	if !a.HasContents() {
		return nil, fmt.Errorf("the migrations archive carries only its hash, not its files")
	}
	reader, err := a.Open()
	if err != nil {
		return nil, fmt.Errorf("opening migrations archive: %w", err)
	}
	defer reader.Close()
	files := map[string]string{}
	for {
		name, blob, err := reader.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading migrations archive: %w", err)
		}
		content, err := io.ReadAll(blob)
		_ = blob.Close()
		if err != nil {
			return nil, fmt.Errorf("reading %s from migrations archive: %w", name, err)
		}
		files[name] = string(content)
	}
}

// withLedgerInsert appends the ledger row to a file's SQL so that D1 runs
// both as one unit: a failing file leaves neither its changes nor its row.
// The file is sent whole, never split on ';' (triggers and string literals
// contain semicolons); a final statement without its ';' gets one.
//
// SQLite lets a /* comment run to the end of the text, so a file ending
// inside one would swallow what follows it: its ledger row and, in a batch,
// every later file. The "-- */" line closes such a comment and is a line
// comment otherwise.
func withLedgerInsert(f migrationFile) string {
	body := strings.TrimRight(f.SQL, " \t\r\n") + "\n" + commentCloser
	if !endsWithTerminator(f.SQL) {
		body += "\n;"
	}
	return fmt.Sprintf("%s\nINSERT INTO _schema_migrations (version, name) VALUES (%s, %s);",
		body, sqlQuote(f.Version), sqlQuote(f.Name))
}

// commentCloser ends an unterminated block comment and is a line comment
// anywhere else.
const commentCloser = "-- */"

// endsWithTerminator reports whether the text's last statement is closed,
// ignoring trailing line comments.
func endsWithTerminator(sql string) bool {
	lines := strings.Split(sql, "\n")
	for _, line := range slices.Backward(lines) {
		line := strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "--") {
			continue
		}
		return strings.HasSuffix(line, ";")
	}
	return true // nothing but comments: nothing to terminate
}

func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// ledgerDDL creates the ledger exactly as existing installations have it, so
// a database the upstream script migrated is picked up where it stopped.
const ledgerDDL = `CREATE TABLE IF NOT EXISTS _schema_migrations (
  version TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at TEXT NOT NULL DEFAULT (datetime('now'))
);`
