package kv

// KV bulk routes: PUT namespaces/{id}/bulk writes up to 10,000 pairs,
// DELETE .../bulk and POST .../bulk/delete remove up to 10,000 keys (wrangler
// 4 sends DELETE, cloudflare-go/v4 POST). Each request is applied whole:
// one invalid item rejects it with nothing written. The answer is
// {successful_key_count, unsuccessful_keys} as documented.
//
// POST .../bulk/get {keys, type, withMetadata} reads up to 100 keys at
// once, answering {values: {key: value}}, or with withMetadata {values:
// {key: {value, metadata, expiration?}}}; a key that does not exist (or has
// expired) is null. type "json" parses each value as JSON (the default,
// "text", answers them as strings). Documented (the KV API reference and
// the binding's get of several keys): the body, the shapes, the 100-key
// limit and null for a missing key. Assumed: the code of the refusals
// (10019, the family's invalid-request code) and that a value type "json"
// cannot parse fails the whole request.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// kvBulkMax is the documented limit of pairs or keys per bulk request.
const kvBulkMax = 10000

func (s *Service) registerKVBulk() {
	const base = "/client/v4/accounts/{account_id}/storage/kv/namespaces/{namespace_id}"
	s.cf.API("PUT "+base+"/bulk", cloudflare.AuthAccount, s.kvBulkPut)
	s.cf.API("DELETE "+base+"/bulk", cloudflare.AuthAccount, s.kvBulkDelete)
	s.cf.API("POST "+base+"/bulk/delete", cloudflare.AuthAccount, s.kvBulkDelete)
	s.cf.API("POST "+base+"/bulk/get", cloudflare.AuthAccount, s.kvBulkGet)
}

// kvBulkGetMax is the documented limit of keys per bulk read.
const kvBulkGetMax = 100

