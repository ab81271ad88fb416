package cloudflare

import (
	"encoding/json"
	"maps"
	"net/mail"
	"slices"
	"strconv"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
)

// The Worker's binding kinds: each kind's element type, then one
// declaration per kind (workerBindingKinds for the eight Open-Inspect uses,
// less vars and secrets, which are maps; moreBindingKinds for the others)
// holding its input name and description, its Cloudflare API type, its
// conversion to the upload metadata, its validation and what import reads
// of it. worker_binding_kinds.go says what reads the declarations.

// D1Binding binds a D1 database.
type D1Binding struct {
	Binding    string `pulumi:"binding"`
	DatabaseID string `pulumi:"databaseId"`
}

// KvBinding binds a KV namespace.
type KvBinding struct {
	Binding     string `pulumi:"binding"`
	NamespaceID string `pulumi:"namespaceId"`
}

// R2Binding binds an R2 bucket.
type R2Binding struct {
	Binding    string `pulumi:"binding"`
	BucketName string `pulumi:"bucketName"`
}

// QueueBinding makes the worker a producer of a queue.
type QueueBinding struct {
	Binding   string `pulumi:"binding"`
	QueueName string `pulumi:"queueName"`
}

// ServiceBinding binds another worker by script name. The name is a plain
// string rather than a resource reference, so two workers may bind each other.
type ServiceBinding struct {
	Binding     string `pulumi:"binding"`
	Service     string `pulumi:"service"`
	Environment string `pulumi:"environment,optional"`
}

// DurableObjectBinding binds a Durable Object class, declared by this worker
// unless scriptName names another.
type DurableObjectBinding struct {
	Binding    string `pulumi:"binding"`
	ClassName  string `pulumi:"className"`
	ScriptName string `pulumi:"scriptName,optional"`
}

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

// Annotate methods describe each element type from its kind's declaration.

func (b *D1Binding) Annotate(a infer.Annotator)            { describeType(a, b) }
func (b *KvBinding) Annotate(a infer.Annotator)            { describeType(a, b) }
func (b *R2Binding) Annotate(a infer.Annotator)            { describeType(a, b) }
func (b *QueueBinding) Annotate(a infer.Annotator)         { describeType(a, b) }
func (b *ServiceBinding) Annotate(a infer.Annotator)       { describeType(a, b) }
func (b *DurableObjectBinding) Annotate(a infer.Annotator) { describeType(a, b) }
func (b *NamedBinding) Annotate(a infer.Annotator)         { describeType(a, b) }
func (b *JSONBinding) Annotate(a infer.Annotator)          { describeType(a, b) }
func (b *AnalyticsBinding) Annotate(a infer.Annotator)     { describeType(a, b) }
func (b *HyperdriveBinding) Annotate(a infer.Annotator)    { describeType(a, b) }
func (b *VectorizeBinding) Annotate(a infer.Annotator)     { describeType(a, b) }
func (b *RateLimitBinding) Annotate(a infer.Annotator)     { describeType(a, b) }
func (b *SecretsStoreBinding) Annotate(a infer.Annotator)  { describeType(a, b) }
func (b *WorkflowBinding) Annotate(a infer.Annotator)      { describeType(a, b) }
func (b *DispatchBinding) Annotate(a infer.Annotator)      { describeType(a, b) }
func (b *MTLSBinding) Annotate(a infer.Annotator)          { describeType(a, b) }
func (b *SendEmailBinding) Annotate(a infer.Annotator)     { describeType(a, b) }
func (b *GenericBinding) Annotate(a infer.Annotator)       { describeType(a, b) }

// Annotate describes the MoreBindings inputs from their kinds.
func (b *MoreBindings) Annotate(an infer.Annotator) {
	describeFields(an, b, inputDocs(moreBindingKinds))
}

// required reports value missing at field.
func required(fail failFunc, field, value, what string) {
	if value == "" {
		fail(field, "%s is required", what)
	}
}

// scriptNameAt reports a script name that is not one (an empty one is
// left to the caller).
func scriptNameAt(fail failFunc, field, name string) {
	if problem := ScriptNameProblem(name); problem != "" {
		fail(field, "%s", problem)
	}
}

