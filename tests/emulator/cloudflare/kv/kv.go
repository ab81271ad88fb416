package kv

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// Register mounts the routes of the API.
func (s *Service) Register() {
	const base = "/client/v4/accounts/{account_id}/storage/kv/namespaces"
	s.cf.API("POST "+base, cloudflare.AuthAccount, s.kvCreate)
	s.cf.API("GET "+base, cloudflare.AuthAccount, s.kvList)
	s.cf.API("GET "+base+"/{namespace_id}", cloudflare.AuthAccount, s.kvGet)
	s.cf.API("PUT "+base+"/{namespace_id}", cloudflare.AuthAccount, s.kvRename)
	s.cf.API("DELETE "+base+"/{namespace_id}", cloudflare.AuthAccount, s.kvDelete)
	s.cf.API("GET "+base+"/{namespace_id}/keys", cloudflare.AuthAccount, s.kvKeys)
	// Key names may contain '/' when the client does not escape them (the
	// Go SDK does not), so the key is the rest of the path.
	s.cf.API("GET "+base+"/{namespace_id}/values/{key_name...}", cloudflare.AuthAccount, s.kvGetValue)
	s.cf.API("GET "+base+"/{namespace_id}/metadata/{key_name...}", cloudflare.AuthAccount, s.kvGetMetadata)
	s.cf.API("PUT "+base+"/{namespace_id}/values/{key_name...}", cloudflare.AuthAccount, s.kvPutValue)
	s.cf.API("DELETE "+base+"/{namespace_id}/values/{key_name...}", cloudflare.AuthAccount, s.kvDeleteValue)
	s.registerKVBulk()
}

type kvNamespaceJSON struct {
	ID                  string `json:"id"`
	Title               string `json:"title"`
	SupportsURLEncoding bool   `json:"supports_url_encoding"`
}

func (ns *kvNamespace) json() kvNamespaceJSON {
	return kvNamespaceJSON{ID: ns.ID, Title: ns.Title, SupportsURLEncoding: true}
}

func (v *kvValue) expired(now time.Time) bool {
	return v.Expiration != 0 && now.Unix() >= v.Expiration
}

func kvNamespaceNotFound() *core.APIError {
	return core.NewAPIError(http.StatusNotFound, 10013, "namespace not found")
}

func kvDuplicate() *core.APIError {
	return core.NewAPIError(http.StatusBadRequest, 10014, "a namespace with this account ID and title already exists")
}

