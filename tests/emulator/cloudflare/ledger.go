package cloudflare

// Error codes as observed / assumed: the rows every Cloudflare API shares.
// Each API package keeps its own rows (d1, kv, r2, queues, zones, assets
// in their package docs; workers in its ledger.go).
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
