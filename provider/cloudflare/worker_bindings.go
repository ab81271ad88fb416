package cloudflare

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/mail"
	"slices"
	"strconv"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
)

// MoreBindings are the binding kinds beyond the eight Open-Inspect uses,
// each a typed list in the API's shape, plus a generic list for kinds
// Cloudflare adds later (the assets binding is the assets input's).
type MoreBindings struct {
	JSONBindings        []JSONBinding         `pulumi:"jsonBindings,optional"`
	VersionMetadata     []NamedBinding        `pulumi:"versionMetadata,optional"`
	AnalyticsEngine     []AnalyticsBinding    `pulumi:"analyticsEngineDatasets,optional"`
	AI                  []NamedBinding        `pulumi:"ai,optional"`
	Hyperdrives         []HyperdriveBinding   `pulumi:"hyperdrives,optional"`
	Vectorize           []VectorizeBinding    `pulumi:"vectorizeIndexes,optional"`
	RateLimits          []RateLimitBinding    `pulumi:"rateLimits,optional"`
	SecretsStoreSecrets []SecretsStoreBinding `pulumi:"secretsStoreSecrets,optional"`
	Workflows           []WorkflowBinding     `pulumi:"workflows,optional"`
	Browser             []NamedBinding        `pulumi:"browser,optional"`
	DispatchNamespaces  []DispatchBinding     `pulumi:"dispatchNamespaces,optional"`
	MTLSCertificates    []MTLSBinding         `pulumi:"mtlsCertificates,optional"`
	SendEmail           []SendEmailBinding    `pulumi:"sendEmail,optional"`
	OtherBindings       []GenericBinding      `pulumi:"otherBindings,optional"`
}

// NamedBinding is a kind with nothing but its name (ai, browser, version_metadata).
type NamedBinding struct {
	Binding string `pulumi:"binding"`
}

// JSONBinding is a JSON value in the worker's env.
type JSONBinding struct {
	Binding string `pulumi:"binding"`
	Value   any    `pulumi:"value"`
}

// AnalyticsBinding writes to a Workers Analytics Engine dataset.
type AnalyticsBinding struct {
	Binding string `pulumi:"binding"`
	Dataset string `pulumi:"dataset,optional"`
}

// HyperdriveBinding binds a Hyperdrive configuration by ID.
type HyperdriveBinding struct {
	Binding string `pulumi:"binding"`
	ID      string `pulumi:"id"`
}

// VectorizeBinding binds a Vectorize index.
type VectorizeBinding struct {
	Binding   string `pulumi:"binding"`
	IndexName string `pulumi:"indexName"`
}

// RateLimitBinding is a rate limiter: limit requests per period seconds.
type RateLimitBinding struct {
	Binding     string `pulumi:"binding"`
	NamespaceID string `pulumi:"namespaceId"`
	Limit       int    `pulumi:"limit"`
	Period      int    `pulumi:"period"`
}

// SecretsStoreBinding binds one secret of a Secrets Store.
type SecretsStoreBinding struct {
	Binding    string `pulumi:"binding"`
	StoreID    string `pulumi:"storeId"`
	SecretName string `pulumi:"secretName"`
}

// WorkflowBinding binds a Workflow, implemented by this script unless
// scriptName names another.
type WorkflowBinding struct {
	Binding      string `pulumi:"binding"`
	WorkflowName string `pulumi:"workflowName"`
	ClassName    string `pulumi:"className,optional"`
	ScriptName   string `pulumi:"scriptName,optional"`
}

// DispatchBinding binds a Workers for Platforms dispatch namespace.
type DispatchBinding struct {
	Binding         string `pulumi:"binding"`
	Namespace       string `pulumi:"namespace"`
	OutboundService string `pulumi:"outboundService,optional"`
}

// MTLSBinding presents an uploaded mTLS client certificate.
type MTLSBinding struct {
	Binding       string `pulumi:"binding"`
	CertificateID string `pulumi:"certificateId"`
}

// SendEmailBinding sends email through Email Routing.
type SendEmailBinding struct {
	Binding                     string   `pulumi:"binding"`
	DestinationAddress          string   `pulumi:"destinationAddress,optional"`
	AllowedDestinationAddresses []string `pulumi:"allowedDestinationAddresses,optional"`
	AllowedSenderAddresses      []string `pulumi:"allowedSenderAddresses,optional"`
}

// GenericBinding is any binding kind: its type, name and the properties
// the API takes, sent verbatim.
type GenericBinding struct {
	Type       string         `pulumi:"type"`
	Binding    string         `pulumi:"binding"`
	Properties map[string]any `pulumi:"properties,optional"`
}