// kvTitle reads and checks the {title} body of create and rename.
func kvTitle(w http.ResponseWriter, r *http.Request) (string, error) {
	var body struct {
		Title string `json:"title"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		return "", err
	}
	if strings.TrimSpace(body.Title) == "" || len(body.Title) > 512 {
		return "", core.NewAPIError(http.StatusBadRequest, 10019, "namespace title must be 1-512 bytes and not blank")
	}
	return body.Title, nil
}

// kvTitleTakenLocked reports whether another namespace of acct has title.
func (s *Service) kvTitleTakenLocked(acct, title, except string) bool {
	for _, ns := range s.st.KV {
		if ns.AccountID == acct && ns.Title == title && ns.ID != except {
			return true
		}
	}
	return false
}

func (s *Service) kvCreate(w http.ResponseWriter, r *http.Request) {
	acct := r.PathValue("account_id")
	title, err := kvTitle(w, r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	s.mu.Lock()
	if s.kvTitleTakenLocked(acct, title, "") {
		s.mu.Unlock()
		core.WriteError(w, kvDuplicate())
		return
	}
	ns := &kvNamespace{ID: core.NewHexID(), AccountID: acct, Title: title, CreatedAt: time.Now().UTC(), Values: map[string]*kvValue{}}
	s.st.KV[ns.ID] = ns
	out := ns.json()
	s.mu.Unlock()
	if err := s.save(); err != nil {
		core.WriteError(w, err)
		return
	}
	core.WriteResult(w, out)
}

func (s *Service) kvList(w http.ResponseWriter, r *http.Request) {
	acct := r.PathValue("account_id")
	page, perPage := core.PageParams(r, 20, 1000)
	q := r.URL.Query()
	byID := q.Get("order") == "id"
	desc := q.Get("direction") == "desc"

	s.mu.Lock()
	var all []kvNamespaceJSON
	for _, ns := range s.st.KV {
		if ns.AccountID == acct {
			all = append(all, ns.json())
		}
	}
	s.mu.Unlock()
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i].Title+"\x00"+all[i].ID, all[j].Title+"\x00"+all[j].ID
		if byID {
			a, b = all[i].ID, all[j].ID
		}
		if desc {
			return a > b
		}
		return a < b
	})
	out, info := core.Paginate(all, page, perPage)
	core.WriteEnvelope(w, http.StatusOK, out, info, nil)
}

// kvLookupLocked finds a namespace of the caller's account.
func (s *Service) kvLookupLocked(r *http.Request) (*kvNamespace, error) {
	ns, ok := s.st.KV[r.PathValue("namespace_id")]
	if !ok || ns.AccountID != r.PathValue("account_id") {
		return nil, kvNamespaceNotFound()
	}
	return ns, nil
}

func (s *Service) kvGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ns, err := s.kvLookupLocked(r)
	var out kvNamespaceJSON
	if err == nil {
		out = ns.json()
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

func (s *Service) kvRename(w http.ResponseWriter, r *http.Request) {
	title, err := kvTitle(w, r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	s.mu.Lock()
	ns, err := s.kvLookupLocked(r)
	if err == nil && s.kvTitleTakenLocked(ns.AccountID, title, ns.ID) {
		err = kvDuplicate()
	}
	var out kvNamespaceJSON
	if err == nil {
		ns.Title = title
		out = ns.json()
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

func (s *Service) kvDelete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ns, err := s.kvLookupLocked(r)
	if err == nil {
		delete(s.st.KV, ns.ID)
	}
	s.mu.Unlock()
	// An empty object, not null: the Python SDK parses the result as a
	// NamespaceDeleteResponse model, which strict validation requires.
	s.saveAndRespond(w, err, map[string]any{})
}

type kvKeyJSON struct {
	Name       string          `json:"name"`
	Expiration int64           `json:"expiration,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
}

// kvKeys lists keys in byte order with an opaque cursor, like KV: the cursor
// is empty on the last page.
func (s *Service) kvKeys(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 1000
	if v, err := strconv.ParseFloat(q.Get("limit"), 64); err == nil {
		limit = min(max(int(v), 10), 1000)
	}
	prefix := q.Get("prefix")
	after := ""
	if c := q.Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil {
			core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10019, "invalid cursor"))
			return
		}
		after = string(b)
	}

	s.mu.Lock()
	ns, err := s.kvLookupLocked(r)
	var keys []kvKeyJSON
	if err == nil {
		now := time.Now()
		for _, name := range core.SortedKeys(ns.Values) {
			v := ns.Values[name]
			if !strings.HasPrefix(name, prefix) || v.expired(now) || (after != "" && name <= after) {
				continue
			}
			keys = append(keys, kvKeyJSON{Name: name, Expiration: v.Expiration, Metadata: v.Metadata})
		}
	}
	s.mu.Unlock()
	if err != nil {
		core.WriteError(w, err)
		return
	}
	cursor := ""
	if len(keys) > limit {
		keys = keys[:limit]
		cursor = base64.RawURLEncoding.EncodeToString([]byte(keys[limit-1].Name))
	}
	if keys == nil {
		keys = []kvKeyJSON{}
	}
	core.WriteEnvelope(w, http.StatusOK, keys, map[string]any{"count": len(keys), "cursor": cursor}, nil)
}

func kvKeyName(r *http.Request) (string, error) {
	key := r.PathValue("key_name")
	if key == "" || key == "." || key == ".." {
		return "", core.NewAPIError(http.StatusBadRequest, 10019, "key names must not be empty, '.' or '..'")
	}
	if len(key) > 512 {
		return "", core.NewAPIError(http.StatusRequestURITooLong, 10033, "key names may be at most 512 bytes")
	}
	return key, nil
}