// kvBulkGet reads several keys at once.
func (s *Service) kvBulkGet(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Keys         []string `json:"keys"`
		Type         string   `json:"type"`
		WithMetadata bool     `json:"withMetadata"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	switch {
	case len(body.Keys) == 0 || len(body.Keys) > kvBulkGetMax:
		core.WriteError(w, kvBulkInvalid("keys takes 1 to %d key names, got %d", kvBulkGetMax, len(body.Keys)))
		return
	case body.Type != "" && body.Type != "text" && body.Type != "json":
		core.WriteError(w, kvBulkInvalid("type must be \"text\" or \"json\", got %q", body.Type))
		return
	}
	for _, k := range body.Keys {
		if err := checkKVKey(k); err != nil {
			core.WriteError(w, err)
			return
		}
	}
	type withMeta struct {
		Value      any             `json:"value"`
		Metadata   json.RawMessage `json:"metadata"`
		Expiration int64           `json:"expiration,omitempty"`
	}
	values := map[string]any{}
	now := time.Now()
	s.mu.Lock()
	ns, err := s.kvLookupLocked(r)
	for _, k := range body.Keys {
		if err != nil {
			break
		}
		v, ok := ns.Values[k]
		if !ok || v.expired(now) {
			values[k] = nil
			continue
		}
		var value any = string(v.Value)
		if body.Type == "json" {
			var parsed json.RawMessage
			if json.Unmarshal(v.Value, &parsed) != nil {
				err = kvBulkInvalid("the value of key %q is not JSON, which type \"json\" needs", k)
				break
			}
			value = parsed
		}
		if !body.WithMetadata {
			values[k] = value
			continue
		}
		meta := json.RawMessage("null")
		if len(v.Metadata) > 0 {
			meta = append(json.RawMessage{}, v.Metadata...)
		}
		values[k] = withMeta{Value: value, Metadata: meta, Expiration: v.Expiration}
	}
	s.mu.Unlock()
	core.Respond(w, err, map[string]any{"values": values})
}

type kvBulkResult struct {
	SuccessfulKeyCount int      `json:"successful_key_count"`
	UnsuccessfulKeys   []string `json:"unsuccessful_keys"`
}

func kvBulkInvalid(format string, args ...any) *core.APIError {
	return core.NewAPIError(http.StatusBadRequest, 10019, fmt.Sprintf(format, args...))
}

// checkKVKey applies the rules kvKeyName applies to a path's key.
func checkKVKey(key string) error {
	if key == "" || key == "." || key == ".." {
		return kvBulkInvalid("key names must not be empty, '.' or '..'")
	}
	if len(key) > 512 {
		return core.NewAPIError(http.StatusRequestURITooLong, 10033, "key names may be at most 512 bytes")
	}
	return nil
}

func (s *Service) kvBulkPut(w http.ResponseWriter, r *http.Request) {
	var items []struct {
		Key           string          `json:"key"`
		Value         *string         `json:"value"`
		Base64        bool            `json:"base64"`
		Expiration    *json.Number    `json:"expiration"`
		ExpirationTTL *json.Number    `json:"expiration_ttl"`
		Metadata      json.RawMessage `json:"metadata"`
	}
	if err := core.DecodeJSON(w, r, &items); err != nil {
		core.WriteError(w, err)
		return
	}
	if len(items) > kvBulkMax {
		core.WriteError(w, kvBulkInvalid("a bulk write takes at most %d pairs, got %d", kvBulkMax, len(items)))
		return
	}
	now := time.Now()
	keys := make([]string, len(items))
	vals := make([]*kvValue, len(items))
	for i, it := range items {
		if err := checkKVKey(it.Key); err != nil {
			core.WriteError(w, err)
			return
		}
		if it.Value == nil {
			core.WriteError(w, kvBulkInvalid("pair #%d (%s) has no value", i, it.Key))
			return
		}
		v := &kvValue{Value: []byte(*it.Value)}
		if it.Base64 {
			b, err := base64.StdEncoding.DecodeString(*it.Value)
			if err != nil {
				core.WriteError(w, kvBulkInvalid("pair #%d (%s): value is not valid base64", i, it.Key))
				return
			}
			v.Value = b
		}
		if it.Expiration != nil {
			n, err := it.Expiration.Int64()
			if err != nil || n <= now.Unix() {
				core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10038, fmt.Sprintf("Invalid expiration of %s. Please specify integer greater than the current number of seconds since the UNIX epoch.", *it.Expiration)))
				return
			}
			v.Expiration = n
		}
		if it.ExpirationTTL != nil {
			n, err := it.ExpirationTTL.Int64()
			if err != nil || n < 60 {
				core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10038, fmt.Sprintf("Invalid expiration_ttl of %s. Expiration TTL must be at least 60.", *it.ExpirationTTL)))
				return
			}
			v.Expiration = now.Unix() + n
		}
		if len(it.Metadata) > 0 && string(it.Metadata) != "null" {
			v.Metadata = it.Metadata
		}
		keys[i], vals[i] = it.Key, v
	}
	s.mu.Lock()
	ns, err := s.kvLookupLocked(r)
	if err == nil {
		for i, k := range keys {
			ns.Values[k] = vals[i]
		}
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, kvBulkResult{SuccessfulKeyCount: len(keys), UnsuccessfulKeys: []string{}})
}

// kvBulkDelete removes keys; a missing key counts as deleted (KV deletes
// are idempotent).
func (s *Service) kvBulkDelete(w http.ResponseWriter, r *http.Request) {
	var keys []string
	if err := core.DecodeJSON(w, r, &keys); err != nil {
		core.WriteError(w, err)
		return
	}
	if len(keys) > kvBulkMax {
		core.WriteError(w, kvBulkInvalid("a bulk delete takes at most %d keys, got %d", kvBulkMax, len(keys)))
		return
	}
	for _, k := range keys {
		if err := checkKVKey(k); err != nil {
			core.WriteError(w, err)
			return
		}
	}
	s.mu.Lock()
	ns, err := s.kvLookupLocked(r)
	if err == nil {
		for _, k := range keys {
			delete(ns.Values, k)
		}
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, kvBulkResult{SuccessfulKeyCount: len(keys), UnsuccessfulKeys: []string{}})
}
