package d1

// The D1 binding's backend: workerd sends a script's D1 queries as
// POST /query or /execute?resultsFormat=..., a JSON {sql, params} or an
// array of them, run in one transaction on the database's SQLite file (the
// same one the D1 API's /query serves); one result per item.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

type d1BindingQuery struct {
	SQL    string `json:"sql"`
	Params []any  `json:"params"`
}

// d1BindingFailure is how the binding learns a query failed: it throws
// "D1_ERROR: <error>" in the script.
func d1BindingFailure(w http.ResponseWriter, msg string) {
	core.WriteJSON(w, http.StatusOK, map[string]any{"success": false, "error": msg})
}

// ServeBinding answers one request of a D1 binding to database id of acct.
func (s *Service) ServeBinding(w http.ResponseWriter, r *http.Request, acct, id string) {
	if r.Method != http.MethodPost || (r.URL.Path != "/query" && r.URL.Path != "/execute") {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, core.MaxBody))
	if err != nil {
		d1BindingFailure(w, "request too large")
		return
	}
	var queries []d1BindingQuery
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	if strings.HasPrefix(strings.TrimSpace(string(body)), "[") {
		err = dec.Decode(&queries)
	} else {
		var q d1BindingQuery
		err = dec.Decode(&q)
		queries = []d1BindingQuery{q}
	}
	if err != nil {
		d1BindingFailure(w, "malformed query: "+err.Error())
		return
	}
	items := make([]sqlItem, 0, len(queries))
	for _, q := range queries {
		if strings.TrimSpace(q.SQL) == "" {
			continue
		}
		params, err := bindingParams(q.Params)
		if err != nil {
			d1BindingFailure(w, err.Error())
			return
		}
		items = append(items, sqlItem{SQL: q.SQL, Params: params})
	}
	if len(items) == 0 {
		d1BindingFailure(w, "No SQL statements detected.")
		return
	}
	s.mu.Lock()
	rec, ok := s.st.D1[id]
	var eng *sqliteDB
	if ok && rec.AccountID == acct && !s.closed {
		eng, err = s.openD1Locked(id)
	}
	s.mu.Unlock()
	switch {
	case !ok || rec.AccountID != acct:
		d1BindingFailure(w, "D1 database "+id+" does not exist")
		return
	case eng == nil || err != nil:
		d1BindingFailure(w, fmt.Sprintf("D1 database %s is not available: %v", id, err))
		return
	}
	groups, err := eng.runEach(r.Context(), items)
	if err != nil {
		d1BindingFailure(w, err.Error())
		return
	}
	format := r.URL.Query().Get("resultsFormat")
	out := make([]map[string]any, len(groups))
	for i, g := range groups {
		// An item of several statements (exec) reports its last one, with
		// the changes of all.
		var last stmtResult
		var changes, read, written int64
		var changed bool
		var took time.Duration
		for _, st := range g {
			last = st
			changes += st.Changes
			read += st.RowsRead
			written += st.RowsWritten
			changed = changed || st.ChangedDB
			took += st.Duration
		}
		if last.Rows == nil {
			last.Rows = [][]any{}
		}
		if last.Columns == nil {
			last.Columns = []string{}
		}
		res := map[string]any{"success": true, "meta": map[string]any{
			"served_by": "openinspect-emulator", "duration": float64(took.Microseconds()) / 1000,
			"changes": changes, "last_row_id": last.LastRowID, "changed_db": changed,
			"size_after": last.SizeAfter, "rows_read": read, "rows_written": written,
		}}
		switch format {
		case "NONE":
		case "ROWS_AND_COLUMNS":
			res["results"] = map[string]any{"columns": last.Columns, "rows": last.Rows}
		default:
			rows := make([]rowObject, len(last.Rows))
			for j, row := range last.Rows {
				rows[j] = rowObject{cols: last.Columns, vals: row}
			}
			res["results"] = rows
		}
		out[i] = res
	}
	core.WriteJSON(w, http.StatusOK, out)
}

// bindingParams converts a binding's JSON params: numbers as D1's API
// does, arrays of byte values as BLOBs.
func bindingParams(in []any) ([]any, error) {
	out := make([]any, len(in))
	for i, p := range in {
		arr, ok := p.([]any)
		if !ok {
			conv, err := d1Params([]any{p})
			if err != nil {
				return nil, fmt.Errorf("D1_TYPE_ERROR: parameter %d: %v", i+1, err)
			}
			out[i] = conv[0]
			continue
		}
		blob := make(blobValue, len(arr))
		for j, v := range arr {
			n, ok := v.(json.Number)
			b, err := strconv.ParseUint(string(n), 10, 8)
			if !ok || err != nil {
				return nil, fmt.Errorf("D1_TYPE_ERROR: parameter %d: not an array of bytes", i+1)
			}
			blob[j] = byte(b)
		}
		out[i] = blob
	}
	return out, nil
}
