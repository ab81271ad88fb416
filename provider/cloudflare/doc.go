// Package cloudflare holds the Cloudflare resources: D1Database, D1Migrations,
// KvNamespace, R2Bucket, Queue, Worker and WorkerUrls. Each file is one
// resource (types, Annotate, Check, Diff) with its CRUD beside it; ownership.go
// is how a named object comes under management (claim, account guard).
//
// It may import config, internal/cfapi, internal/cron and internal/common;
// never another family. It reads internal/upstream only for the defaults its
// resources share with upstream's workers (the compatibility date), so a
// default never restates the contract.
package cloudflare