// named is a kind with nothing but its name (ai, browser, version_metadata).
func named(input, typ, doc string, list func(a *WorkerArgs) *[]NamedBinding) listKind[NamedBinding] {
	return listKind[NamedBinding]{name: input, typ: typ, list: list,
		doc: kindDocs{input: doc, elem: "A binding with nothing but its name (ai, browser, version_metadata).",
			fields: map[string]string{"binding": "The name the worker reads it under (env.<binding>)."}},
		upload: func(x NamedBinding, _ WorkerArgs) cfapi.Binding { return cfapi.Binding{Name: x.Binding} },
	}
}

// workerBindingKinds are the list kinds of Open-Inspect's workers, in
// declaration order.
var workerBindingKinds = []bindingKind{
	listKind[D1Binding]{name: "d1Databases", typ: "d1",
		doc: kindDocs{input: "D1 database bindings.", elem: "Binds a D1 database to the worker.", fields: map[string]string{
			"binding":    "The name the worker reads the database under (env.<binding>).",
			"databaseId": "The D1 database's ID (a D1Database's databaseId output).",
		}},
		list:    func(a *WorkerArgs) *[]D1Binding { return &a.D1Databases },
		upload:  func(x D1Binding, _ WorkerArgs) cfapi.Binding { return cfapi.Binding{Name: x.Binding, ID: x.DatabaseID} },
		fromAPI: func(b cfapi.Binding) D1Binding { return D1Binding{Binding: b.Name, DatabaseID: b.ID} },
	},
	listKind[KvBinding]{name: "kvNamespaces", typ: "kv_namespace",
		doc: kindDocs{input: "KV namespace bindings.", elem: "Binds a KV namespace to the worker.", fields: map[string]string{
			"binding":     "The name the worker reads the namespace under (env.<binding>).",
			"namespaceId": "The KV namespace's ID (a KvNamespace's namespaceId output).",
		}},
		list: func(a *WorkerArgs) *[]KvBinding { return &a.KvNamespaces },
		upload: func(x KvBinding, _ WorkerArgs) cfapi.Binding {
			return cfapi.Binding{Name: x.Binding, NamespaceID: x.NamespaceID}
		},
		fromAPI: func(b cfapi.Binding) KvBinding { return KvBinding{Binding: b.Name, NamespaceID: b.NamespaceID} },
	},
	listKind[R2Binding]{name: "r2Buckets", typ: "r2_bucket",
		doc: kindDocs{input: "R2 bucket bindings.", elem: "Binds an R2 bucket to the worker.", fields: map[string]string{
			"binding":    "The name the worker reads the bucket under (env.<binding>).",
			"bucketName": "The R2 bucket's name.",
		}},
		list: func(a *WorkerArgs) *[]R2Binding { return &a.R2Buckets },
		upload: func(x R2Binding, _ WorkerArgs) cfapi.Binding {
			return cfapi.Binding{Name: x.Binding, BucketName: x.BucketName}
		},
		fromAPI: func(b cfapi.Binding) R2Binding { return R2Binding{Binding: b.Name, BucketName: b.BucketName} },
	},
	listKind[QueueBinding]{name: "queues", typ: "queue",
		doc: kindDocs{input: "Queue producer bindings.", elem: "Makes the worker a producer of a queue.", fields: map[string]string{
			"binding":   "The name the worker sends messages through (env.<binding>).",
			"queueName": "The queue's name.",
		}},
		list: func(a *WorkerArgs) *[]QueueBinding { return &a.Queues },
		upload: func(x QueueBinding, _ WorkerArgs) cfapi.Binding {
			return cfapi.Binding{Name: x.Binding, QueueName: x.QueueName}
		},
		fromAPI: func(b cfapi.Binding) QueueBinding { return QueueBinding{Binding: b.Name, QueueName: b.QueueName} },
	},
	listKind[ServiceBinding]{name: "services", typ: "service",
		doc: kindDocs{input: "Service bindings to other workers, by script name.",
			elem: "Binds another worker by script name. The name is a plain string, not a resource reference, " +
				"so two workers may bind each other; a target that does not exist yet is bound as soon as it appears.",
			fields: map[string]string{
				"binding":     "The name the worker calls the other worker through (env.<binding>).",
				"service":     "The bound worker's script name.",
				"environment": "The bound worker's environment, when it has several (default: its production one).",
			}},
		list: func(a *WorkerArgs) *[]ServiceBinding { return &a.Services },
		upload: func(x ServiceBinding, _ WorkerArgs) cfapi.Binding {
			return cfapi.Binding{Name: x.Binding, Service: x.Service, Environment: x.Environment}
		},
		validate: func(x ServiceBinding, at func(string) string, _ WorkerArgs, fail failFunc, _ func(string) bool) {
			if x.Service == "" {
				fail(at("service"), "a service binding needs the target worker's name")
			}
		},
		fromAPI: func(b cfapi.Binding) ServiceBinding {
			return ServiceBinding{Binding: b.Name, Service: b.Service, Environment: b.Environment}
		},
	},
	listKind[DurableObjectBinding]{name: "durableObjects", typ: "durable_object_namespace",
		doc: kindDocs{input: "Durable Object namespace bindings.",
			elem: "Binds a Durable Object class. A class this worker declares (no scriptName) gets its " +
				"new_sqlite_classes migration step the first time it appears and a deleted_classes step when it goes.",
			fields: map[string]string{
				"binding":    "The name the worker reaches the Durable Object namespace under (env.<binding>).",
				"className":  "The exported Durable Object class.",
				"scriptName": "The worker that declares the class, when it is not this one.",
			}},
		list: func(a *WorkerArgs) *[]DurableObjectBinding { return &a.DurableObjects },
		upload: func(x DurableObjectBinding, a WorkerArgs) cfapi.Binding {
			script := x.ScriptName
			if script == a.Name {
				script = "" // its own class: the API's form has no script name
			}
			return cfapi.Binding{Name: x.Binding, ClassName: x.ClassName, ScriptName: script}
		},
		validate: func(x DurableObjectBinding, at func(string) string, _ WorkerArgs, fail failFunc, _ func(string) bool) {
			if x.ClassName == "" {
				fail(at("className"), "a Durable Object binding needs its class name")
			}
		},
		fromAPI: func(b cfapi.Binding) DurableObjectBinding {
			return DurableObjectBinding{Binding: b.Name, ClassName: b.ClassName, ScriptName: b.ScriptName}
		},
	},
}

