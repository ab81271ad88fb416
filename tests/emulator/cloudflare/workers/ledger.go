package workers

// Error codes as observed / assumed for the Workers scripts routes (the
// shared rows are in package cloudflare's ledger.go). "verified" means the code and
// message appear in real API responses quoted in public bug reports or
// documentation; "assumed" means a plausible value from the same family.
//
//	HTTP  code   message                                                     source
//	404   10007  workers.api.error.script_not_found                          verified (code, message); 400 when the
//	             script is named in a body (queue consumer)                  assumed
//	400   10016  workers.api.error.invalid_script_name (upper case etc.)     verified (code, message); name regex assumed
//	400   10021  upload validation: not multipart, no/invalid metadata,
//	             main_module missing / not a part / empty, duplicate part,
//	             "binding X of type Y is invalid", duplicate binding name,
//	             binding missing its target field or text, bad
//	             compatibility_date, transferred_classes; also script
//	             subdomain body without enabled, bad account subdomain      code verified for validation; messages assumed
//	400   10181  D1 binding to a database that does not exist               verified (code); message assumed
//	400   10041  KV binding to a namespace that does not exist              verified (code); message assumed
//	400   10085  R2 binding to a bucket that does not exist                 verified (code); message assumed
//	400   11000  queue binding to a queue name that does not exist          verified (code); message assumed
//	400   10143  workers.api.error.service_binding_error: could not resolve
//	             binding "X": script "Y" not found                          verified
//	400   10061  Durable Object class not declared by this script (after
//	             this upload's migration), class deleted while still bound,
//	             or script_name script missing / not declaring the class     verified (code); message assumed
//	400   10079  Migration tag precondition failed; current tag is <T>       verified (code and wording; the
//	             ("" spelled out for a script without a tag)                 empty-tag variant assumed)
//	400   10097  new_classes: "In order to use Durable Objects with a free
//	             plan, you must create a namespace using a
//	             `new_sqlite_classes` migration."                            verified (code); wording assumed
//	400   10074  migration adds a class already declared, deletes/renames
//	             a class not declared                                        code seen for re-adding a class; rest assumed
//	400   10064  delete without force while other scripts bind the script
//	             (service, DO script_name) or a queue consumer uses it      assumed
//	400   10100  invalid or duplicate cron expression                        assumed
//	404   10090  workers.api.error.service_not_found (GET/DELETE
//	             workers/services/{name})                                    inferred from wrangler, which reads
//	                                                                         10090 and 10007 as "no such Worker"
//	400   10057  inherit binding 'X' is invalid (bindings_inherit=strict)    code and wording wrangler matches
//	404   10056  secret not found (GET/DELETE scripts/{name}/secrets/{s})    assumed
//	404   10217  workers.api.error.version_not_found                         assumed
//	404   10218  workers.api.error.deployment_not_found                      assumed
//	400   10021  DELETE of the latest deployment (the one serving traffic)   refusal documented; code assumed
//	400   10021  deployment shares not adding up to 100, unknown strategy,
//	             migrations in a version upload                              assumed
//	400   10021  settings: placement not one of {mode: smart}, region,
//	             host, hostname (with optional mode targeted); limits.cpu_ms
//	             outside 1-300000; a sampling rate outside 0-1; a tail
//	             consumer without service; PATCH settings not multipart or
//	             carrying bindings / migrations                              assumed
//	400   10021  "could not read content for part metadata": no part named
//	             metadata (metadata[...] fields, as the TypeScript SDK 7.x
//	             flattens an object, are not one)                            verified (code, message:
//	                                                                         cloudflare-typescript #158, #2645)
//	400   10021  "Uncaught SyntaxError: … at worker.js:L:C": a body sent as
//	             Content-Type application/javascript is the script itself,
//	             service-worker syntax, named worker.js (the TypeScript SDK
//	             7.x's update sends its form so)                             verified (cloudflare-typescript #2799)
//	400   10021  main module is an application/source-map part; two module
//	             parts of one name                                           assumed
//	404   10007  tails (POST, GET …/tails, DELETE …/tails/{id}) of a script
//	             that does not exist                                         code as the other script routes
//	404   10007  workers.api.error.tail_not_found: DELETE of a tail that is
//	             not open (deleted, expired, another script's)               assumed
//	400   10021  a tail filter of a kind wrangler does not send, or of the
//	             wrong shape ("filters[i].<kind>: …")                        assumed
//
//	Upload forms (workers.go parseScriptUpload, moduleNames): the metadata
//	part is a plain field (wrangler, the Python SDK) or a JSON file (Alchemy,
//	the TypeScript SDK given a File). main_module / body_part is matched
//	"by filename" (the API schema's description of the files field, which
//	both SDKs send under one part name, "files" or "files[]") and by part
//	name (Cloudflare's curl examples, wrangler, Alchemy: name = filename).
//	Part types as documented for the files field: JS module/commonjs,
//	text/plain (text), application/octet-stream (data), application/wasm,
//	text/x-python, application/source-map (kept and served back by
//	content/v2, never run).
//
//	Cron syntax follows Cloudflare's documented table (verified), read as
//	in cron.go: weekdays 1-7 with 1 = Sunday or SUN-SAT, months 1-12 or
//	JAN-DEC, plus L, LW, L-n, nW (day of month) and L, nL, n#k (day of week).