// Annotate documents the binding kinds.
func (b *MoreBindings) Annotate(an infer.Annotator) {
	an.Describe(&b.JSONBindings, "JSON values in the worker's env (`json` bindings).")
	an.Describe(&b.VersionMetadata, "The version metadata binding (`version_metadata`).")
	an.Describe(&b.AnalyticsEngine, "Workers Analytics Engine datasets (`analytics_engine`).")
	an.Describe(&b.AI, "Workers AI (`ai`).")
	an.Describe(&b.Hyperdrives, "Hyperdrive configurations by ID (`hyperdrive`).")
	an.Describe(&b.Vectorize, "Vectorize indexes (`vectorize`).")
	an.Describe(&b.RateLimits, "Rate limiters (`ratelimit`): limit requests per period (10 or 60 s).")
	an.Describe(&b.SecretsStoreSecrets, "Secrets Store secrets (`secrets_store_secret`).")
	an.Describe(&b.Workflows, "Workflows (`workflow`).")
	an.Describe(&b.Browser, "Browser Rendering (`browser`).")
	an.Describe(&b.DispatchNamespaces, "Workers for Platforms dispatch namespaces (`dispatch_namespace`).")
	an.Describe(&b.MTLSCertificates, "mTLS client certificates (`mtls_certificate`).")
	an.Describe(&b.SendEmail, "Email sending (`send_email`).")
	an.Describe(&b.OtherBindings, "Binding kinds not modelled above: `type`, `binding` (the name) and the API's properties, sent as given.")
}

// reservedBindingKeys cannot be set through a generic binding's properties.
var reservedBindingKeys = []string{"type", "name"}

// moreBindings lists the bindings of MoreBindings in declaration order.
func (b MoreBindings) moreBindings(add func(path string, binding cfapi.Binding)) {
	named := func(field, kind string, list []NamedBinding) {
		for i, n := range list {
			add(fmt.Sprintf("%s[%d].binding", field, i), cfapi.Binding{Type: kind, Name: n.Binding})
		}
	}
	for i, j := range b.JSONBindings {
		raw, _ := json.Marshal(j.Value) // validated in Check
		add(fmt.Sprintf("jsonBindings[%d].binding", i), cfapi.Binding{Type: "json", Name: j.Binding, BindingKinds: cfapi.BindingKinds{JSON: raw}})
	}
	named("versionMetadata", "version_metadata", b.VersionMetadata)
	for i, x := range b.AnalyticsEngine {
		add(fmt.Sprintf("analyticsEngineDatasets[%d].binding", i), cfapi.Binding{Type: "analytics_engine", Name: x.Binding,
			BindingKinds: cfapi.BindingKinds{Dataset: x.Dataset}})
	}
	named("ai", "ai", b.AI)
	for i, x := range b.Hyperdrives {
		add(fmt.Sprintf("hyperdrives[%d].binding", i), cfapi.Binding{Type: "hyperdrive", Name: x.Binding, ID: x.ID})
	}
	for i, x := range b.Vectorize {
		add(fmt.Sprintf("vectorizeIndexes[%d].binding", i), cfapi.Binding{Type: "vectorize", Name: x.Binding,
			BindingKinds: cfapi.BindingKinds{IndexName: x.IndexName}})
	}
	for i, x := range b.RateLimits {
		add(fmt.Sprintf("rateLimits[%d].binding", i), cfapi.Binding{Type: "ratelimit", Name: x.Binding, NamespaceID: x.NamespaceID,
			BindingKinds: cfapi.BindingKinds{RateLimit: &cfapi.RateLimitSimple{Limit: x.Limit, Period: x.Period}}})
	}
	for i, x := range b.SecretsStoreSecrets {
		add(fmt.Sprintf("secretsStoreSecrets[%d].binding", i), cfapi.Binding{Type: "secrets_store_secret", Name: x.Binding,
			BindingKinds: cfapi.BindingKinds{StoreID: x.StoreID, SecretName: x.SecretName}})
	}
	for i, x := range b.Workflows {
		add(fmt.Sprintf("workflows[%d].binding", i), cfapi.Binding{Type: "workflow", Name: x.Binding, ClassName: x.ClassName,
			ScriptName: x.ScriptName, BindingKinds: cfapi.BindingKinds{WorkflowName: x.WorkflowName}})
	}
	named("browser", "browser", b.Browser)
	for i, x := range b.DispatchNamespaces {
		kinds := cfapi.BindingKinds{Namespace: x.Namespace}
		if x.OutboundService != "" {
			kinds.Outbound = &cfapi.DispatchOutbound{}
			kinds.Outbound.Worker.Service = x.OutboundService
		}
		add(fmt.Sprintf("dispatchNamespaces[%d].binding", i), cfapi.Binding{Type: "dispatch_namespace", Name: x.Binding, BindingKinds: kinds})
	}
	for i, x := range b.MTLSCertificates {
		add(fmt.Sprintf("mtlsCertificates[%d].binding", i), cfapi.Binding{Type: "mtls_certificate", Name: x.Binding,
			BindingKinds: cfapi.BindingKinds{CertificateID: x.CertificateID}})
	}
	for i, x := range b.SendEmail {
		add(fmt.Sprintf("sendEmail[%d].binding", i), cfapi.Binding{Type: "send_email", Name: x.Binding, BindingKinds: cfapi.BindingKinds{
			DestinationAddress: x.DestinationAddress, AllowedDestinationAddresses: x.AllowedDestinationAddresses,
			AllowedSenderAddresses: x.AllowedSenderAddresses}})
	}
	for i, x := range b.OtherBindings {
		extra := maps.Clone(x.Properties)
		for _, k := range reservedBindingKeys {
			delete(extra, k)
		}
		add(fmt.Sprintf("otherBindings[%d].binding", i), cfapi.Binding{Type: x.Type, Name: x.Binding, BindingKinds: cfapi.BindingKinds{Extra: extra}})
	}
}

