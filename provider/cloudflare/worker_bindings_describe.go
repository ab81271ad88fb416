package cloudflare

import "github.com/pulumi/pulumi-go-provider/infer"

// Descriptions of the binding kinds beyond the eight Open-Inspect's workers
// use, and of the Worker settings' own types: every schema element carries
// one (tests/drift TestEverySchemaElementIsDescribed).

// Annotate documents a binding that has only a name.
func (b *NamedBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "A binding with nothing but its name (ai, browser, version_metadata).")
	a.Describe(&b.Binding, "The name the worker reads it under (env.<binding>).")
}

// Annotate documents a json binding.
func (b *JSONBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "A JSON value in the worker's env (a json binding).")
	a.Describe(&b.Binding, "The name the worker reads the value under (env.<binding>).")
	a.Describe(&b.Value, "The value, any JSON (object, list, string, number or boolean).")
}

// Annotate documents an analytics_engine binding.
func (b *AnalyticsBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "Writes to a Workers Analytics Engine dataset (an analytics_engine binding).")
	a.Describe(&b.Binding, "The name the worker writes through (env.<binding>).")
	a.Describe(&b.Dataset, "The dataset's name; Cloudflare uses the binding name when unset.")
}

// Annotate documents a hyperdrive binding.
func (b *HyperdriveBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "Binds a Hyperdrive configuration (a hyperdrive binding).")
	a.Describe(&b.Binding, "The name the worker connects through (env.<binding>).")
	a.Describe(&b.ID, "The Hyperdrive configuration's ID.")
}

// Annotate documents a vectorize binding.
func (b *VectorizeBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "Binds a Vectorize index (a vectorize binding).")
	a.Describe(&b.Binding, "The name the worker queries the index under (env.<binding>).")
	a.Describe(&b.IndexName, "The Vectorize index's name.")
}

// Annotate documents a ratelimit binding.
func (b *RateLimitBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "A rate limiter: at most limit requests per period seconds for each key (a ratelimit binding).")
	a.Describe(&b.Binding, "The name the worker calls the limiter under (env.<binding>).")
	a.Describe(&b.NamespaceID, "The limiter's namespace ID (a positive integer as text), unique in the account.")
	a.Describe(&b.Limit, "How many requests a key may make per period.")
	a.Describe(&b.Period, "The period in seconds: 10 or 60.")
}

// Annotate documents a secrets_store_secret binding.
func (b *SecretsStoreBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "Binds one secret of a Secrets Store (a secrets_store_secret binding).")
	a.Describe(&b.Binding, "The name the worker reads the secret under (env.<binding>).")
	a.Describe(&b.StoreID, "The Secrets Store's ID.")
	a.Describe(&b.SecretName, "The secret's name in that store.")
}

// Annotate documents a workflow binding.
func (b *WorkflowBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "Binds a Workflow (a workflow binding).")
	a.Describe(&b.Binding, "The name the worker starts instances through (env.<binding>).")
	a.Describe(&b.WorkflowName, "The Workflow's name.")
	a.Describe(&b.ClassName, "The class implementing the Workflow, when this script implements it.")
	a.Describe(&b.ScriptName, "The script implementing the Workflow, when it is not this one.")
}

// Annotate documents a dispatch_namespace binding.
func (b *DispatchBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "Binds a Workers for Platforms dispatch namespace (a dispatch_namespace binding).")
	a.Describe(&b.Binding, "The name the worker dispatches through (env.<binding>).")
	a.Describe(&b.Namespace, "The dispatch namespace's name.")
	a.Describe(&b.OutboundService, "A worker that receives the dispatched scripts' outbound requests.")
}

// Annotate documents an mtls_certificate binding.
func (b *MTLSBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "Presents an uploaded mTLS client certificate on the worker's requests (an mtls_certificate binding).")
	a.Describe(&b.Binding, "The name the worker fetches through (env.<binding>).")
	a.Describe(&b.CertificateID, "The uploaded certificate's ID.")
}

// Annotate documents a send_email binding.
func (b *SendEmailBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "Sends email through Email Routing (a send_email binding).")
	a.Describe(&b.Binding, "The name the worker sends through (env.<binding>).")
	a.Describe(&b.DestinationAddress, "The only address mail may be sent to; not with allowedDestinationAddresses.")
	a.Describe(&b.AllowedDestinationAddresses, "The addresses mail may be sent to.")
	a.Describe(&b.AllowedSenderAddresses, "The addresses mail may be sent from.")
}

// Annotate documents a generic binding.
func (b *GenericBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "Any binding kind, for kinds this provider does not model: its type, its name and the properties "+
		"Cloudflare's API takes for it, sent verbatim.")
	a.Describe(&b.Type, "The binding's type as Cloudflare's API names it (e.g. pipelines).")
	a.Describe(&b.Binding, "The name the worker reads it under (env.<binding>).")
	a.Describe(&b.Properties, "The binding's other properties, in the API's own (snake_case) names.")
}
