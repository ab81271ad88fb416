package kv

// The KV binding's backend: workerd sends a script's KV operations as
// GET/PUT/DELETE /<key> (?urlencoded=true: the key percent-encoded), GET /
// to list (prefix, key_count_limit, cursor) and POST /bulk/get; metadata
// travels in CF-KV-Metadata, expiry in CF-Expiration.

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// kvBindingKey is the key a KV binding request names.
func kvBindingKey(r *http.Request) (string, error) {
	raw := strings.TrimPrefix(r.URL.EscapedPath(), "/")
	return url.PathUnescape(raw)
}

// ServeBinding answers one request of a KV binding to namespace id of acct.
func (s *Service) ServeBinding(w http.ResponseWriter, r *http.Request, acct, id string) {
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

func (s *Service) kvBindingList(w http.ResponseWriter, r *http.Request, ns *kvNamespace, now time.Time) {
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

func (s *Service) kvBindingBulkGet(w http.ResponseWriter, r *http.Request, ns *kvNamespace, now time.Time) {
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
