package d1

// This file drives SQLite through modernc.org/sqlite's C-level API (the
// transpiled sqlite3_* functions) instead of database/sql. Two D1 behaviours
// need it:
//
//   - Statement boundaries. D1 runs a request's statements one by one, so a
//     migration with CREATE TRIGGER ... BEGIN ...; ...; END;, string literals
//     and comments containing ';' must split exactly where SQLite's parser
//     says. sqlite3_prepare_v2's tail pointer is that parser; no hand-written
//     splitter can be more faithful.
//   - Values. The database/sql driver turns TEXT in DATE/DATETIME/TIMESTAMP
//     columns into time.Time, which cannot be turned back into the exact
//     string; D1 returns the stored text verbatim, and so must we.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
	sqlite3 "modernc.org/sqlite/lib"
)

// queryTimeLimit mirrors D1's per-request limit so a runaway query (say, an
// unbounded recursive CTE) fails instead of wedging the emulator.
const queryTimeLimit = 30 * time.Second

// sqliteTransient tells sqlite3_bind_* to copy the value, so our C buffers
// can be freed right after binding.
const sqliteTransient = ^uintptr(0)

const ptrSize = unsafe.Sizeof(uintptr(0))

// errDBClosed is returned when a database was deleted while a request for it
// was waiting for its lock.
var errDBClosed = errors.New("database closed")

// sqlError is a failure SQLite reported, already formatted the way D1 words
// it ("<message> [at offset N]: SQLITE_<CODE>").
type sqlError struct{ msg string }

func (e *sqlError) Error() string { return e.msg }

// sqliteDB is one D1 database: a single SQLite connection. A single
// connection is what makes per-request transactions and PRAGMAs behave, and
// mu serialises requests on it the way D1 serialises a database.
type sqliteDB struct {
	mu  sync.Mutex // held for any use of tls, db, pp
	tls *libc.TLS
	db  uintptr
	pp  uintptr // two pointer-sized out-parameters for sqlite3_prepare_v2

	// imu guards db for interrupt, which runs on another goroutine while mu
	// is held by the query it interrupts.
	imu    sync.Mutex
	closed bool
}

// cptr turns an address in libc memory into an unsafe.Pointer. It goes
// through memory rather than a direct conversion because the address is not
// a Go pointer and `go vet` rightly distrusts uintptr->Pointer conversions of
// Go memory.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

func peekPtr(p uintptr) uintptr { return *(*uintptr)(cptr(p)) }

func openSQLite(path string) (*sqliteDB, error) {
	tls := libc.NewTLS()
	cpath, err := libc.CString(path)
	if err != nil {
		tls.Close()
		return nil, err
	}
	defer libc.Xfree(tls, cpath)
	pp := libc.Xcalloc(tls, 2, types.Size_t(ptrSize))
	if pp == 0 {
		tls.Close()
		return nil, errors.New("sqlite: out of memory")
	}
	flags := int32(sqlite3.SQLITE_OPEN_READWRITE | sqlite3.SQLITE_OPEN_CREATE | sqlite3.SQLITE_OPEN_FULLMUTEX)
	rc := sqlite3.Xsqlite3_open_v2(tls, cpath, pp, flags, 0)
	db := peekPtr(pp)
	if rc != sqlite3.SQLITE_OK {
		msg := "cannot open database"
		if db != 0 {
			msg = libc.GoString(sqlite3.Xsqlite3_errmsg(tls, db))
			sqlite3.Xsqlite3_close_v2(tls, db)
		}
		libc.Xfree(tls, pp)
		tls.Close()
		return nil, fmt.Errorf("sqlite: open %s: %s", path, msg)
	}
	sqlite3.Xsqlite3_extended_result_codes(tls, db, 1)
	d := &sqliteDB{tls: tls, db: db, pp: pp}
	// D1 enforces foreign keys; WAL keeps readers of the file (sqlite3 CLI
	// while debugging) from blocking the emulator.
	for _, p := range []string{"PRAGMA busy_timeout = 5000", "PRAGMA journal_mode = WAL", "PRAGMA foreign_keys = ON"} {
		if err := d.execLocked(p); err != nil {
			_ = d.close()
			return nil, fmt.Errorf("sqlite: %s: %w", p, err)
		}
	}
	return d, nil
}