// reservedBindingKeys cannot be set through a generic binding's properties.
var reservedBindingKeys = []string{"type", "name"}

// moreBindingKinds are the kinds of MoreBindings, in declaration order.
var moreBindingKinds = []bindingKind{
	listKind[JSONBinding]{name: "jsonBindings", typ: "json",
		doc: kindDocs{input: "JSON values in the worker's env (`json` bindings).", elem: "A JSON value in the worker's env (a json binding).",
			fields: map[string]string{
				"binding": "The name the worker reads the value under (env.<binding>).",
				"value":   "The value, any JSON (object, list, string, number or boolean).",
			}},
		list: func(a *WorkerArgs) *[]JSONBinding { return &a.JSONBindings },
		upload: func(x JSONBinding, _ WorkerArgs) cfapi.Binding {
			raw, _ := json.Marshal(x.Value) // validated in Check
			return cfapi.Binding{Name: x.Binding, BindingKinds: cfapi.BindingKinds{JSON: raw}}
		},
		validate: func(x JSONBinding, at func(string) string, _ WorkerArgs, fail failFunc, _ func(string) bool) {
			if _, err := json.Marshal(x.Value); err != nil || x.Value == nil {
				fail(at("value"), "a json binding needs a JSON value (an object, list, string, number or boolean)")
			}
		},
	},
	named("versionMetadata", "version_metadata", "The version metadata binding (`version_metadata`).",
		func(a *WorkerArgs) *[]NamedBinding { return &a.VersionMetadata }),
	listKind[AnalyticsBinding]{name: "analyticsEngineDatasets", typ: "analytics_engine",
		doc: kindDocs{input: "Workers Analytics Engine datasets (`analytics_engine`).",
			elem: "Writes to a Workers Analytics Engine dataset (an analytics_engine binding).", fields: map[string]string{
				"binding": "The name the worker writes through (env.<binding>).",
				"dataset": "The dataset's name; Cloudflare uses the binding name when unset.",
			}},
		list: func(a *WorkerArgs) *[]AnalyticsBinding { return &a.AnalyticsEngine },
		upload: func(x AnalyticsBinding, _ WorkerArgs) cfapi.Binding {
			return cfapi.Binding{Name: x.Binding, BindingKinds: cfapi.BindingKinds{Dataset: x.Dataset}}
		},
	},
	named("ai", "ai", "Workers AI (`ai`).", func(a *WorkerArgs) *[]NamedBinding { return &a.AI }),
	listKind[HyperdriveBinding]{name: "hyperdrives", typ: "hyperdrive",
		doc: kindDocs{input: "Hyperdrive configurations by ID (`hyperdrive`).", elem: "Binds a Hyperdrive configuration (a hyperdrive binding).",
			fields: map[string]string{
				"binding": "The name the worker connects through (env.<binding>).",
				"id":      "The Hyperdrive configuration's ID.",
			}},
		list:   func(a *WorkerArgs) *[]HyperdriveBinding { return &a.Hyperdrives },
		upload: func(x HyperdriveBinding, _ WorkerArgs) cfapi.Binding { return cfapi.Binding{Name: x.Binding, ID: x.ID} },
		validate: func(x HyperdriveBinding, at func(string) string, _ WorkerArgs, fail failFunc, _ func(string) bool) {
			required(fail, at("id"), x.ID, "the Hyperdrive configuration's ID")
		},
	},
	listKind[VectorizeBinding]{name: "vectorizeIndexes", typ: "vectorize",
		doc: kindDocs{input: "Vectorize indexes (`vectorize`).", elem: "Binds a Vectorize index (a vectorize binding).",
			fields: map[string]string{
				"binding":   "The name the worker queries the index under (env.<binding>).",
				"indexName": "The Vectorize index's name.",
			}},
		list: func(a *WorkerArgs) *[]VectorizeBinding { return &a.Vectorize },
		upload: func(x VectorizeBinding, _ WorkerArgs) cfapi.Binding {
			return cfapi.Binding{Name: x.Binding, BindingKinds: cfapi.BindingKinds{IndexName: x.IndexName}}
		},
		validate: func(x VectorizeBinding, at func(string) string, _ WorkerArgs, fail failFunc, _ func(string) bool) {
			required(fail, at("indexName"), x.IndexName, "the Vectorize index name")
		},
	},
	listKind[RateLimitBinding]{name: "rateLimits", typ: "ratelimit",
		doc: kindDocs{input: "Rate limiters (`ratelimit`): limit requests per period (10 or 60 s).",
			elem: "A rate limiter: at most limit requests per period seconds for each key (a ratelimit binding).",
			fields: map[string]string{
				"binding":     "The name the worker calls the limiter under (env.<binding>).",
				"namespaceId": "The limiter's namespace ID (a positive integer as text), unique in the account.",
				"limit":       "How many requests a key may make per period.",
				"period":      "The period in seconds: 10 or 60.",
			}},
		list: func(a *WorkerArgs) *[]RateLimitBinding { return &a.RateLimits },
		upload: func(x RateLimitBinding, _ WorkerArgs) cfapi.Binding {
			return cfapi.Binding{Name: x.Binding, NamespaceID: x.NamespaceID,
				BindingKinds: cfapi.BindingKinds{RateLimit: &cfapi.RateLimitSimple{Limit: x.Limit, Period: x.Period}}}
		},
		validate: func(x RateLimitBinding, at func(string) string, _ WorkerArgs, fail failFunc, _ func(string) bool) {
			if n, err := strconv.ParseUint(x.NamespaceID, 10, 32); err != nil || n == 0 {
				fail(at("namespaceId"), "%q is not a rate limit namespace: use a positive integer, unique in the account", x.NamespaceID)
			}
			if x.Limit < 1 {
				fail(at("limit"), "%d: the limit must be at least 1 request", x.Limit)
			}
			if x.Period != 10 && x.Period != 60 {
				fail(at("period"), "%d: Cloudflare accepts a period of 10 or 60 seconds only", x.Period)
			}
		},
	},
	listKind[SecretsStoreBinding]{name: "secretsStoreSecrets", typ: "secrets_store_secret",
		doc: kindDocs{input: "Secrets Store secrets (`secrets_store_secret`).",
			elem: "Binds one secret of a Secrets Store (a secrets_store_secret binding).", fields: map[string]string{
				"binding":    "The name the worker reads the secret under (env.<binding>).",
				"storeId":    "The Secrets Store's ID.",
				"secretName": "The secret's name in that store.",
			}},
		list: func(a *WorkerArgs) *[]SecretsStoreBinding { return &a.SecretsStoreSecrets },
		upload: func(x SecretsStoreBinding, _ WorkerArgs) cfapi.Binding {
			return cfapi.Binding{Name: x.Binding, BindingKinds: cfapi.BindingKinds{StoreID: x.StoreID, SecretName: x.SecretName}}
		},
		validate: func(x SecretsStoreBinding, at func(string) string, _ WorkerArgs, fail failFunc, _ func(string) bool) {
			required(fail, at("storeId"), x.StoreID, "the Secrets Store ID")
			required(fail, at("secretName"), x.SecretName, "the secret's name in the store")
		},
	},
	listKind[WorkflowBinding]{name: "workflows", typ: "workflow",
		doc: kindDocs{input: "Workflows (`workflow`).", elem: "Binds a Workflow (a workflow binding).", fields: map[string]string{
			"binding":      "The name the worker starts instances through (env.<binding>).",
			"workflowName": "The Workflow's name.",
			"className":    "The class implementing the Workflow, when this script implements it.",
			"scriptName":   "The script implementing the Workflow, when it is not this one.",
		}},
		list: func(a *WorkerArgs) *[]WorkflowBinding { return &a.Workflows },
		upload: func(x WorkflowBinding, _ WorkerArgs) cfapi.Binding {
			return cfapi.Binding{Name: x.Binding, ClassName: x.ClassName, ScriptName: x.ScriptName,
				BindingKinds: cfapi.BindingKinds{WorkflowName: x.WorkflowName}}
		},
		validate: func(x WorkflowBinding, at func(string) string, a WorkerArgs, fail failFunc, unknown func(string) bool) {
			required(fail, at("workflowName"), x.WorkflowName, "the workflow's name")
			switch {
			case unknown(at("scriptName")) || unknown("name"):
				// whether this worker implements it is not known yet
			case x.ScriptName != "" && x.ScriptName != a.Name:
				scriptNameAt(fail, at("scriptName"), x.ScriptName)
			case x.ClassName == "":
				fail(at("className"), "a workflow this worker implements needs its class name")
			}
		},
	},
	named("browser", "browser", "Browser Rendering (`browser`).", func(a *WorkerArgs) *[]NamedBinding { return &a.Browser }),
	listKind[DispatchBinding]{name: "dispatchNamespaces", typ: "dispatch_namespace",
		doc: kindDocs{input: "Workers for Platforms dispatch namespaces (`dispatch_namespace`).",
			elem: "Binds a Workers for Platforms dispatch namespace (a dispatch_namespace binding).", fields: map[string]string{
				"binding":         "The name the worker dispatches through (env.<binding>).",
				"namespace":       "The dispatch namespace's name.",
				"outboundService": "A worker that receives the dispatched scripts' outbound requests.",
			}},
		list: func(a *WorkerArgs) *[]DispatchBinding { return &a.DispatchNamespaces },
		upload: func(x DispatchBinding, _ WorkerArgs) cfapi.Binding {
			kinds := cfapi.BindingKinds{Namespace: x.Namespace}
			if x.OutboundService != "" {
				kinds.Outbound = &cfapi.DispatchOutbound{}
				kinds.Outbound.Worker.Service = x.OutboundService
			}
			return cfapi.Binding{Name: x.Binding, BindingKinds: kinds}
		},
		validate: func(x DispatchBinding, at func(string) string, _ WorkerArgs, fail failFunc, _ func(string) bool) {
			required(fail, at("namespace"), x.Namespace, "the dispatch namespace's name")
			if x.OutboundService != "" {
				scriptNameAt(fail, at("outboundService"), x.OutboundService)
			}
		},
	},
	listKind[MTLSBinding]{name: "mtlsCertificates", typ: "mtls_certificate",
		doc: kindDocs{input: "mTLS client certificates (`mtls_certificate`).",
			elem: "Presents an uploaded mTLS client certificate on the worker's requests (an mtls_certificate binding).",
			fields: map[string]string{
				"binding":       "The name the worker fetches through (env.<binding>).",
				"certificateId": "The uploaded certificate's ID.",
			}},
		list: func(a *WorkerArgs) *[]MTLSBinding { return &a.MTLSCertificates },
		upload: func(x MTLSBinding, _ WorkerArgs) cfapi.Binding {
			return cfapi.Binding{Name: x.Binding, BindingKinds: cfapi.BindingKinds{CertificateID: x.CertificateID}}
		},
		validate: func(x MTLSBinding, at func(string) string, _ WorkerArgs, fail failFunc, _ func(string) bool) {
			required(fail, at("certificateId"), x.CertificateID, "the mTLS certificate's ID")
		},
	},
	listKind[SendEmailBinding]{name: "sendEmail", typ: "send_email",
		doc: kindDocs{input: "Email sending (`send_email`).", elem: "Sends email through Email Routing (a send_email binding).",
			fields: map[string]string{
				"binding":                     "The name the worker sends through (env.<binding>).",
				"destinationAddress":          "The only address mail may be sent to; not with allowedDestinationAddresses.",
				"allowedDestinationAddresses": "The addresses mail may be sent to.",
				"allowedSenderAddresses":      "The addresses mail may be sent from.",
			}},
		list: func(a *WorkerArgs) *[]SendEmailBinding { return &a.SendEmail },
		upload: func(x SendEmailBinding, _ WorkerArgs) cfapi.Binding {
			return cfapi.Binding{Name: x.Binding, BindingKinds: cfapi.BindingKinds{DestinationAddress: x.DestinationAddress,
				AllowedDestinationAddresses: x.AllowedDestinationAddresses, AllowedSenderAddresses: x.AllowedSenderAddresses}}
		},
		validate: func(x SendEmailBinding, at func(string) string, _ WorkerArgs, fail failFunc, _ func(string) bool) {
			address := func(field, v string) {
				if _, err := mail.ParseAddress(v); err != nil {
					fail(field, "%q is not an email address", v)
				}
			}
			if x.DestinationAddress != "" {
				address(at("destinationAddress"), x.DestinationAddress)
				if len(x.AllowedDestinationAddresses) > 0 {
					fail(at("allowedDestinationAddresses"), "set destinationAddress or allowedDestinationAddresses, not both")
				}
			}
			for j, v := range x.AllowedDestinationAddresses {
				address(at("allowedDestinationAddresses["+strconv.Itoa(j)+"]"), v)
			}
			for j, v := range x.AllowedSenderAddresses {
				address(at("allowedSenderAddresses["+strconv.Itoa(j)+"]"), v)
			}
		},
	},
	listKind[GenericBinding]{name: "otherBindings",
		doc: kindDocs{input: "Binding kinds not modelled above: `type`, `binding` (the name) and the API's properties, sent as given.",
			elem: "Any binding kind, for kinds this provider does not model: its type, its name and the properties " +
				"Cloudflare's API takes for it, sent verbatim.",
			fields: map[string]string{
				"type":       "The binding's type as Cloudflare's API names it (e.g. pipelines).",
				"binding":    "The name the worker reads it under (env.<binding>).",
				"properties": "The binding's other properties, in the API's own (snake_case) names.",
			}},
		list: func(a *WorkerArgs) *[]GenericBinding { return &a.OtherBindings },
		upload: func(x GenericBinding, _ WorkerArgs) cfapi.Binding {
			extra := maps.Clone(x.Properties)
			for _, k := range reservedBindingKeys {
				delete(extra, k)
			}
			return cfapi.Binding{Type: x.Type, Name: x.Binding, BindingKinds: cfapi.BindingKinds{Extra: extra}}
		},
		validate: func(x GenericBinding, at func(string) string, _ WorkerArgs, fail failFunc, _ func(string) bool) {
			switch {
			case x.Type == "":
				fail(at("type"), "the binding type is required (the API's `type`, e.g. \"pipelines\")")
			case slices.Contains(modelledTypes, x.Type):
				fail(at("type"), "%s bindings have their own input; declare this one there", x.Type)
			case x.Type == "assets":
				fail(at("type"), "the assets binding comes from the assets input")
			}
			for _, k := range reservedBindingKeys {
				if _, set := x.Properties[k]; set {
					fail(at("properties."+k), "%s is set by the entry's own field, not a property", k)
				}
			}
			if _, err := json.Marshal(x.Properties); err != nil {
				fail(at("properties"), "the properties must be JSON values")
			}
		},
	},
}

// modelledTypes are the binding types with their own input (every kind's,
// and vars' and secrets'); a generic entry naming one of them is refused so
// each kind has one home. Set in init: otherBindings' check reads it, so
// the tables cannot.
var modelledTypes []string

func init() {
	modelledTypes = []string{"plain_text", "secret_text"}
	for _, k := range allBindingKinds() {
		if t := k.cloudflareType(); t != "" {
			modelledTypes = append(modelledTypes, t)
		}
	}
}
