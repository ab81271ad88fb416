package emulator

// Error codes as observed / assumed.
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
//	D1
//	400   7400   The request is malformed: <detail>                          assumed
//	400   7502   A database with that name already exists                    code observed; message is wrangler's wording
//	404   7404   The database <id> could not be found                        assumed
//	400   7500   <sqlite message> at offset N: SQLITE_<CODE>                 observed (format, code); status assumed
//	400   7500   the D1 "To execute a transaction, please use the
//	             state.storage.transaction() ..." text, for BEGIN etc.       message observed; code assumed
//	KV
//	400   10014  a namespace with this account ID and title already exists   observed
//	404   10013  namespace not found                                         assumed
//	404   10009  get: 'key not found'                                        assumed
//	400   10019  invalid title, key name, cursor or multipart body           assumed
//	400   10038  invalid expiration / expiration_ttl                         assumed
//	414   10033  key name longer than 512 bytes                              assumed
//	R2
//	400   10005  The specified bucket name is not valid.                     assumed
//	409   10004  The bucket you tried to create already exists, and you own it. assumed
//	404   10006  The specified bucket does not exist.                        observed
//	409   10008  The bucket you tried to delete is not empty.                assumed (docs quote a variant)
//	400   10040  invalid location hint, storage class or cursor              assumed
//	404   10007  The specified key does not exist. (object routes)           assumed (S3 NoSuchKey wording)
//	400   10020  invalid object name / object too large                      assumed
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
//	Zones, custom domains, routes (zones.go)
//	404   1001   Invalid zone identifier (unknown or another account's)     assumed
//	409   100116 Hostname 'X' already in use by other custom domain ...
//	             'override_existing_origin' to override.                     observed (issue threads)
//	400   100101 invalid hostname; 100102 no service; 100103 no zone;
//	             100105 hostname not in the zone                            assumed
//	404   100114 Domain not found                                            assumed
//	400   10022  route pattern invalid or outside the zone                   assumed
//	409   10020  route pattern already in the zone / on another script      assumed
//	404   10005  workers.api.error.route_not_found                           assumed
//	Cron syntax follows Cloudflare's documented table (verified), read as
//	in cron.go: weekdays 1-7 with 1 = Sunday or SUN-SAT, months 1-12 or
//	JAN-DEC, plus L, LW, L-n, nW (day of month) and L, nL, n#k (day of week).
//	Queues
//	404   11000  Queue not found (path queue_id; 400 for a missing
//	             dead_letter_queue in a consumer body)                       code verified (wrangler's queue_not_found); status assumed
//	400   11003  invalid queue name: X. Must match ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$
//	                                                                         verified
//	400   11003  bad consumer settings (batch_size 1-100, max_retries 0-100,
//	             max_wait_time_ms 0-60000, max_concurrency 1-250,
//	             retry_delay 0-43200), queue settings, DLQ = the queue
//	             itself, non-worker consumer type, no script_name            assumed
//	400   11009  A queue with this name already exists                       assumed
//	400   11004  workers.api.error.consumer_exists (second consumer)         verified (code, token); detail assumed
//	404   11005  Consumer not found                                          assumed
