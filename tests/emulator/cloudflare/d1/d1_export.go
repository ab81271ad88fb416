package d1

// D1 export, the flow `wrangler d1 export --remote` and the SDKs' Export use:
//
//	POST d1/database/{id}/export {"output_format":"polling", "dump_options":
//	  {"no_data", "no_schema", "tables"}, "current_bookmark"?}
//	  -> {success, type: "export", status, at_bookmark, result: {filename, signed_url}}
//	GET <signed_url> -> the dump, SQL text
//
// Cloudflare answers "active" until the dump is ready and the client polls
// with current_bookmark; the emulator dumps at once and answers "complete"
// on the first call (the documented flow polls only while "active"), and
// the same answer to a poll with that bookmark. Its signed_url is the
// emulator's own /__d1-export/{token}, which needs no Authorization (the
// token is the credential, as a presigned R2 URL's signature is); it is
// kept in memory, for the process's life.
//
// The dump is SQL SQLite runs back: PRAGMA defer_foreign_keys=TRUE, then
// each user table's CREATE statement and its rows as INSERTs, then the
// indexes, triggers and views, D1's own _cf_ tables left out. Documented:
// the route, the body, output_format "polling" (its only value), the
// dump options, the answer's fields. Assumed: the filename's form and
// the dump's exact text (wrangler's exports begin with the same PRAGMA).

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

const d1ExportPrefix = "/__d1-export/"

// d1Export is a finished export: its dump and the answer polls repeat.
type d1Export struct {
	database string
	dump     []byte
	answer   d1ExportJSON
}

type d1ExportJSON struct {
	Success    bool            `json:"success"`
	Type       string          `json:"type"`
	Status     string          `json:"status"`
	AtBookmark string          `json:"at_bookmark"`
	Messages   []string        `json:"messages"`
	Error      string          `json:"error,omitempty"`
	Result     *d1ExportResult `json:"result,omitempty"`
}

type d1ExportResult struct {
	Filename  string `json:"filename"`
	SignedURL string `json:"signed_url"`
}

// dumpOptions are the export's dump_options.
type dumpOptions struct {
	NoData   bool     `json:"no_data"`
	NoSchema bool     `json:"no_schema"`
	Tables   []string `json:"tables"`
}

func (s *Service) registerD1Export() {
	s.cf.API("POST /client/v4/accounts/{account_id}/d1/database/{database_id}/export", cloudflare.AuthAccount, s.d1ExportRoute)
	const download = "GET " + d1ExportPrefix + "{token}"
	s.mux.HandleFunc(download, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(download, false)
		s.d1ExportDownload(w, r)
	})
}

func (s *Service) d1ExportRoute(w http.ResponseWriter, r *http.Request) {
	var body struct {
		OutputFormat    string       `json:"output_format"`
		CurrentBookmark string       `json:"current_bookmark"`
		DumpOptions     *dumpOptions `json:"dump_options"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	if body.OutputFormat != "polling" {
		core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 7400,
			fmt.Sprintf("The request is malformed: output_format must be \"polling\", got %q", body.OutputFormat)))
		return
	}
	rec, eng, err := s.d1Lookup(r)
	if err != nil {
		if errors.Is(err, errDBClosed) {
			err = d1NotFound(r.PathValue("database_id"))
		}
		core.WriteError(w, err)
		return
	}
	if body.CurrentBookmark != "" {
		s.mu.Lock()
		var found *d1Export
		for _, e := range s.st.d1Exports {
			if e.database == rec.UUID && e.answer.AtBookmark == body.CurrentBookmark {
				found = e
			}
		}
		s.mu.Unlock()
		if found == nil {
			core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 7400,
				fmt.Sprintf("The request is malformed: no export of this database is at bookmark %q", body.CurrentBookmark)))
			return
		}
		core.WriteResult(w, found.answer)
		return
	}
	opts := dumpOptions{}
	if body.DumpOptions != nil {
		opts = *body.DumpOptions
	}
	dump, err := eng.dump(opts)
	if err != nil {
		core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 7500, err.Error()))
		return
	}
	token := core.NewHexID()
	bookmark := core.NewHexID()
	now := time.Now().UTC()
	e := &d1Export{database: rec.UUID, dump: dump, answer: d1ExportJSON{
		Success: true, Type: "export", Status: "complete", AtBookmark: bookmark,
		Messages: []string{fmt.Sprintf("Export complete: %d bytes of SQL", len(dump))},
		Result: &d1ExportResult{
			Filename:  fmt.Sprintf("%s-%s.sql", rec.UUID, now.Format("20060102150405")),
			SignedURL: "http://" + r.Host + d1ExportPrefix + token,
		},
	}}
	s.mu.Lock()
	if s.st.d1Exports == nil {
		s.st.d1Exports = map[string]*d1Export{}
	}
	s.st.d1Exports[token] = e
	s.mu.Unlock()
	core.WriteResult(w, e.answer)
}

func (s *Service) d1ExportDownload(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	e, ok := s.st.d1Exports[r.PathValue("token")]
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no such export", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/sql")
	w.Header().Set("Content-Length", strconv.Itoa(len(e.dump)))
	_, _ = w.Write(e.dump)
}

// dump renders the database as SQL statements (see the file comment).
func (d *sqliteDB) dump(opts dumpOptions) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errDBClosed
	}
	res, err := d.runLocked(`SELECT type, name, tbl_name, sql FROM sqlite_schema
		WHERE sql IS NOT NULL AND substr(name, 1, 7) <> 'sqlite_' AND substr(tbl_name, 1, 4) <> '_cf_'
		ORDER BY CASE type WHEN 'table' THEN 0 ELSE 1 END, rowid`, nil, false)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("PRAGMA defer_foreign_keys=TRUE;\n")
	if len(res) == 0 {
		return []byte(b.String()), nil
	}
	for _, want := range opts.Tables {
		if !slices.ContainsFunc(res[0].Rows, func(row []any) bool { return row[0] == "table" && row[1] == want }) {
			return nil, fmt.Errorf("dump_options.tables names %q, which is not a table of the database", want)
		}
	}
	for _, row := range res[0].Rows {
		typ, name, table, sql := row[0].(string), row[1].(string), row[2].(string), row[3].(string)
		if len(opts.Tables) > 0 && !slices.Contains(opts.Tables, table) {
			continue
		}
		if !opts.NoSchema {
			b.WriteString(sql + ";\n")
		}
		if typ != "table" || opts.NoData {
			continue
		}
		rows, err := d.runLocked("SELECT * FROM "+quoteIdent(name), nil, false)
		if err != nil {
			return nil, err
		}
		for _, r := range rows[0].Rows {
			vals := make([]string, len(r))
			for i, v := range r {
				vals[i] = sqlLiteral(v)
			}
			fmt.Fprintf(&b, "INSERT INTO %s VALUES(%s);\n", quoteIdent(name), strings.Join(vals, ","))
		}
	}
	return []byte(b.String()), nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// sqlLiteral renders a column value so SQLite reads back the same value
// and type.
func sqlLiteral(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return "NULL"
		}
		s := strconv.FormatFloat(v, 'g', 17, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0" // stays REAL
		}
		return s
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case blobValue:
		return "X'" + hex.EncodeToString(v) + "'"
	}
	return "NULL"
}
