package d1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// Register mounts the D1 API routes, the import flow's included.
func (s *Service) Register() {
	const base = "/client/v4/accounts/{account_id}/d1/database"
	s.cf.API("POST "+base, cloudflare.AuthAccount, s.d1Create)
	s.cf.API("GET "+base, cloudflare.AuthAccount, s.d1List)
	s.cf.API("GET "+base+"/{database_id}", cloudflare.AuthAccount, s.d1Get)
	s.cf.API("DELETE "+base+"/{database_id}", cloudflare.AuthAccount, s.d1Delete)
	s.cf.API("POST "+base+"/{database_id}/query", cloudflare.AuthAccount, s.d1Query)
	s.cf.API("POST "+base+"/{database_id}/raw", cloudflare.AuthAccount, s.d1Raw)
	s.registerD1Import()
	s.registerD1Export()
}

var d1NameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// d1LocationHints are the regions D1 accepts as primary_location_hint.
var d1LocationHints = map[string]bool{"wnam": true, "enam": true, "weur": true, "eeur": true, "apac": true, "oc": true}

// d1JSON is the database object D1 returns from create and get.
type d1JSON struct {
	UUID            string     `json:"uuid"`
	Name            string     `json:"name"`
	CreatedAt       string     `json:"created_at"`
	Version         string     `json:"version"`
	NumTables       int64      `json:"num_tables"`
	FileSize        int64      `json:"file_size"`
	ReadReplication d1ReadRepl `json:"read_replication"`
	// CreatedInRegion is the region the database lives in: the location
	// hint, or ENAM (the region queries report) without one. wrangler
	// prints it after d1 create.
	CreatedInRegion string  `json:"created_in_region,omitempty"`
	Jurisdiction    *string `json:"jurisdiction"`
}

type d1ReadRepl struct {
	Mode string `json:"mode"`
}

// d1ListJSON is the slimmer object in list results.
// d1ListJSON is a list entry. Jurisdiction is null: the emulator creates
// no database restricted to a jurisdiction ("eu", "fedramp").
type d1ListJSON struct {
	UUID         string  `json:"uuid"`
	Name         string  `json:"name"`
	CreatedAt    string  `json:"created_at"`
	Version      string  `json:"version"`
	Jurisdiction *string `json:"jurisdiction"`
}

// region is where the database is said to live: its location hint, upper
// case, or ENAM.
func (db *d1Database) region() string {
	if db.LocationHint == "" {
		return "ENAM"
	}
	return strings.ToUpper(db.LocationHint)
}

func d1NotFound(id string) *core.APIError {
	return core.NewAPIError(http.StatusNotFound, 7404, "The database "+id+" could not be found")
}

