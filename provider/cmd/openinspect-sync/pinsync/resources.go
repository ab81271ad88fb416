package pinsync

// The account-level resources: D1, KV, R2, queues and their consumers.

import (
	"path"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

func (d *deriver) d1Databases() []upstream.D1Database {
	var out []upstream.D1Database
	for _, b := range d.env.each("resource", "cloudflare_d1_database") {
		db := upstream.D1Database{Logical: b.Labels[1]}
		db.When, _ = d.countWhen(b, "cloudflare_d1_database."+db.Logical)
		if cur := find(d.current.D1Databases, func(x upstream.D1Database) bool { return x.Logical == db.Logical }); cur != nil {
			db.Notes = cur.Notes
		}
		out = append(out, db)
	}
	return out
}

// moduleSource is true when a module block calls the module named base
// (terraform/modules/<base>).
func moduleSource(b *hclsyntax.Block, base string) bool {
	src, ok := literalString(attr(b, "source"))
	return ok && path.Base(src) == base
}

func (d *deriver) kvNamespaces() []upstream.KVNamespace {
	var out []upstream.KVNamespace
	for _, b := range d.env.each("module", "") {
		if !moduleSource(b, "cloudflare-kv") {
			continue
		}
		usedBy := "module." + b.Labels[0]
		logical, ok := d.logical(attr(b, "namespace_name"), usedBy)
		if !ok {
			continue
		}
		kv := upstream.KVNamespace{Logical: logical}
		kv.When, _ = d.countWhen(b, usedBy)
		out = append(out, kv)
	}
	return out
}

func (d *deriver) r2Buckets() []upstream.R2Bucket {
	var out []upstream.R2Bucket
	for _, b := range d.env.each("resource", "cloudflare_r2_bucket") {
		usedBy := "cloudflare_r2_bucket." + b.Labels[1]
		bucket := upstream.R2Bucket{}
		name := unwrap(attr(b, "name"))
		// var.x != "" ? var.x : "<template>": an override input, else the pattern.
		if c, ok := name.(*hclsyntax.ConditionalExpr); ok {
			s, ok := d.source(c.TrueResult, usedBy)
			if ok && s.Input != "" {
				bucket.NameOverride = &upstream.Source{Input: s.Input}
			}
			name = c.FalseResult
		}
		logical, ok := d.logical(name, usedBy)
		if !ok {
			continue
		}
		bucket.Logical = logical
		bucket.When, _ = d.countWhen(b, usedBy)
		if loc := attr(b, "location"); loc != nil {
			if s, ok := d.source(loc, usedBy+".location"); ok {
				bucket.LocationHint = &s
			}
		}
		out = append(out, bucket)
	}
	return out
}

// queueName is the logical name of the queue a cloudflare_queue reference
// (cloudflare_queue.x[0].queue_name or .queue_id) names.
func (d *deriver) queueName(e hclsyntax.Expression, usedBy string) (string, bool) {
	ref, ok := reference(e)
	if !ok || !strings.HasPrefix(ref, "cloudflare_queue.") {
		d.fail("%s: %q does not name a cloudflare_queue", usedBy, d.env.text(e))
		return "", false
	}
	name := strings.SplitN(strings.TrimPrefix(ref, "cloudflare_queue."), ".", 2)[0]
	name, _, _ = strings.Cut(name, "[")
	b := d.env.resource("cloudflare_queue", name)
	if b == nil {
		d.fail("%s: no resource cloudflare_queue.%s", usedBy, name)
		return "", false
	}
	return d.logical(attr(b, "queue_name"), "cloudflare_queue."+name)
}

// workerModule is the logical name of the worker a module.<x>[0].worker_name
// reference names.
func (d *deriver) workerModule(e hclsyntax.Expression, usedBy string) (string, bool) {
	ref, ok := reference(e)
	if ok && strings.HasPrefix(ref, "module.") {
		name := strings.SplitN(strings.TrimPrefix(ref, "module."), ".", 2)[0]
		name, _, _ = strings.Cut(name, "[")
		if m := d.env.module(name); m != nil {
			return d.logical(attr(m, "worker_name"), "module."+name)
		}
	}
	d.fail("%s: %q does not name a worker module", usedBy, d.env.text(e))
	return "", false
}

type consumer struct {
	worker string
	upstream.QueueConsumer
}

func (d *deriver) queueConsumers() []consumer {
	var out []consumer
	for _, b := range d.env.each("resource", "cloudflare_queue_consumer") {
		usedBy := "cloudflare_queue_consumer." + b.Labels[1]
		worker, ok1 := d.workerModule(attr(b, "script_name"), usedBy)
		queue, ok2 := d.queueName(attr(b, "queue_id"), usedBy)
		dlq, ok3 := d.queueName(attr(b, "dead_letter_queue"), usedBy)
		settings, ok4 := object(attr(b, "settings"))
		if !ok1 || !ok2 || !ok3 || !ok4 {
			if !ok4 {
				d.fail("%s: settings is not an object", usedBy)
			}
			continue
		}
		qc := upstream.QueueConsumer{Queue: queue, DeadLetterQueue: dlq}
		for key, field := range map[string]*int{
			"batch_size": &qc.MaxBatchSize, "max_wait_time_ms": &qc.MaxWaitTimeMs, "max_concurrency": &qc.MaxConcurrency,
			"max_retries": &qc.MaxRetries, "retry_delay": &qc.RetryDelaySeconds,
		} {
			n, ok := literalInt(settings[key])
			if !ok {
				d.fail("%s: settings.%s is not a number", usedBy, key)
			}
			*field = n
		}
		out = append(out, consumer{worker: worker, QueueConsumer: qc})
	}
	return out
}

func (d *deriver) queues(consumers []consumer) []upstream.Queue {
	var out []upstream.Queue
	for _, b := range d.env.each("resource", "cloudflare_queue") {
		usedBy := "cloudflare_queue." + b.Labels[1]
		logical, ok := d.logical(attr(b, "queue_name"), usedBy)
		if !ok {
			continue
		}
		q := upstream.Queue{Logical: logical}
		q.When, _ = d.countWhen(b, usedBy)
		for _, c := range consumers {
			if c.Queue == logical {
				q.DeadLetterQueue = c.DeadLetterQueue
			}
			if c.DeadLetterQueue == logical {
				q.DeadLetterFor = c.Queue
			}
		}
		out = append(out, q)
	}
	return out
}

// r2Logical is the logical name of the bucket resource cloudflare_r2_bucket.<res>.
func (d *deriver) r2Logical(res string) string {
	b := d.env.resource("cloudflare_r2_bucket", res)
	if b == nil {
		return ""
	}
	name := unwrap(attr(b, "name"))
	if c, ok := name.(*hclsyntax.ConditionalExpr); ok {
		name = c.FalseResult
	}
	logical, _ := d.logical(name, "cloudflare_r2_bucket."+res)
	return logical
}
