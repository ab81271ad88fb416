// Package queues is the emulated Queues API: queues and their settings,
// consumers (one per queue: a worker, or http_pull) with their batching and
// retry settings, the backend of the scripts' queue producer bindings, the
// broker (broker.go) that holds each queue's messages in memory and
// delivers them to the consumer script in batches, retrying and
// dead-lettering as Cloudflare does, and the HTTP routes that send, pull,
// acknowledge and purge messages (pull.go). It owns queues.json (the queues
// and consumers; messages are not persisted) and the admin route listing a
// queue's messages.
//
// It imports the standard library, core and package cloudflare, never the
// root or a sibling. It reaches the Workers scripts through Scripts, which
// it declares and the root wires; the workers package reaches it through
// its own Queues interface (Exists, ServeBinding, ConsumedBy,
// RemoveConsumers). Scripts is called only while this package's lock is
// not held, so the two never wait on each other.
//
// Error codes as observed / assumed (shared rows: package cloudflare and
// the root's ledger; a consumer naming a missing script answers the Workers
// 10007 row):
//
//	HTTP  code   message                                                     source
//	404   11000  Queue not found (path queue_id; 400 for a missing
//	             dead_letter_queue in a consumer body)                       code verified (wrangler's queue_not_found); status assumed
//	400   11003  invalid queue name: X. Must match ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$
//	                                                                         verified
//	400   11003  bad consumer settings (batch_size 1-100, max_retries 0-100,
//	             max_wait_time_ms 0-60000, max_concurrency 1-250,
//	             retry_delay 0-43200, visibility_timeout_ms 0-43200000),
//	             queue settings, DLQ = the queue itself, a type other than
//	             worker or http_pull, a worker consumer without script_name  assumed
//	400   11003  messages: a body that does not fit its content_type, a
//	             batch of 0 or over 100 messages, batch_size outside
//	             1-100; pull or ack on a queue without an http_pull
//	             consumer; purge without delete_messages_permanently        assumed (limits documented)
//	413   11003  a message over 128 KB, a batch over 256 KB                  limits documented; code assumed
//	400   11009  A queue with this name already exists                       assumed
//	400   11004  workers.api.error.consumer_exists (second consumer)         verified (code, token); detail assumed
//	404   11005  Consumer not found                                          assumed
//	404   10007  workers.api.error.script_not_found (GET workers/scripts/
//	             {name}/queue-consumers of a missing script; the route and
//	             its shape are inferred from Alchemy 0.94.0's client)       assumed
package queues
