// Package cloudflare holds the Cloudflare resources: D1Database, D1Migrations,
// KvNamespace, R2Bucket, Queue, Worker and WorkerUrls. Each file is one
// resource (types, Annotate, Check, Diff) with its CRUD beside it; ownership.go
// is how a named object comes under management (claim, account guard).
//
// Ownership evidence: a resource's `owner` input is the installation identity
// (NameLock's installationId, random, created before any other child). A
// Worker records it as the script tag "openinspect-owner-<identity>" on every
// upload; a D1 database in a one-row table _openinspect_owner inside it; a KV
// namespace as the value of its key _openinspect_owner; an R2 bucket as the
// body of its object .openinspect-owner (upstream's workers never list a key
// or object of those names: ownership.go says what they do list). Queues have
// no place for metadata in Cloudflare's API: their owner is recorded, before
// the create, in the account's ownership registry, a D1 database no
// installation deletes (registry.go). claim decides from the evidence: this installation's → adopt
// (finishing a create an interrupted run never recorded); another's → refuse
// naming it unless takeOverFrom names it (warning); none → adopt with
// adoptExisting, or when the object is empty (a D1 database without tables or
// a KV namespace without keys, left by a provider killed between create and
// marker; R2 cannot list objects, so an unmarked bucket is never taken as
// empty), refuse otherwise. A changed owner input rewrites the evidence in
// Update. Deleting a KV namespace removes its marker with its keys; deleting
// an R2 bucket removes the marker object first (R2 deletes only empty
// buckets) and writes it back when the bucket is retained for other objects.
//
// It may import config, internal/cloudflare/cfapi, internal/cron and internal/family;
// never another family. It reads internal/upstream only for the defaults its
// resources share with upstream's workers (the compatibility date), so a
// default never restates the contract.
package cloudflare