func (d *sqliteDB) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.imu.Lock()
	defer d.imu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var err error
	if rc := sqlite3.Xsqlite3_close_v2(d.tls, d.db); rc != sqlite3.SQLITE_OK {
		err = fmt.Errorf("sqlite: close: %s", sqlite3ErrName(rc))
	}
	d.db = 0
	libc.Xfree(d.tls, d.pp)
	d.pp = 0
	d.tls.Close()
	return err
}

// interrupt aborts whatever statement is running. It may race with close,
// hence imu.
func (d *sqliteDB) interrupt() {
	d.imu.Lock()
	defer d.imu.Unlock()
	if d.closed {
		return
	}
	// A libc.TLS is not safe for concurrent use and d.tls belongs to the
	// running query, so interrupting needs its own.
	tls := libc.NewTLS()
	sqlite3.Xsqlite3_interrupt(tls, d.db)
	tls.Close()
}

// errLocked formats the connection's current error like D1 does.
func (d *sqliteDB) errLocked(rc int32) error {
	msg := libc.GoString(sqlite3.Xsqlite3_errmsg(d.tls, d.db))
	if off := sqlite3.Xsqlite3_error_offset(d.tls, d.db); off >= 0 {
		msg += fmt.Sprintf(" at offset %d", off)
	}
	return &sqlError{msg: msg + ": " + sqlite3ErrName(rc)}
}

// execLocked runs SQL whose results do not matter (PRAGMAs, BEGIN/COMMIT).
func (d *sqliteDB) execLocked(sql string) error {
	csql, err := libc.CString(sql)
	if err != nil {
		return err
	}
	defer libc.Xfree(d.tls, csql)
	if rc := sqlite3.Xsqlite3_exec(d.tls, d.db, csql, 0, 0, 0); rc != sqlite3.SQLITE_OK {
		return d.errLocked(rc)
	}
	return nil
}

// queryIntLocked returns the first column of the first row of sql.
func (d *sqliteDB) queryIntLocked(sql string) (int64, error) {
	res, err := d.runLocked(sql, nil, false)
	if err != nil {
		return 0, err
	}
	if len(res) == 0 || len(res[0].Rows) == 0 || len(res[0].Rows[0]) == 0 {
		return 0, nil
	}
	n, _ := res[0].Rows[0][0].(int64)
	return n, nil
}

func (d *sqliteDB) sizeLocked() int64 {
	pages, _ := d.queryIntLocked("PRAGMA page_count")
	size, _ := d.queryIntLocked("PRAGMA page_size")
	return pages * size
}

// stats returns what D1's database object reports: user tables (D1 hides
// its own _cf_ tables and SQLite's) and the file size.
func (d *sqliteDB) stats() (numTables, fileSize int64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, 0, errDBClosed
	}
	numTables, err = d.queryIntLocked(`SELECT count(*) FROM sqlite_schema WHERE type = 'table'
		AND substr(name, 1, 7) <> 'sqlite_' AND substr(name, 1, 4) <> '_cf_'`)
	if err != nil {
		return 0, 0, err
	}
	return numTables, d.sizeLocked(), nil
}

// sqlItem is one request's SQL text and its positional parameters.
type sqlItem struct {
	SQL    string
	Params []any
}

// stmtResult is the outcome of one statement.
type stmtResult struct {
	Columns     []string
	Rows        [][]any
	Changes     int64
	LastRowID   int64
	RowsRead    int64
	RowsWritten int64
	ChangedDB   bool
	Duration    time.Duration
	SizeAfter   int64
}

