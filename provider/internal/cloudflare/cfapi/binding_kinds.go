package cfapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
)

// BindingKinds are the fields of the binding kinds beyond the eight
// Open-Inspect uses, in the API's shape (the Workers binding reference and
// cloudflare-go/v4 workers.ScriptUpdateParamsMetadataBinding*): json,
// version_metadata, analytics_engine, ai, hyperdrive (id), vectorize,
// ratelimit, secrets_store_secret, workflow (with class_name and
// script_name), browser, dispatch_namespace, mtls_certificate and
// send_email. Extra carries the properties of a kind the provider does not
// model, sent verbatim beside type and name.
type BindingKinds struct {
	JSON                        json.RawMessage   `json:"json,omitempty"`          // json
	Dataset                     string            `json:"dataset,omitempty"`       // analytics_engine
	IndexName                   string            `json:"index_name,omitempty"`    // vectorize
	RateLimit                   *RateLimitSimple  `json:"simple,omitempty"`        // ratelimit (with namespace_id)
	StoreID                     string            `json:"store_id,omitempty"`      // secrets_store_secret
	SecretName                  string            `json:"secret_name,omitempty"`   // secrets_store_secret
	WorkflowName                string            `json:"workflow_name,omitempty"` // workflow
	Namespace                   string            `json:"namespace,omitempty"`     // dispatch_namespace
	Outbound                    *DispatchOutbound `json:"outbound,omitempty"`      // dispatch_namespace
	CertificateID               string            `json:"certificate_id,omitempty"`
	DestinationAddress          string            `json:"destination_address,omitempty"` // send_email
	AllowedDestinationAddresses []string          `json:"allowed_destination_addresses,omitempty"`
	AllowedSenderAddresses      []string          `json:"allowed_sender_addresses,omitempty"`
	Extra                       map[string]any    `json:"-"`
}

// RateLimitSimple is a ratelimit binding's budget: limit requests per
// period seconds (10 or 60).
type RateLimitSimple struct {
	Limit  int `json:"limit"`
	Period int `json:"period"`
}

// DispatchOutbound is a dispatch namespace's outbound worker.
type DispatchOutbound struct {
	Worker struct {
		Service     string `json:"service"`
		Environment string `json:"environment,omitempty"`
	} `json:"worker"`
	Params []string `json:"params,omitempty"`
}

// MarshalJSON writes the binding with its Extra properties beside the
// modelled ones; a modelled field wins over an Extra key of the same name.
func (b Binding) MarshalJSON() ([]byte, error) {
	type plain Binding
	raw, err := json.Marshal(plain(b))
	if err != nil || len(b.Extra) == 0 {
		return raw, err
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("binding %s: %w", b.Name, err)
	}
	merged := maps.Clone(b.Extra)
	maps.Copy(merged, fields)
	return json.Marshal(merged)
}

// bindingKeys are the JSON keys Binding models (its own fields and
// BindingKinds'); any other key of a binding read back is Extra.
var bindingKeys = func() map[string]bool {
	keys := map[string]bool{}
	var collect func(t reflect.Type)
	collect = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				collect(f.Type)
				continue
			}
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
				keys[name] = true
			}
		}
	}
	collect(reflect.TypeFor[Binding]())
	return keys
}()

// UnmarshalJSON reads a binding as the API returns it, keeping the
// properties of a kind the provider does not model in Extra, so a generic
// binding read back compares equal to the one sent.
func (b *Binding) UnmarshalJSON(raw []byte) error {
	type plain Binding
	var p plain
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return err
	}
	for k, v := range fields {
		if !bindingKeys[k] {
			if p.Extra == nil {
				p.Extra = map[string]any{}
			}
			p.Extra[k] = v
		}
	}
	*b = Binding(p)
	return nil
}
