package emulator

// The backends of the scripts' bindings. workerd sends a binding's
// operations to a service; the configuration (runtime.go) points each
// binding at this emulator with X-Emulator-Binding naming the store, and
// each kind is answered in the protocol workerd's binding speaks:
//
//   - d1: POST /query or /execute?resultsFormat=..., a JSON {sql, params}
//     or an array of them, run in one transaction on the database's SQLite
//     file (the same one the D1 API's /query serves); one result per item;
//   - kv: GET/PUT/DELETE /<key> (?urlencoded=true: the key percent-encoded),
//     GET / to list (prefix, key_count_limit, cursor), POST /bulk/get;
//     metadata in CF-KV-Metadata, expiry in CF-Expiration;
//   - queue: POST /message (X-Msg-Fmt, X-Msg-Delay-Secs) and POST /batch,
//     into the queue's backlog (broker.go);
//   - r2: the bucket's objects (r2_binding.go);
//   - assets: the script's static assets at the request's path.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// withBindings answers the requests workerd makes for bindings before the
// routes see them: their paths (/query, /<key>) are the protocol's own.
func (s *Server) withBindings(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Header.Get(bindingHeader)
		if target == "" {
			next.ServeHTTP(w, r)
			return
		}
		kind, rest, _ := strings.Cut(target, "/")
		acct, id, _ := strings.Cut(rest, "/")
		switch kind {
		case "d1":
			s.bindD1(w, r, acct, id)
		case "kv":
			s.bindKV(w, r, acct, id)
		case "queue":
			s.bindQueue(w, r, acct, id)
		case "r2":
			s.bindR2(w, r, acct, id)
		case "assets":
			s.bindAssets(w, r, acct, id)
		default:
			http.Error(w, "unknown binding kind "+kind, http.StatusBadRequest)
		}
	})
}

type d1BindingQuery struct {
	SQL    string `json:"sql"`
	Params []any  `json:"params"`
}

// d1BindingFailure is how the binding learns a query failed: it throws
// "D1_ERROR: <error>" in the script.
func d1BindingFailure(w http.ResponseWriter, msg string) {
	core.WriteJSON(w, http.StatusOK, map[string]any{"success": false, "error": msg})
}

