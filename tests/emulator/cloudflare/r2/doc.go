// Package r2 is the emulated R2 API: buckets (create, list, get, delete;
// location hints and storage classes), their CORS policies and lifecycle
// rules (r2_config.go), the object routes wrangler's r2 object commands use
// (r2_objects.go), and the backend of the scripts' R2 bindings
// (r2_binding.go). Object bodies are kept in r2.json, which it
// owns; PutObject and DeleteObject let tests and the admin API fill or
// empty a bucket.
//
// It imports the standard library, core and package cloudflare, never the
// root or a sibling: the workers package reaches it through its own R2
// interface (Exists, ServeBinding), which the root wires.
//
// Error codes as observed / assumed (shared rows: package cloudflare and
// the root's ledger):
//
//	HTTP  code   message                                                     source
//	400   10005  The specified bucket name is not valid.                     assumed
//	409   10004  The bucket you tried to create already exists, and you own it. assumed
//	404   10006  The specified bucket does not exist.                        observed
//	409   10008  The bucket you tried to delete is not empty.                assumed (docs quote a variant)
//	400   10040  invalid location hint, storage class or cursor              assumed
//	400   10040  The JSON you provided was not well formed. (a CORS policy
//	             or lifecycle rule that is not R2's shape)                  observed (workers-sdk #8486) for CORS
//	404   10059  The CORS configuration does not exist.                      assumed
//	404   10007  The specified key does not exist. (object routes)           assumed (S3 NoSuchKey wording)
//	400   10020  invalid object name / object too large                      assumed
package r2
