package cloudflare

import "github.com/pulumi/pulumi-go-provider/infer"

// Descriptions of the nested types the Worker and D1Migrations schemas use
// that are not binding kinds (worker_bindings.go describes those), so the
// generated SDK docs describe every type and field.

// Annotate documents a queue consumer.
func (c *QueueConsumer) Annotate(a infer.Annotator) {
	a.Describe(c, "Makes the worker the consumer of a queue, with the consumer's batching and retry settings "+
		"(Cloudflare's defaults apply to any left unset).")
	a.Describe(&c.QueueID, "The consumed queue's ID (a Queue's queueId output).")
	a.Describe(&c.DeadLetterQueue, "Name of the queue messages go to once their retries are exhausted.")
	a.Describe(&c.MaxBatchSize, "Most messages delivered in one batch (1-100).")
	a.Describe(&c.MaxWaitTimeMs, "Longest time, in milliseconds, a batch waits to fill before it is delivered (0-60000).")
	a.Describe(&c.MaxConcurrency, "Most consumer invocations running at once (1-250).")
	a.Describe(&c.MaxRetries, "How many times a failed message is retried (0-100).")
	a.Describe(&c.RetryDelaySeconds, "Seconds before a failed message is retried (0-43200).")
}

// Annotate documents a ledger row.
func (m *AppliedMigration) Annotate(a infer.Annotator) {
	a.Describe(m, "One row of the `_schema_migrations` ledger, as the stack last read it.")
	a.Describe(&m.Version, "The file's numeric prefix (its NNNN).")
	a.Describe(&m.Name, "The migration file's name.")
	a.Describe(&m.AppliedAt, "When the file was applied, as the ledger records it.")
	a.Describe(&m.Hash, "SHA-256 of the file when it was applied (or first seen applied); a later content change is reported in `changed`.")
}