// run executes every statement of items in one transaction: D1 applies a
// request atomically, so if any statement fails nothing of the request
// persists.
func (d *sqliteDB) run(ctx context.Context, items []sqlItem) ([]stmtResult, error) {
	groups, err := d.runEach(ctx, items)
	var out []stmtResult
	for _, g := range groups {
		out = append(out, g...)
	}
	return out, err
}

// runEach is run keeping each item's statements apart: a Worker's D1
// binding wants one result per item of its batch.
func (d *sqliteDB) runEach(ctx context.Context, items []sqlItem) ([][]stmtResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errDBClosed
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeLimit)
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(interrupted)
		d.interrupt()
	})
	defer func() {
		// If the interrupt already started, wait for it: arriving late it
		// would abort the next request's statements instead.
		if !stop() {
			<-interrupted
		}
		cancel()
	}()
	if err := d.execLocked("BEGIN IMMEDIATE"); err != nil {
		return nil, err
	}
	var out [][]stmtResult
	for _, it := range items {
		res, err := d.runLocked(it.SQL, it.Params, true)
		if err != nil {
			// After some errors (or a trigger's RAISE(ROLLBACK)) SQLite has
			// already rolled back; a second rollback then fails harmlessly.
			_ = d.execLocked("ROLLBACK")
			return nil, err
		}
		out = append(out, res)
	}
	if err := d.execLocked("COMMIT"); err != nil {
		_ = d.execLocked("ROLLBACK")
		return nil, err
	}
	size := d.sizeLocked()
	for _, g := range out {
		for i := range g {
			g[i].SizeAfter = size
		}
	}
	return out, nil
}

// runLocked prepares and steps each statement of sql in turn. Each statement
// is prepared only after the previous one ran, exactly like sqlite3_exec, so
// a CREATE TABLE is visible to the INSERT after it.
func (d *sqliteDB) runLocked(sql string, params []any, user bool) ([]stmtResult, error) {
	csql, err := libc.CString(sql)
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(d.tls, csql)
	var out []stmtResult
	z := csql
	end := csql + uintptr(len(sql))
	for z < end {
		rc := sqlite3.Xsqlite3_prepare_v2(d.tls, d.db, z, -1, d.pp, d.pp+ptrSize)
		if rc != sqlite3.SQLITE_OK {
			return nil, d.errLocked(rc)
		}
		stmt, tail := peekPtr(d.pp), peekPtr(d.pp+ptrSize)
		if stmt == 0 {
			// Only whitespace, comments or a stray ';' were consumed.
			if tail <= z {
				break
			}
			z = tail
			continue
		}
		text := sql[z-csql : tail-csql]
		z = tail
		if user {
			if err := checkStatement(text); err != nil {
				sqlite3.Xsqlite3_finalize(d.tls, stmt)
				return nil, err
			}
		}
		res, err := d.stepLocked(stmt, text, params)
		sqlite3.Xsqlite3_finalize(d.tls, stmt)
		if err != nil {
			return nil, err
		}
		if user && sqlite3.Xsqlite3_get_autocommit(d.tls, d.db) != 0 {
			// The statement ended our transaction behind our back; refuse
			// rather than silently losing atomicity for the rest.
			return nil, &sqlError{msg: "the statement ended the request's transaction: SQLITE_ERROR"}
		}
		out = append(out, res)
	}
	return out, nil
}