func (s *Server) bindD1(w http.ResponseWriter, r *http.Request, acct, id string) {
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

// kvBindingKey is the key a KV binding request names.
func kvBindingKey(r *http.Request) (string, error) {
	raw := strings.TrimPrefix(r.URL.EscapedPath(), "/")
	return url.PathUnescape(raw)
}

func (s *Server) bindKV(w http.ResponseWriter, r *http.Request, acct, id string) {
	now := time.Now()
	s.mu.Lock()
	ns := s.st.KV[id]
	if ns == nil || ns.AccountID != acct {
		s.mu.Unlock()
		http.Error(w, "KV namespace "+id+" does not exist", http.StatusNotFound)
		return
	}
	s.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/":
		s.kvBindingList(w, r, ns, now)
		return
	case r.Method == http.MethodPost && r.URL.Path == "/bulk/get":
		s.kvBindingBulkGet(w, r, ns, now)
		return
	}
	key, err := kvBindingKey(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.mu.Lock()
		v := ns.Values[key]
		var value []byte
		var meta json.RawMessage
		var exp int64
		if v != nil && !v.expired(now) {
			value, meta, exp = v.Value, v.Metadata, v.Expiration
		} else {
			v = nil
		}
		s.mu.Unlock()
		if v == nil {
			http.Error(w, "Not Found", http.StatusNotFound)
			return
		}
		if len(meta) > 0 {
			w.Header().Set("CF-KV-Metadata", string(meta))
		}
		if exp > 0 {
			w.Header().Set("CF-Expiration", strconv.FormatInt(exp, 10))
		}
		_, _ = w.Write(value)
	case http.MethodPut:
		val := &kvValue{}
		q := r.URL.Query()
		if e := q.Get("expiration"); e != "" {
			n, err := strconv.ParseInt(e, 10, 64)
			if err != nil || n <= now.Unix()+59 {
				http.Error(w, "Invalid expiration of "+e+". Expiration times must be at least 60 seconds in the future.", http.StatusBadRequest)
				return
			}
			val.Expiration = n
		}
		if e := q.Get("expiration_ttl"); e != "" {
			n, err := strconv.ParseInt(e, 10, 64)
			if err != nil || n < 60 {
				http.Error(w, "Invalid expiration_ttl of "+e+". Expiration TTL must be at least 60.", http.StatusBadRequest)
				return
			}
			val.Expiration = now.Unix() + n
		}
		if md := r.Header.Get("CF-KV-Metadata"); md != "" {
			if !json.Valid([]byte(md)) {
				http.Error(w, "metadata must be valid JSON", http.StatusBadRequest)
				return
			}
			val.Metadata = json.RawMessage(md)
		}
		val.Value, err = io.ReadAll(http.MaxBytesReader(w, r.Body, 25<<20))
		if err != nil {
			http.Error(w, "Value length exceeds limit of 26214400.", http.StatusRequestEntityTooLarge)
			return
		}
		s.mu.Lock()
		ns.Values[key] = val
		s.mu.Unlock()
		if err := s.save(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	case http.MethodDelete:
		s.mu.Lock()
		delete(ns.Values, key)
		s.mu.Unlock()
		if err := s.save(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s *Server) kvBindingList(w http.ResponseWriter, r *http.Request, ns *kvNamespace, now time.Time) {
	q := r.URL.Query()
	limit := 1000
	if l := q.Get("key_count_limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			http.Error(w, "Invalid key_count_limit of "+l, http.StatusBadRequest)
			return
		}
		limit = n
	}
	prefix, cursor := q.Get("prefix"), q.Get("cursor")
	after := ""
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil {
			http.Error(w, "Invalid cursor", http.StatusBadRequest)
			return
		}
		after = string(b)
	}
	type keyJSON struct {
		Name       string `json:"name"`
		Expiration int64  `json:"expiration,omitempty"`
		Metadata   string `json:"metadata,omitempty"` // workerd wants the JSON as a string
	}
	s.mu.Lock()
	var names []string
	for k, v := range ns.Values {
		if strings.HasPrefix(k, prefix) && k > after && !v.expired(now) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	complete := len(names) <= limit
	if !complete {
		names = names[:limit]
	}
	keys := make([]keyJSON, len(names))
	for i, k := range names {
		v := ns.Values[k]
		keys[i] = keyJSON{Name: k, Expiration: v.Expiration, Metadata: string(v.Metadata)}
	}
	s.mu.Unlock()
	out := map[string]any{"keys": keys, "list_complete": complete, "cacheStatus": nil}
	if !complete {
		out["cursor"] = base64.RawURLEncoding.EncodeToString([]byte(names[len(names)-1]))
	}
	core.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) kvBindingBulkGet(w http.ResponseWriter, r *http.Request, ns *kvNamespace, now time.Time) {
	var body struct {
		Keys         []string `json:"keys"`
		Type         string   `json:"type"`
		WithMetadata bool     `json:"withMetadata"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, core.MaxBody)).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(body.Keys) < 1 || len(body.Keys) > 100 {
		http.Error(w, "You can request between 1 and 100 keys", http.StatusBadRequest)
		return
	}
	out := map[string]any{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range body.Keys {
		v := ns.Values[k]
		if v == nil || v.expired(now) {
			out[k] = nil
			continue
		}
		var value any = string(v.Value)
		if body.Type == "json" {
			var parsed any
			if err := json.Unmarshal(v.Value, &parsed); err != nil {
				http.Error(w, "value of "+k+" is not JSON", http.StatusBadRequest)
				return
			}
			value = parsed
		}
		if body.WithMetadata {
			var meta any
			_ = json.Unmarshal(v.Metadata, &meta)
			value = map[string]any{"value": value, "metadata": meta}
		}
		out[k] = value
	}
	core.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) bindAssets(w http.ResponseWriter, r *http.Request, acct, script string) {
	p, err := url.PathUnescape(r.URL.EscapedPath())
	if err != nil {
		p = r.URL.Path
	}
	s.mu.Lock()
	ws := s.st.Workers[wkKey(acct, script)]
	s.mu.Unlock()
	if ws == nil || !s.serveAssetOf(w, r, ws, p, true, "") {
		http.NotFound(w, r)
	}
}
