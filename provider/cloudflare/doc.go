// Package cloudflare holds the Cloudflare resources: D1Database, D1Migrations,
// KvNamespace, R2Bucket, Queue, Worker and WorkerUrls. Each file is one
// resource (types, Annotate, Check, Diff) with its CRUD beside it; ownership.go
// is how a named object comes under management (claim, account guard).
//
// Ownership evidence: a resource's `owner` input is the installation identity
// (NameLock's installationId, random, created before any other child). A
// Worker records it as the script tag "openinspect-owner-<identity>" on every
// upload; a D1 database in a one-row table _openinspect_owner inside it. KV
// namespaces, R2 buckets and queues carry no metadata in Cloudflare's API and
// record nothing. claim decides from the evidence: this installation's →
// adopt (finishing a create an interrupted run never recorded); another's →
// refuse naming it unless takeOverFrom names it (warning); none → adopt with
// adoptExisting, or when the object is empty (a D1 database without tables,
// left by a provider killed between create and marker), refuse otherwise.
//
// It may import config, internal/cfapi, internal/cron and internal/common;
// never another family. It reads internal/upstream only for the defaults its
// resources share with upstream's workers (the compatibility date), so a
// default never restates the contract.
package cloudflare