func (d *sqliteDB) stepLocked(stmt uintptr, text string, params []any) (stmtResult, error) {
	if err := d.bindLocked(stmt, params); err != nil {
		return stmtResult{}, err
	}
	ncol := int(sqlite3.Xsqlite3_column_count(d.tls, stmt))
	res := stmtResult{Columns: make([]string, ncol), Rows: [][]any{}}
	for i := range ncol {
		res.Columns[i] = libc.GoString(sqlite3.Xsqlite3_column_name(d.tls, stmt, int32(i)))
	}
	readOnly := sqlite3.Xsqlite3_stmt_readonly(d.tls, stmt) != 0
	before := sqlite3.Xsqlite3_total_changes64(d.tls, d.db)
	start := time.Now()
	for {
		rc := sqlite3.Xsqlite3_step(d.tls, stmt)
		if rc == sqlite3.SQLITE_DONE {
			break
		}
		if rc != sqlite3.SQLITE_ROW {
			return stmtResult{}, d.errLocked(rc)
		}
		row := make([]any, ncol)
		for i := range ncol {
			row[i] = d.columnLocked(stmt, int32(i))
		}
		res.Rows = append(res.Rows, row)
	}
	res.Duration = time.Since(start)
	// total_changes counts trigger writes too, which is what D1 documents
	// for meta.changes.
	res.Changes = sqlite3.Xsqlite3_total_changes64(d.tls, d.db) - before
	res.LastRowID = sqlite3.Xsqlite3_last_insert_rowid(d.tls, d.db)
	res.RowsWritten = res.Changes
	res.RowsRead = int64(len(res.Rows))
	res.ChangedDB = res.Changes > 0 || (!readOnly && isSchemaChange(text))
	return res, nil
}

// blobValue is a BLOB; D1 returns blobs as arrays of byte values.
type blobValue []byte

func (b blobValue) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, c := range b {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprint(&buf, c)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

func (d *sqliteDB) columnLocked(stmt uintptr, i int32) any {
	switch sqlite3.Xsqlite3_column_type(d.tls, stmt, i) {
	case sqlite3.SQLITE_INTEGER:
		return sqlite3.Xsqlite3_column_int64(d.tls, stmt, i)
	case sqlite3.SQLITE_FLOAT:
		v := sqlite3.Xsqlite3_column_double(d.tls, stmt, i)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil // JSON has no representation; D1 yields null too
		}
		return v
	case sqlite3.SQLITE_TEXT:
		p := sqlite3.Xsqlite3_column_text(d.tls, stmt, i) // must precede column_bytes
		n := int(sqlite3.Xsqlite3_column_bytes(d.tls, stmt, i))
		if p == 0 || n == 0 {
			return ""
		}
		return string(libc.GoBytes(p, n)) // string() copies out of SQLite's buffer
	case sqlite3.SQLITE_BLOB:
		p := sqlite3.Xsqlite3_column_blob(d.tls, stmt, i)
		n := int(sqlite3.Xsqlite3_column_bytes(d.tls, stmt, i))
		if p == 0 || n == 0 {
			return blobValue{}
		}
		return blobValue(bytes.Clone(libc.GoBytes(p, n)))
	default:
		return nil
	}
}

// bindLocked binds params positionally. Every statement of a request gets
// the same params (extra ones are ignored, as SQLite only asks for the
// placeholders it has); too few is the error D1 reports.
func (d *sqliteDB) bindLocked(stmt uintptr, params []any) error {
	n := int(sqlite3.Xsqlite3_bind_parameter_count(d.tls, stmt))
	if n > len(params) {
		return &sqlError{msg: "Wrong number of parameter bindings for SQL query.: SQLITE_RANGE"}
	}
	for i := 1; i <= n; i++ {
		var rc int32
		switch v := params[i-1].(type) {
		case nil:
			rc = sqlite3.Xsqlite3_bind_null(d.tls, stmt, int32(i))
		case int64:
			rc = sqlite3.Xsqlite3_bind_int64(d.tls, stmt, int32(i), v)
		case float64:
			rc = sqlite3.Xsqlite3_bind_double(d.tls, stmt, int32(i), v)
		case bool:
			var b int64
			if v {
				b = 1
			}
			rc = sqlite3.Xsqlite3_bind_int64(d.tls, stmt, int32(i), b)
		case string:
			p, err := libc.CString(v)
			if err != nil {
				return err
			}
			rc = sqlite3.Xsqlite3_bind_text(d.tls, stmt, int32(i), p, int32(len(v)), sqliteTransient)
			libc.Xfree(d.tls, p)
		case blobValue:
			// A Worker's D1 binding sends an ArrayBuffer as an array of bytes.
			if len(v) == 0 {
				rc = sqlite3.Xsqlite3_bind_zeroblob(d.tls, stmt, int32(i), 0)
				break
			}
			p := libc.Xmalloc(d.tls, libc.Tsize_t(len(v)))
			copy(unsafe.Slice((*byte)(cptr(p)), len(v)), v)
			rc = sqlite3.Xsqlite3_bind_blob(d.tls, stmt, int32(i), p, int32(len(v)), sqliteTransient)
			libc.Xfree(d.tls, p)
		default:
			return &sqlError{msg: fmt.Sprintf("D1_TYPE_ERROR: Type '%T' not supported for value '%v': SQLITE_MISMATCH", v, v)}
		}
		if rc != sqlite3.SQLITE_OK {
			return d.errLocked(rc)
		}
	}
	return nil
}

