package cloudflare

import (
	"reflect"

	"github.com/pulumi/pulumi-go-provider/infer"
)

// typeDocs describe the nested types of the Worker and D1Migrations
// schemas that are not binding kinds (worker_bindings.go describes those):
// each type's text, then its fields' by Pulumi name, so the generated SDK
// docs describe every type and field. WorkerSettings is embedded in
// WorkerArgs, so only its fields are described.
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