// modelledTypes are the binding types with their own input; a generic
// entry naming one of them is refused so each kind has one home.
var modelledTypes = []string{"d1", "kv_namespace", "r2_bucket", "queue", "service", "durable_object_namespace", "plain_text",
	"secret_text", "json", "version_metadata", "analytics_engine", "ai", "hyperdrive", "vectorize", "ratelimit",
	"secrets_store_secret", "workflow", "browser", "dispatch_namespace", "mtls_certificate", "send_email"}

// validateMoreBindings checks each binding's own fields (names and clashes
// are checked with every other binding in validate).
func (a WorkerArgs) validateMoreBindings(fail func(field, format string, args ...any), unknown func(string) bool) {
	b := a.MoreBindings
	need := func(field, value, what string) {
		if value == "" {
			fail(field, "%s is required", what)
		}
	}
	for i, j := range b.JSONBindings {
		if _, err := json.Marshal(j.Value); err != nil || j.Value == nil {
			fail(fmt.Sprintf("jsonBindings[%d].value", i), "a json binding needs a JSON value (an object, list, string, number or boolean)")
		}
	}
	for i, x := range b.Hyperdrives {
		need(fmt.Sprintf("hyperdrives[%d].id", i), x.ID, "the Hyperdrive configuration's ID")
	}
	for i, x := range b.Vectorize {
		need(fmt.Sprintf("vectorizeIndexes[%d].indexName", i), x.IndexName, "the Vectorize index name")
	}
	for i, x := range b.RateLimits {
		field := func(f string) string { return fmt.Sprintf("rateLimits[%d].%s", i, f) }
		if n, err := strconv.ParseUint(x.NamespaceID, 10, 32); err != nil || n == 0 {
			fail(field("namespaceId"), "%q is not a rate limit namespace: use a positive integer, unique in the account", x.NamespaceID)
		}
		if x.Limit < 1 {
			fail(field("limit"), "%d: the limit must be at least 1 request", x.Limit)
		}
		if x.Period != 10 && x.Period != 60 {
			fail(field("period"), "%d: Cloudflare accepts a period of 10 or 60 seconds only", x.Period)
		}
	}
	for i, x := range b.SecretsStoreSecrets {
		need(fmt.Sprintf("secretsStoreSecrets[%d].storeId", i), x.StoreID, "the Secrets Store ID")
		need(fmt.Sprintf("secretsStoreSecrets[%d].secretName", i), x.SecretName, "the secret's name in the store")
	}
	for i, x := range b.Workflows {
		need(fmt.Sprintf("workflows[%d].workflowName", i), x.WorkflowName, "the workflow's name")
		if unknown(fmt.Sprintf("workflows[%d].scriptName", i)) || unknown("name") {
			continue // whether this worker implements it is not known yet
		}
		if x.ScriptName != "" && x.ScriptName != a.Name {
			if problem := ScriptNameProblem(x.ScriptName); problem != "" {
				fail(fmt.Sprintf("workflows[%d].scriptName", i), "%s", problem)
			}
		} else if x.ClassName == "" {
			fail(fmt.Sprintf("workflows[%d].className", i), "a workflow this worker implements needs its class name")
		}
	}
	for i, x := range b.DispatchNamespaces {
		need(fmt.Sprintf("dispatchNamespaces[%d].namespace", i), x.Namespace, "the dispatch namespace's name")
		if x.OutboundService != "" {
			if problem := ScriptNameProblem(x.OutboundService); problem != "" {
				fail(fmt.Sprintf("dispatchNamespaces[%d].outboundService", i), "%s", problem)
			}
		}
	}
	for i, x := range b.MTLSCertificates {
		need(fmt.Sprintf("mtlsCertificates[%d].certificateId", i), x.CertificateID, "the mTLS certificate's ID")
	}
	for i, x := range b.SendEmail {
		address := func(field, v string) {
			if _, err := mail.ParseAddress(v); err != nil {
				fail(field, "%q is not an email address", v)
			}
		}
		if x.DestinationAddress != "" {
			address(fmt.Sprintf("sendEmail[%d].destinationAddress", i), x.DestinationAddress)
			if len(x.AllowedDestinationAddresses) > 0 {
				fail(fmt.Sprintf("sendEmail[%d].allowedDestinationAddresses", i), "set destinationAddress or allowedDestinationAddresses, not both")
			}
		}
		for j, v := range x.AllowedDestinationAddresses {
			address(fmt.Sprintf("sendEmail[%d].allowedDestinationAddresses[%d]", i, j), v)
		}
		for j, v := range x.AllowedSenderAddresses {
			address(fmt.Sprintf("sendEmail[%d].allowedSenderAddresses[%d]", i, j), v)
		}
	}
	for i, x := range b.OtherBindings {
		field := func(f string) string { return fmt.Sprintf("otherBindings[%d].%s", i, f) }
		switch {
		case x.Type == "":
			fail(field("type"), "the binding type is required (the API's `type`, e.g. \"pipelines\")")
		case slices.Contains(modelledTypes, x.Type):
			fail(field("type"), "%s bindings have their own input; declare this one there", x.Type)
		case x.Type == "assets":
			fail(field("type"), "the assets binding comes from the assets input")
		}
		for _, k := range reservedBindingKeys {
			if _, set := x.Properties[k]; set {
				fail(field("properties."+k), "%s is set by the entry's own field, not a property", k)
			}
		}
		if _, err := json.Marshal(x.Properties); err != nil {
			fail(field("properties"), "the properties must be JSON values")
		}
	}
}

