package emulator

// Error codes as observed / assumed: the rows every Cloudflare API shares
// and the Workers scripts'. Each API package keeps its own rows in its
// package doc (cloudflare/d1, kv, r2, queues, zones).
//
// "observed" (the Workers and Queues rows say "verified") means the code and
// message appear in real API responses quoted in public bug reports
// (wrangler, cloudflare-go/-python/-typescript, the terraform provider, DDNS
// tools) or documentation; "assumed" means no real response was found and a
// plausible value from the same family was picked.
//
//	HTTP  code   message                                                     source
//	400   9106   Missing X-Auth-Key, X-Auth-Email or Authorization headers   observed
//	400   6003   Invalid request headers, error_chain 6111 "Invalid format
//	             for Authorization header"                                   observed
//	403   10000  Authentication error                                        observed
//	403   9109   Unauthorized to access requested resource                   observed (status assumed)
//	401   1000   Invalid API Token (GET /user/tokens/verify)                 assumed
//	400   7003   Could not route to <path>, perhaps your object identifier
//	             is invalid? plus 7000 "No route for that URI"               observed (404 outside /client/v4/)
//	400   6007   Malformed JSON in request body                              assumed
//	429   971    Please wait and consider throttling your request speed      assumed
//	5xx   10001  We encountered an internal error. Please try again.         observed for R2, assumed elsewhere
//	Workers scripts
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
//	400   10021  deployment shares not adding up to 100, unknown strategy,
//	             migrations in a version upload                              assumed
//	400   10021  settings: placement not one of {mode: smart}, region,
//	             host, hostname (with optional mode targeted); limits.cpu_ms
//	             outside 1-300000; a sampling rate outside 0-1; a tail
//	             consumer without service; PATCH settings not multipart or
//	             carrying bindings / migrations                              assumed
//	Cron syntax follows Cloudflare's documented table (verified), read as
//	in cron.go: weekdays 1-7 with 1 = Sunday or SUN-SAT, months 1-12 or
//	JAN-DEC, plus L, LW, L-n, nW (day of month) and L, nL, n#k (day of week).
