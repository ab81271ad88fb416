package cloudflare

import "github.com/pulumi/pulumi-go-provider/infer"

// Descriptions of the nested types the Worker and D1Migrations schemas use,
// so the generated SDK docs describe every type and field.

// Annotate documents a D1 binding.
func (b *D1Binding) Annotate(a infer.Annotator) {
	a.Describe(b, "Binds a D1 database to the worker.")
	a.Describe(&b.Binding, "The name the worker reads the database under (env.<binding>).")
	a.Describe(&b.DatabaseID, "The D1 database's ID (a D1Database's databaseId output).")
}

// Annotate documents a KV binding.
func (b *KvBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "Binds a KV namespace to the worker.")
	a.Describe(&b.Binding, "The name the worker reads the namespace under (env.<binding>).")
	a.Describe(&b.NamespaceID, "The KV namespace's ID (a KvNamespace's namespaceId output).")
}

// Annotate documents an R2 binding.
func (b *R2Binding) Annotate(a infer.Annotator) {
	a.Describe(b, "Binds an R2 bucket to the worker.")
	a.Describe(&b.Binding, "The name the worker reads the bucket under (env.<binding>).")
	a.Describe(&b.BucketName, "The R2 bucket's name.")
}

// Annotate documents a queue producer binding.
func (b *QueueBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "Makes the worker a producer of a queue.")
	a.Describe(&b.Binding, "The name the worker sends messages through (env.<binding>).")
	a.Describe(&b.QueueName, "The queue's name.")
}

// Annotate documents a service binding.
func (b *ServiceBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "Binds another worker by script name. The name is a plain string, not a resource reference, "+
		"so two workers may bind each other; a target that does not exist yet is bound as soon as it appears.")
	a.Describe(&b.Binding, "The name the worker calls the other worker through (env.<binding>).")
	a.Describe(&b.Service, "The bound worker's script name.")
	a.Describe(&b.Environment, "The bound worker's environment, when it has several (default: its production one).")
}

// Annotate documents a Durable Object binding.
func (b *DurableObjectBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "Binds a Durable Object class. A class this worker declares (no scriptName) gets its "+
		"new_sqlite_classes migration step the first time it appears and a deleted_classes step when it goes.")
	a.Describe(&b.Binding, "The name the worker reaches the Durable Object namespace under (env.<binding>).")
	a.Describe(&b.ClassName, "The exported Durable Object class.")
	a.Describe(&b.ScriptName, "The worker that declares the class, when it is not this one.")
}

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