func (s *Service) d1Create(w http.ResponseWriter, r *http.Request) {
	acct := r.PathValue("account_id")
	var body struct {
		Name                string `json:"name"`
		PrimaryLocationHint string `json:"primary_location_hint"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	if !d1NameRE.MatchString(body.Name) {
		core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 7400,
			fmt.Sprintf("The request is malformed: database name %q must be 1-64 characters of letters, digits, '-' and '_'", body.Name)))
		return
	}
	hint := strings.ToLower(body.PrimaryLocationHint)
	if hint != "" && !d1LocationHints[hint] {
		core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 7400,
			fmt.Sprintf("The request is malformed: unknown primary_location_hint %q (want one of wnam, enam, weur, eeur, apac, oc)", body.PrimaryLocationHint)))
		return
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		core.WriteError(w, errDBClosed)
		return
	}
	for _, db := range s.st.D1 {
		if db.AccountID == acct && db.Name == body.Name {
			s.mu.Unlock()
			core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 7502, "A database with that name already exists"))
			return
		}
	}
	rec := &d1Database{UUID: core.NewUUID(), AccountID: acct, Name: body.Name, CreatedAt: time.Now().UTC(), LocationHint: hint}
	eng, err := openSQLite(s.d1Path(rec.UUID))
	if err != nil {
		s.mu.Unlock()
		core.WriteError(w, err)
		return
	}
	s.st.D1[rec.UUID] = rec
	s.d1open[rec.UUID] = eng
	s.mu.Unlock()

	if err := s.save(); err != nil {
		core.WriteError(w, err)
		return
	}
	s.writeD1(w, rec, eng)
}

func (s *Service) writeD1(w http.ResponseWriter, rec *d1Database, eng *sqliteDB) {
	tables, size, err := eng.stats()
	if errors.Is(err, errDBClosed) {
		core.WriteError(w, d1NotFound(rec.UUID))
		return
	}
	if err != nil {
		core.WriteError(w, err)
		return
	}
	core.WriteResult(w, d1JSON{
		UUID: rec.UUID, Name: rec.Name, CreatedAt: cloudflare.Time(rec.CreatedAt), Version: "production",
		NumTables: tables, FileSize: size, ReadReplication: d1ReadRepl{Mode: "disabled"},
		CreatedInRegion: rec.region(),
	})
}

func (s *Service) d1List(w http.ResponseWriter, r *http.Request) {
	acct := r.PathValue("account_id")
	name := r.URL.Query().Get("name")
	page, perPage := core.PageParams(r, 100, 10000)

	s.mu.Lock()
	var all []*d1Database
	for _, db := range s.st.D1 {
		if db.AccountID == acct && (name == "" || db.Name == name) {
			all = append(all, db)
		}
	}
	s.mu.Unlock()
	// Newest first, like the dashboard; ties broken by name so pages are
	// stable across requests.
	sort.Slice(all, func(i, j int) bool {
		if !all[i].CreatedAt.Equal(all[j].CreatedAt) {
			return all[i].CreatedAt.After(all[j].CreatedAt)
		}
		return all[i].Name < all[j].Name
	})
	items := make([]d1ListJSON, len(all))
	for i, db := range all {
		items[i] = d1ListJSON{UUID: db.UUID, Name: db.Name, CreatedAt: cloudflare.Time(db.CreatedAt), Version: "production"}
	}
	out, info := core.Paginate(items, page, perPage)
	core.WriteEnvelope(w, http.StatusOK, out, info, nil)
}

// d1Lookup finds a database in the caller's account and its open engine,
// opening the SQLite file on first use after a restart.
func (s *Service) d1Lookup(r *http.Request) (*d1Database, *sqliteDB, error) {
	acct, id := r.PathValue("account_id"), r.PathValue("database_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.st.D1[id]
	if !ok || rec.AccountID != acct {
		return nil, nil, d1NotFound(id)
	}
	if s.closed {
		return nil, nil, errDBClosed
	}
	eng, err := s.openD1Locked(id)
	if err != nil {
		return nil, nil, err
	}
	return rec, eng, nil
}

// openD1Locked is the database's open SQLite handle, opened on first use
// (the D1 API and the Workers' D1 bindings share it).
func (s *Service) openD1Locked(id string) (*sqliteDB, error) {
	if eng, ok := s.d1open[id]; ok {
		return eng, nil
	}
	eng, err := openSQLite(s.d1Path(id))
	if err != nil {
		return nil, err
	}
	s.d1open[id] = eng
	return eng, nil
}

func (s *Service) d1Get(w http.ResponseWriter, r *http.Request) {
	rec, eng, err := s.d1Lookup(r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	s.writeD1(w, rec, eng)
}

func (s *Service) d1Delete(w http.ResponseWriter, r *http.Request) {
	acct, id := r.PathValue("account_id"), r.PathValue("database_id")
	s.mu.Lock()
	rec, ok := s.st.D1[id]
	if !ok || rec.AccountID != acct {
		s.mu.Unlock()
		core.WriteError(w, d1NotFound(id))
		return
	}
	delete(s.st.D1, id)
	eng := s.d1open[id]
	delete(s.d1open, id)
	s.mu.Unlock()

	// close waits for a running batch on this database to finish.
	var errs []error
	if eng != nil {
		errs = append(errs, eng.close())
	}
	errs = append(errs, removeSQLiteFiles(s.d1Path(id)), s.save())
	if err := errors.Join(errs...); err != nil {
		core.WriteError(w, err)
		return
	}
	core.WriteResult(w, nil)
}

// d1Request is the body of /query and /raw. "batch" is the newer form of the
// same endpoint; both run as one atomic unit.
type d1Request struct {
	SQL    string          `json:"sql"`
	Params []any           `json:"params"`
	Batch  []d1RequestItem `json:"batch"`
}

type d1RequestItem struct {
	SQL    string `json:"sql"`
	Params []any  `json:"params"`
}

// d1Meta is the per-statement meta object.
type d1Meta struct {
	ServedByRegion  string    `json:"served_by_region"`
	ServedByPrimary bool      `json:"served_by_primary"`
	Timings         d1Timings `json:"timings"`
	Duration        float64   `json:"duration"`
	Changes         int64     `json:"changes"`
	LastRowID       int64     `json:"last_row_id"`
	ChangedDB       bool      `json:"changed_db"`
	SizeAfter       int64     `json:"size_after"`
	RowsRead        int64     `json:"rows_read"`
	RowsWritten     int64     `json:"rows_written"`
}

type d1Timings struct {
	SQLDurationMs float64 `json:"sql_duration_ms"`
}

type d1QueryResult struct {
	Results []rowObject `json:"results"`
	Success bool        `json:"success"`
	Meta    d1Meta      `json:"meta"`
}

type d1RawResult struct {
	Results d1RawRows `json:"results"`
	Success bool      `json:"success"`
	Meta    d1Meta    `json:"meta"`
}

type d1RawRows struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
}

// rowObject is a result row as a JSON object whose keys keep column order,
// as D1's do (a Go map would sort them). A repeated column name keeps its
// first position and the last value, like assigning into a JS object.
type rowObject struct {
	cols []string
	vals []any
}

func (o rowObject) MarshalJSON() ([]byte, error) {
	order := make([]string, 0, len(o.cols))
	vals := make(map[string]any, len(o.cols))
	for i, c := range o.cols {
		if _, seen := vals[c]; !seen {
			order = append(order, c)
		}
		vals[c] = o.vals[i]
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, c := range order {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(vals[c])
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func (s *Service) d1Query(w http.ResponseWriter, r *http.Request) {
	s.d1Execute(w, r, false)
}

func (s *Service) d1Raw(w http.ResponseWriter, r *http.Request) {
	s.d1Execute(w, r, true)
}

func (s *Service) d1Execute(w http.ResponseWriter, r *http.Request, raw bool) {
	var body d1Request
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	items := []sqlItem{{SQL: body.SQL, Params: body.Params}}
	if body.Batch != nil {
		items = items[:0]
		for _, b := range body.Batch {
			items = append(items, sqlItem(b))
		}
	}
	for i := range items {
		if strings.TrimSpace(items[i].SQL) == "" {
			core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 7400, "The request is malformed: sql must not be empty"))
			return
		}
		params, err := d1Params(items[i].Params)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		items[i].Params = params
	}
	rec, eng, err := s.d1Lookup(r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	results, err := eng.run(r.Context(), items)
	var se *sqlError
	switch {
	case errors.Is(err, errDBClosed):
		core.WriteError(w, d1NotFound(rec.UUID))
		return
	case errors.As(err, &se):
		core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 7500, se.msg))
		return
	case err != nil:
		core.WriteError(w, err)
		return
	}

	region := rec.region()
	out := make([]any, len(results))
	for i, res := range results {
		ms := float64(res.Duration.Microseconds()) / 1000
		meta := d1Meta{
			ServedByRegion: region, ServedByPrimary: true, Timings: d1Timings{SQLDurationMs: ms}, Duration: ms,
			Changes: res.Changes, LastRowID: res.LastRowID, ChangedDB: res.ChangedDB, SizeAfter: res.SizeAfter,
			RowsRead: res.RowsRead, RowsWritten: res.RowsWritten,
		}
		if raw {
			out[i] = d1RawResult{Results: d1RawRows{Columns: res.Columns, Rows: res.Rows}, Success: true, Meta: meta}
			continue
		}
		rows := make([]rowObject, len(res.Rows))
		for j, row := range res.Rows {
			rows[j] = rowObject{cols: res.Columns, vals: row}
		}
		out[i] = d1QueryResult{Results: rows, Success: true, Meta: meta}
	}
	core.WriteResult(w, out)
}

// d1Params converts JSON params to SQLite bind values: integral numbers bind
// as INTEGER (so `WHERE id = ?` matches), others as REAL.
func d1Params(in []any) ([]any, error) {
	out := make([]any, len(in))
	for i, p := range in {
		switch v := p.(type) {
		case json.Number:
			if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
				out[i] = n
			} else if f, err := v.Float64(); err == nil {
				out[i] = f
			} else {
				return nil, core.NewAPIError(http.StatusBadRequest, 7400, "The request is malformed: bad number "+string(v))
			}
		case nil, string, bool:
			out[i] = v
		default:
			return nil, core.NewAPIError(http.StatusBadRequest, 7500,
				fmt.Sprintf("D1_TYPE_ERROR: Type '%s' not supported for value '%v'", jsonTypeName(v), v))
		}
	}
	return out, nil
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
