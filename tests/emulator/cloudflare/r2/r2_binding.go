package r2

// The R2 binding's backend: workerd sends a bucket's operations as
// GET / (head, get, list) with the request as JSON in cf-r2-request, and
// PUT / (put, delete) with a body that starts with that JSON, its length in
// cf-r2-metadata-size, followed by the object's bytes. Answers carry the
// object's properties as JSON first, likewise sized, then the body; errors
// are a status with cf-r2-error holding {message, version: 1, v4code}.
// Objects are the bucket's, shared with the R2 API. Multipart uploads through
// the binding are not run: they answer an error saying so.

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

type r2BindingRequest struct {
	Method       string          `json:"method"`
	Object       string          `json:"object"`
	Objects      []string        `json:"objects"`
	HTTPFields   map[string]any  `json:"httpFields"`
	CustomFields []r2Field       `json:"customFields"`
	Range        *r2BindingRange `json:"range"`
	Limit        int             `json:"limit"`
	Prefix       string          `json:"prefix"`
	Cursor       string          `json:"cursor"`
	Delimiter    string          `json:"delimiter"`
	StartAfter   string          `json:"startAfter"`
}

type r2Field struct {
	K string `json:"k"`
	V string `json:"v"`
}

type r2BindingRange struct {
	Offset *r2Int `json:"offset"`
	Length *r2Int `json:"length"`
	Suffix *r2Int `json:"suffix"`
}

// r2Int is a number the runtime sends as a JSON string ("1") or number.
type r2Int int64

func (n *r2Int) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(strings.Trim(string(b), `"`), 10, 64)
	*n = r2Int(v)
	return err
}

// r2Properties is an object as the runtime reads it.
type r2Properties struct {
	Name         string            `json:"name"`
	Version      string            `json:"version"`
	Size         int               `json:"size"`
	Etag         string            `json:"etag"`
	Uploaded     int64             `json:"uploaded"`
	HTTPFields   map[string]any    `json:"httpFields"`
	CustomFields []r2Field         `json:"customFields"`
	Range        map[string]int64  `json:"range,omitempty"`
	Checksums    map[string]string `json:"checksums"`
}

func r2BindingError(w http.ResponseWriter, status, code int, msg string) {
	e, _ := json.Marshal(map[string]any{"message": msg, "version": 1, "v4code": code})
	w.Header().Set("cf-r2-error", string(e))
	w.WriteHeader(status)
}

func r2PropertiesOf(key string, o *r2Object) r2Properties {
	fields := map[string]any{}
	if o.ContentType != "" {
		fields["contentType"] = o.ContentType
	}
	custom := []r2Field{}
	for _, k := range core.SortedKeys(o.CustomMetadata) {
		custom = append(custom, r2Field{K: k, V: o.CustomMetadata[k]})
	}
	etag := r2ObjectEtag(o.Body)
	return r2Properties{Name: key, Version: etag[:16], Size: len(o.Body), Etag: etag, Uploaded: o.Uploaded.UnixMilli(),
		HTTPFields: fields, CustomFields: custom, Checksums: map[string]string{"0": etag}}
}

// writeR2 answers metadata (JSON) followed by body.
func writeR2(w http.ResponseWriter, metadata any, body []byte) {
	meta, _ := json.Marshal(metadata)
	w.Header().Set("cf-r2-metadata-size", strconv.Itoa(len(meta)))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(meta)+len(body)))
	_, _ = w.Write(meta)
	_, _ = w.Write(body)
}

