package cloudflare

import (
	"reflect"

	"github.com/pulumi/pulumi-go-provider/infer"
)

// typeDocs describe the nested and embedded types of the schemas that are
// not binding kinds (worker_bindings.go describes those): each type's text,
// then its fields' by Pulumi name, so the generated SDK docs describe every
// type and field. An embedded struct (WorkerSettings, WorkerRouting,
// Ownership) has no text of its own, only its fields'.
var typeDocs = map[reflect.Type]kindDocs{
	reflect.TypeFor[Observability](): {elem: "Workers Logs and observability settings.",
		fields: map[string]string{
			"enabled":          "Turn Workers Logs on.",
			"headSamplingRate": "Share of invocations sampled, 0 to 1 (Cloudflare's default 1).",
			"logs":             "Persisted logs: enabled, invocation logs, their own sampling rate.",
		}},
	reflect.TypeFor[ObservabilityLogs](): {elem: "Workers Logs' persisted logs.",
		fields: map[string]string{
			"enabled":          "Persist the worker's logs.",
			"invocationLogs":   "Log each invocation (request and outcome) as well. Defaults to true.",
			"headSamplingRate": "Share of invocations whose logs are kept, 0 to 1.",
		}},
	reflect.TypeFor[Placement](): {elem: "Where the worker runs: exactly one of mode (smart), region, host or hostname.",
		fields: map[string]string{
			"mode":     "\"smart\": Cloudflare places the worker near the back ends it calls most.",
			"region":   "A cloud region to run near, e.g. \"aws:us-east-1\" or \"gcp:us-east4\".",
			"host":     "A host:port probed at layer 4 (e.g. a database) to run near.",
			"hostname": "A hostname probed at layer 7 (an API) to run near.",
		}},
	reflect.TypeFor[ScriptLimits](): {elem: "Resource limits per invocation.",
		fields: map[string]string{
			"cpuMs": "CPU time per invocation in milliseconds (1-300000; the plan's default when unset).",
		}},
	reflect.TypeFor[TailConsumer](): {elem: "A worker receiving this worker's tail events.",
		fields: map[string]string{
			"service":     "The tail worker's script name.",
			"environment": "Its environment, if any.",
			"namespace":   "Its dispatch namespace, for a Workers for Platforms tail worker.",
		}},
	reflect.TypeFor[WorkerSettings](): {fields: map[string]string{
		"observability": "Workers Logs (upstream turns it on for every worker). Unset means off; every upload states it, so a change made elsewhere is reverted by the next up.",
		"placement":     "Where the worker runs: `mode: smart`, or a `region`, `host` or `hostname` hint (exactly one).",
		"limits":        "Resource limits, e.g. `cpuMs`.",
		"tailConsumers": "Workers that receive this worker's tail events.",
		"logpush":       "Send this worker's trace events to the account's Logpush jobs.",
		"tags": "Script tags. The provider adds its own ownership tag (`openinspect-owner-<id>`), which these can neither " +
			"set nor remove.",
		"keepBindings": "Binding types (`secret_text`, `plain_text`) that uploads leave in place when set outside Pulumi " +
			"(e.g. `wrangler secret put`). Their values are not in the content hash: changing one elsewhere makes no diff, and " +
			"no upload removes it. A name declared here in vars or secrets is still replaced by the program's value.",
		"domains": "Custom domains served by the worker, attached after the upload and detached when removed.",
		"routes":  "Zone routes (patterns like `example.com/api/*`) served by the worker.",
	}},
	reflect.TypeFor[QueueConsumer](): {elem: "Makes the worker the consumer of a queue, with the consumer's batching and retry settings " +
		"(Cloudflare's defaults apply to any left unset).",
		fields: map[string]string{
			"queueId":           "The consumed queue's ID (a Queue's queueId output).",
			"deadLetterQueue":   "Name of the queue messages go to once their retries are exhausted.",
			"maxBatchSize":      "Most messages delivered in one batch (1-100).",
			"maxWaitTimeMs":     "Longest time, in milliseconds, a batch waits to fill before it is delivered (0-60000).",
			"maxConcurrency":    "Most consumer invocations running at once (1-250).",
			"maxRetries":        "How many times a failed message is retried (0-100).",
			"retryDelaySeconds": "Seconds before a failed message is retried (0-43200).",
		}},
	reflect.TypeFor[AppliedMigration](): {elem: "One row of the `_schema_migrations` ledger, as the stack last read it.",
		fields: map[string]string{
			"version":   "The file's numeric prefix (its NNNN).",
			"name":      "The migration file's name.",
			"appliedAt": "When the file was applied, as the ledger records it.",
			"hash":      "SHA-256 of the file when it was applied (or first seen applied); a later content change is reported in `changed`.",
		}},
	reflect.TypeFor[WorkerAssets](): {elem: "Static assets uploaded with the worker (Workers Assets) through Cloudflare's manifest, upload-session " +
		"and bucket flow: only files the account does not hold yet are sent, and an unchanged set sends nothing.",
		fields: map[string]string{
			"directory": "Directory whose files are the assets, each served at \"/\" + its path relative to the directory. " +
				"Symlinks are skipped; `.assetsignore` (gitignore syntax) excludes files; `_headers` and `_redirects` are read as " +
				"configuration and not served. Exactly one of `directory` and `files` is set.",
			"files": "The assets as a map from URL path (\"/index.html\") to a local file. Keys `/_headers` and " +
				"`/_redirects` are configuration, as in a directory.",
			"binding": "Binding name through which the worker's code fetches its assets, e.g. ASSETS. " +
				"Not allowed on an assets-only worker.",
			"htmlHandling": "How requests for HTML pages are matched and redirected: auto-trailing-slash (Cloudflare's default), " +
				"force-trailing-slash, drop-trailing-slash or none.",
			"notFoundHandling": "What a request matching no asset gets when no worker code handles it: none " +
				"(Cloudflare's default: 404, or the worker), 404-page (the nearest 404.html) or single-page-application (/index.html with 200).",
			"runWorkerFirst": "Run the worker's code before serving assets for every request (the code reaches the assets " +
				"through the binding). Set this or `runWorkerFirstRoutes`, not both.",
			"runWorkerFirstRoutes": "Run the worker's code first only for these routes, e.g. [\"/api/*\", \"!/api/docs/*\"]: " +
				"each starts with / or !/ (an exclusion), and at least one is not an exclusion.",
		}},
	reflect.TypeFor[CustomDomain](): {elem: "A custom domain: a hostname the worker serves as its origin.",
		fields: map[string]string{
			"hostname": "The hostname, e.g. app.example.com; Cloudflare creates its DNS record and certificate.",
			"zoneId":   "The zone's ID. Exactly one of zoneId and zoneName is set.",
			"zoneName": "The zone's name (e.g. example.com), looked up in the account.",
		}},
	reflect.TypeFor[WorkerRoute](): {elem: "A zone route: a URL pattern the worker runs on.",
		fields: map[string]string{
			"pattern":  "The route pattern, e.g. example.com/api/*.",
			"zoneId":   "The zone's ID. Exactly one of zoneId and zoneName is set.",
			"zoneName": "The zone's name, looked up in the account.",
		}},
	reflect.TypeFor[WorkerRouting](): {fields: map[string]string{
		"domainIds": "Custom domain IDs by hostname.",
		"routeIds":  "Route IDs (zoneId/routeId) by pattern.",
	}},
	reflect.TypeFor[Ownership](): {fields: map[string]string{
		"owner": "The installation identity this object belongs to (the OpenInspect component passes its " +
			"NameLock's installationId). It is recorded with the object, so a create that finds the object already " +
			"carrying it adopts it (finishing a create a crashed run never recorded), and another installation's " +
			"object is refused even with adoptExisting.",
		"takeOverFrom": "The identity of another installation whose object under this name is taken over, " +
			"with a warning. Its destroy could then delete what this one uses: only for moving objects between stacks.",
	}},
}

// Annotate methods describe each type from typeDocs.

func (o *Observability) Annotate(a infer.Annotator)     { describeType(a, o) }
func (l *ObservabilityLogs) Annotate(a infer.Annotator) { describeType(a, l) }
func (pl *Placement) Annotate(a infer.Annotator)        { describeType(a, pl) }
func (l *ScriptLimits) Annotate(a infer.Annotator)      { describeType(a, l) }
func (t *TailConsumer) Annotate(a infer.Annotator)      { describeType(a, t) }
func (s *WorkerSettings) Annotate(a infer.Annotator)    { describeType(a, s) }
func (c *QueueConsumer) Annotate(a infer.Annotator)     { describeType(a, c) }
func (m *AppliedMigration) Annotate(a infer.Annotator)  { describeType(a, m) }
func (w *WorkerAssets) Annotate(a infer.Annotator)      { describeType(a, w) }
func (d *CustomDomain) Annotate(a infer.Annotator)      { describeType(a, d) }
func (r *WorkerRoute) Annotate(a infer.Annotator)       { describeType(a, r) }
func (r *WorkerRouting) Annotate(a infer.Annotator)     { describeType(a, r) }
func (o *Ownership) Annotate(a infer.Annotator)         { describeType(a, o) }
