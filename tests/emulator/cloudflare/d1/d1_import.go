package d1

// D1 import, the flow `wrangler d1 execute --remote --file` uses:
//
//	POST d1/database/{id}/import {"action":"init","etag":<md5 of the file>}
//	  -> {upload_url, filename}
//	PUT <upload_url> (the file; answers ETag: the md5, which wrangler checks)
//	POST .../import {"action":"ingest","filename","etag"} -> status "complete"
//	POST .../import {"action":"poll","current_bookmark"} -> the same answer
//
// Cloudflare's upload_url is a presigned R2 URL; the emulator's is its own
// /__d1-import/{token}, which needs no Authorization (the token is the
// credential, as a presigned URL's signature is). The file runs as one unit,
// like a query with several statements: if a statement fails nothing of the
// file persists. Shapes follow cloudflare-go/v4 d1.DatabaseImportResponse;
// ingest answering "complete" at once (no "active" round) is allowed by the
// documented flow, which polls only while the status is "active".

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

type d1Upload struct {
	account, database string
	filename, etag    string
	body              []byte // nil until the PUT
}

type d1ImportJSON struct {
	Success    bool            `json:"success"`
	Type       string          `json:"type"`
	Status     string          `json:"status,omitempty"`
	UploadURL  string          `json:"upload_url,omitempty"`
	Filename   string          `json:"filename,omitempty"`
	AtBookmark string          `json:"at_bookmark,omitempty"`
	Error      string          `json:"error,omitempty"`
	Messages   []string        `json:"messages"`
	Result     *d1ImportResult `json:"result,omitempty"`
}

type d1ImportResult struct {
	FinalBookmark string `json:"final_bookmark"`
	NumQueries    int    `json:"num_queries"`
	Meta          d1Meta `json:"meta"`
}

const d1ImportPrefix = "/__d1-import/"

func (s *Service) registerD1Import() {
	s.cf.API("POST /client/v4/accounts/{account_id}/d1/database/{database_id}/import", cloudflare.AuthAccount, s.d1Import)
	const upload = "PUT " + d1ImportPrefix + "{token}"
	s.mux.HandleFunc(upload, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(upload, false)
		s.d1ImportUpload(w, r)
	})
}

func (s *Service) d1Import(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Action   string `json:"action"`
		Etag     string `json:"etag"`
		Filename string `json:"filename"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
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
	malformed := func(msg string) {
		core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 7400, "The request is malformed: "+msg))
	}
	switch body.Action {
	case "init":
		if body.Etag == "" {
			malformed("init needs the file's etag (its MD5, hex)")
			return
		}
		token := core.NewHexID()
		up := &d1Upload{account: rec.AccountID, database: rec.UUID, etag: strings.ToLower(body.Etag),
			filename: "import-" + token[:12] + ".sql"}
		s.mu.Lock()
		if s.st.d1Imports == nil {
			s.st.d1Imports = map[string]*d1Upload{}
		}
		s.st.d1Imports[token] = up
		s.mu.Unlock()
		core.WriteResult(w, d1ImportJSON{Success: true, Type: "import", Filename: up.filename,
			UploadURL: "http://" + r.Host + d1ImportPrefix + token, Messages: []string{}})
	case "ingest":
		s.mu.Lock()
		var up *d1Upload
		var token string
		for t, u := range s.st.d1Imports {
			if u.database == rec.UUID && u.filename == body.Filename {
				up, token = u, t
			}
		}
		s.mu.Unlock()
		switch {
		case up == nil:
			malformed(fmt.Sprintf("no import file %q was initialised for this database", body.Filename))
			return
		case up.body == nil:
			malformed(fmt.Sprintf("import file %q has not been uploaded", body.Filename))
			return
		case !strings.EqualFold(body.Etag, up.etag):
			malformed(fmt.Sprintf("etag %q does not match the uploaded file's", body.Etag))
			return
		}
		out := s.d1Ingest(r, rec, eng, up)
		s.mu.Lock()
		delete(s.st.d1Imports, token)
		if s.st.d1Ingests == nil {
			s.st.d1Ingests = map[string]*d1ImportJSON{}
		}
		s.st.d1Ingests[rec.UUID] = out
		s.mu.Unlock()
		core.WriteResult(w, out)
	case "poll":
		s.mu.Lock()
		out := s.st.d1Ingests[rec.UUID]
		s.mu.Unlock()
		if out == nil {
			malformed("there is no import to poll for this database")
			return
		}
		core.WriteResult(w, out)
	default:
		malformed(fmt.Sprintf("action must be init, ingest or poll, got %q", body.Action))
	}
}

// d1Ingest runs the uploaded file. A SQL error is an answer, not an HTTP
// error: success false with the message, which wrangler prints.
func (s *Service) d1Ingest(r *http.Request, rec *d1Database, eng *sqliteDB, up *d1Upload) *d1ImportJSON {
	results, err := eng.run(r.Context(), []sqlItem{{SQL: string(up.body)}})
	if err != nil {
		msg := err.Error()
		var se *sqlError
		if errors.As(err, &se) {
			msg = se.msg
		}
		return &d1ImportJSON{Success: false, Type: "import", Status: "error", Error: msg, Messages: []string{}, Filename: up.filename}
	}
	meta := d1Meta{ServedByRegion: rec.region(), ServedByPrimary: true}
	for _, res := range results {
		ms := float64(res.Duration.Microseconds()) / 1000
		meta.Duration += ms
		meta.Timings.SQLDurationMs += ms
		meta.Changes += res.Changes
		meta.RowsRead += res.RowsRead
		meta.RowsWritten += res.RowsWritten
		meta.ChangedDB = meta.ChangedDB || res.ChangedDB
		meta.LastRowID = res.LastRowID
		meta.SizeAfter = res.SizeAfter
	}
	bookmark := core.NewHexID()
	return &d1ImportJSON{
		Success: true, Type: "import", Status: "complete", AtBookmark: bookmark, Filename: up.filename,
		Messages: []string{fmt.Sprintf("Import complete: %d queries from %s", len(results), up.filename)},
		Result:   &d1ImportResult{FinalBookmark: bookmark, NumQueries: len(results), Meta: meta},
	}
}

// d1ImportUpload takes the file for an initialised import and answers its
// MD5 as ETag (quoted, as R2 does).
func (s *Service) d1ImportUpload(w http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	s.mu.Lock()
	up, ok := s.st.d1Imports[token]
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no such upload", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, core.MaxBody))
	if err != nil {
		http.Error(w, "upload too large or interrupted", http.StatusRequestEntityTooLarge)
		return
	}
	sum := md5.Sum(body)
	s.mu.Lock()
	up.body = body
	s.mu.Unlock()
	w.Header().Set("ETag", strconv.Quote(hex.EncodeToString(sum[:])))
	w.WriteHeader(http.StatusOK)
}