// ServeBinding answers one request of an R2 binding to bucket of acct.
func (s *Service) ServeBinding(w http.ResponseWriter, r *http.Request, acct, bucket string) {
	var req r2BindingRequest
	var value []byte
	switch r.Method {
	case http.MethodGet:
		if err := json.Unmarshal([]byte(r.Header.Get("cf-r2-request")), &req); err != nil {
			r2BindingError(w, http.StatusBadRequest, 10029, "Metadata missing or invalid")
			return
		}
	case http.MethodPut:
		size, err := strconv.Atoi(r.Header.Get("cf-r2-metadata-size"))
		body, rerr := io.ReadAll(http.MaxBytesReader(w, r.Body, core.MaxBody))
		if err != nil || rerr != nil || size < 0 || size > len(body) || json.Unmarshal(body[:size], &req) != nil {
			r2BindingError(w, http.StatusBadRequest, 10029, "Metadata missing or invalid")
			return
		}
		value = body[size:]
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.mu.Lock()
	b, ok := s.st.R2[r2Key(acct, bucket)]
	s.mu.Unlock()
	if !ok {
		r2BindingError(w, http.StatusNotFound, 10006, "The specified bucket does not exist.")
		return
	}
	switch req.Method {
	case "head", "get":
		s.mu.Lock()
		o := b.Objects[req.Object]
		var props r2Properties
		var body []byte
		if o != nil {
			props, body = r2PropertiesOf(req.Object, o), o.Body
		}
		s.mu.Unlock()
		if o == nil {
			r2BindingError(w, http.StatusNotFound, 10007, "The specified key does not exist.")
			return
		}
		if req.Method == "head" {
			writeR2(w, props, nil)
			return
		}
		if rg := req.Range; rg != nil {
			off, n := int64(0), int64(len(body))
			switch {
			case rg.Suffix != nil:
				off = max(0, n-int64(*rg.Suffix))
			case rg.Offset != nil:
				off = min(int64(*rg.Offset), n)
			}
			end := n
			if rg.Length != nil {
				end = min(off+int64(*rg.Length), n)
			}
			body = body[off:end]
			props.Range = map[string]int64{"offset": off, "length": end - off}
		}
		writeR2(w, props, body)
	case "put":
		obj := &r2Object{Body: bytes.Clone(value), Uploaded: time.Now().UTC()}
		if ct, ok := req.HTTPFields["contentType"].(string); ok {
			obj.ContentType = ct
		}
		for _, f := range req.CustomFields {
			if obj.CustomMetadata == nil {
				obj.CustomMetadata = map[string]string{}
			}
			obj.CustomMetadata[f.K] = f.V
		}
		s.mu.Lock()
		b.Objects[req.Object] = obj
		props := r2PropertiesOf(req.Object, obj)
		s.mu.Unlock()
		if err := s.save(); err != nil {
			r2BindingError(w, http.StatusInternalServerError, 10001, err.Error())
			return
		}
		writeR2(w, props, nil)
	case "delete":
		keys := req.Objects
		if req.Object != "" {
			keys = append(keys, req.Object)
		}
		s.mu.Lock()
		for _, k := range keys {
			delete(b.Objects, k)
		}
		s.mu.Unlock()
		if err := s.save(); err != nil {
			r2BindingError(w, http.StatusInternalServerError, 10001, err.Error())
		}
	case "list":
		s.writeR2List(w, b, req)
	default:
		r2BindingError(w, http.StatusNotImplemented, 10001, fmt.Sprintf("R2 %s through a binding is not run by the emulator", req.Method))
	}
}

func (s *Service) writeR2List(w http.ResponseWriter, b *r2Bucket, req r2BindingRequest) {
	limit := int(req.Limit)
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	after := req.StartAfter
	if req.Cursor != "" {
		c, err := base64.RawURLEncoding.DecodeString(req.Cursor)
		if err != nil {
			r2BindingError(w, http.StatusBadRequest, 10029, "Invalid cursor")
			return
		}
		after = string(c)
	}
	s.mu.Lock()
	keys := make([]string, 0, len(b.Objects))
	for k := range b.Objects {
		if strings.HasPrefix(k, req.Prefix) && k > after {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	objects := []r2Properties{}
	prefixes := []string{}
	seen := map[string]bool{}
	last := ""
	truncated := false
	for _, k := range keys {
		if len(objects)+len(prefixes) == limit {
			truncated = true
			break
		}
		last = k
		if req.Delimiter != "" {
			if i := strings.Index(k[len(req.Prefix):], req.Delimiter); i >= 0 {
				p := k[:len(req.Prefix)+i+len(req.Delimiter)]
				if !seen[p] {
					seen[p] = true
					prefixes = append(prefixes, p)
				}
				continue
			}
		}
		objects = append(objects, r2PropertiesOf(k, b.Objects[k]))
	}
	s.mu.Unlock()
	out := map[string]any{"objects": objects, "truncated": truncated, "delimitedPrefixes": prefixes}
	if truncated {
		out["cursor"] = base64.RawURLEncoding.EncodeToString([]byte(last))
	}
	writeR2(w, out, nil)
}

// r2ObjectEtag is the object's MD5 in hex, as R2's single-part etags are.
func r2ObjectEtag(body []byte) string {
	sum := md5.Sum(body)
	return hex.EncodeToString(sum[:])
}