// moreBindingsDiff names each binding of MoreBindings that moved, by name.
func moreBindingsDiff(c *workerChanges, olds, news MoreBindings) {
	name := func(n NamedBinding) string { return n.Binding }
	byKey(c, "jsonBindings", olds.JSONBindings, news.JSONBindings, func(b JSONBinding) string { return b.Binding }, &c.settings)
	byKey(c, "versionMetadata", olds.VersionMetadata, news.VersionMetadata, name, &c.settings)
	byKey(c, "analyticsEngineDatasets", olds.AnalyticsEngine, news.AnalyticsEngine, func(b AnalyticsBinding) string { return b.Binding }, &c.settings)
	byKey(c, "ai", olds.AI, news.AI, name, &c.settings)
	byKey(c, "hyperdrives", olds.Hyperdrives, news.Hyperdrives, func(b HyperdriveBinding) string { return b.Binding }, &c.settings)
	byKey(c, "vectorizeIndexes", olds.Vectorize, news.Vectorize, func(b VectorizeBinding) string { return b.Binding }, &c.settings)
	byKey(c, "rateLimits", olds.RateLimits, news.RateLimits, func(b RateLimitBinding) string { return b.Binding }, &c.settings)
	byKey(c, "secretsStoreSecrets", olds.SecretsStoreSecrets, news.SecretsStoreSecrets, func(b SecretsStoreBinding) string { return b.Binding }, &c.settings)
	byKey(c, "workflows", olds.Workflows, news.Workflows, func(b WorkflowBinding) string { return b.Binding }, &c.settings)
	byKey(c, "browser", olds.Browser, news.Browser, name, &c.settings)
	byKey(c, "dispatchNamespaces", olds.DispatchNamespaces, news.DispatchNamespaces, func(b DispatchBinding) string { return b.Binding }, &c.settings)
	byKey(c, "mtlsCertificates", olds.MTLSCertificates, news.MTLSCertificates, func(b MTLSBinding) string { return b.Binding }, &c.settings)
	byKey(c, "sendEmail", olds.SendEmail, news.SendEmail, func(b SendEmailBinding) string { return b.Binding }, &c.settings)
	byKey(c, "otherBindings", olds.OtherBindings, news.OtherBindings, func(b GenericBinding) string { return b.Binding }, &c.settings)
}
