package kv

// KV bulk routes: PUT namespaces/{id}/bulk writes up to 10,000 pairs,
// DELETE .../bulk and POST .../bulk/delete remove up to 10,000 keys (wrangler
// 4 sends DELETE, cloudflare-go/v4 POST). Each request is applied whole:
// one invalid item rejects it with nothing written. The answer is
// {successful_key_count, unsuccessful_keys} as documented.

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
