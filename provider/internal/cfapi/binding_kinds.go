package cfapi

import (
	"encoding/json"
	"fmt"
	"maps"
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