func (s *Service) kvGetValue(w http.ResponseWriter, r *http.Request) {
	key, err := kvKeyName(r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	s.mu.Lock()
	ns, err := s.kvLookupLocked(r)
	var val []byte
	if err == nil {
		v, ok := ns.Values[key]
		if !ok || v.expired(time.Now()) {
			err = core.NewAPIError(http.StatusNotFound, 10009, "get: 'key not found'")
		} else {
			val = v.Value
		}
	}
	s.mu.Unlock()
	if err != nil {
		core.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(val)))
	_, _ = w.Write(val)
}

// kvGetMetadata is GET metadata/{key}: the key's metadata as its result
// (null when the key has none), or 10009 for a missing or expired key.
func (s *Service) kvGetMetadata(w http.ResponseWriter, r *http.Request) {
	key, err := kvKeyName(r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	s.mu.Lock()
	ns, err := s.kvLookupLocked(r)
	var meta json.RawMessage
	if err == nil {
		v, ok := ns.Values[key]
		if !ok || v.expired(time.Now()) {
			err = core.NewAPIError(http.StatusNotFound, 10009, "get: 'key not found'")
		} else {
			meta = append(json.RawMessage{}, v.Metadata...)
		}
	}
	s.mu.Unlock()
	if len(meta) == 0 {
		meta = json.RawMessage("null")
	}
	core.Respond(w, err, meta)
}

// kvPutValue stores the raw body, or the "value" (and "metadata") parts of a
// multipart form, which are the two encodings KV accepts.
func (s *Service) kvPutValue(w http.ResponseWriter, r *http.Request) {
	key, err := kvKeyName(r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	val := &kvValue{}
	q := r.URL.Query()
	if v := q.Get("expiration"); v != "" {
		n, perr := strconv.ParseFloat(v, 64)
		if perr != nil || int64(n) <= time.Now().Unix() {
			core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10038, "Invalid expiration of "+v+". Please specify integer greater than the current number of seconds since the UNIX epoch."))
			return
		}
		val.Expiration = int64(n)
	}
	if v := q.Get("expiration_ttl"); v != "" {
		n, perr := strconv.ParseFloat(v, 64)
		if perr != nil || n < 60 {
			core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10038, "Invalid expiration_ttl of "+v+". Expiration TTL must be at least 60."))
			return
		}
		val.Expiration = time.Now().Unix() + int64(n)
	}
	r.Body = http.MaxBytesReader(w, r.Body, core.MaxBody)
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		if err := r.ParseMultipartForm(core.MaxBody); err != nil {
			core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10019, "could not parse multipart body: "+err.Error()))
			return
		}
		if f, _, ferr := r.FormFile("value"); ferr == nil {
			val.Value, err = io.ReadAll(f)
			_ = f.Close()
		} else {
			val.Value = []byte(r.FormValue("value"))
		}
		if md := r.FormValue("metadata"); md != "" {
			if !json.Valid([]byte(md)) {
				core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10019, "metadata must be valid JSON"))
				return
			}
			val.Metadata = json.RawMessage(md)
		}
	} else {
		val.Value, err = io.ReadAll(r.Body)
	}
	if err != nil {
		core.WriteError(w, core.NewAPIError(http.StatusRequestEntityTooLarge, 10019, "value too large"))
		return
	}

	s.mu.Lock()
	ns, err := s.kvLookupLocked(r)
	if err == nil {
		ns.Values[key] = val
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, map[string]any{})
}

func (s *Service) kvDeleteValue(w http.ResponseWriter, r *http.Request) {
	key, err := kvKeyName(r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	s.mu.Lock()
	ns, err := s.kvLookupLocked(r)
	if err == nil {
		// Deleting a missing key succeeds in KV; it is idempotent.
		delete(ns.Values, key)
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, map[string]any{})
}