// firstKeyword returns the statement's first keyword, upper-cased, skipping
// whitespace and comments.
func firstKeyword(s string) string {
	for {
		s = strings.TrimLeft(s, " \t\r\n\f\v")
		switch {
		case strings.HasPrefix(s, "--"):
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return ""
			}
			s = s[i+1:]
		case strings.HasPrefix(s, "/*"):
			i := strings.Index(s[2:], "*/")
			if i < 0 {
				return ""
			}
			s = s[i+4:]
		default:
			end := strings.IndexFunc(s, func(r rune) bool {
				return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
			})
			if end < 0 {
				end = len(s)
			}
			return strings.ToUpper(s[:end])
		}
	}
}

// d1TransactionMessage is the text D1 answers BEGIN/SAVEPOINT with. The
// request is already one atomic batch, which is what callers should rely on.
const d1TransactionMessage = "To execute a transaction, please use the state.storage.transaction() or " +
	"state.storage.transactionSync() APIs instead of the SQL BEGIN TRANSACTION or SAVEPOINT statements. " +
	"The JavaScript API is safer because it will automatically roll back on exceptions, and because it " +
	"interacts correctly with Durable Objects' automatic atomic write coalescing."

// checkStatement rejects what D1 rejects before it runs: explicit
// transaction control (each request already is one transaction) and
// ATTACH/DETACH (which would let SQL reach other files on this machine).
func checkStatement(text string) error {
	switch firstKeyword(text) {
	case "BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE":
		return &sqlError{msg: d1TransactionMessage + ": SQLITE_AUTH"}
	case "ATTACH", "DETACH", "VACUUM":
		return &sqlError{msg: "not authorized: SQLITE_AUTH"}
	}
	return nil
}

func isSchemaChange(text string) bool {
	switch firstKeyword(text) {
	case "CREATE", "DROP", "ALTER":
		return true
	}
	return false
}

// sqlite3ErrName names a result code the way D1 suffixes its messages (the
// primary code, e.g. SQLITE_CONSTRAINT for SQLITE_CONSTRAINT_UNIQUE).
func sqlite3ErrName(rc int32) string {
	names := [...]string{"SQLITE_OK", "SQLITE_ERROR", "SQLITE_INTERNAL", "SQLITE_PERM", "SQLITE_ABORT",
		"SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_NOMEM", "SQLITE_READONLY", "SQLITE_INTERRUPT",
		"SQLITE_IOERR", "SQLITE_CORRUPT", "SQLITE_NOTFOUND", "SQLITE_FULL", "SQLITE_CANTOPEN",
		"SQLITE_PROTOCOL", "SQLITE_EMPTY", "SQLITE_SCHEMA", "SQLITE_TOOBIG", "SQLITE_CONSTRAINT",
		"SQLITE_MISMATCH", "SQLITE_MISUSE", "SQLITE_NOLFS", "SQLITE_AUTH", "SQLITE_FORMAT",
		"SQLITE_RANGE", "SQLITE_NOTADB"}
	if p := int(rc & 0xff); p < len(names) {
		return names[p]
	}
	return fmt.Sprintf("SQLITE_%d", rc)
}

// removeSQLiteFiles deletes a database file and its WAL companions.
func removeSQLiteFiles(path string) error {
	var errs []error
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
