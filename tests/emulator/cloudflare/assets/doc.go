// Package assets is the emulated Workers static assets API: the direct
// upload flow (upload sessions, bucket uploads authorised by the session
// token, completion tokens a script upload redeems: assets.go), the store of
// uploaded files by account and content key (assets.json), and the serving
// of a script's assets in Cloudflare's order (serve.go), which is also what
// the scripts' assets binding answers.
//
// It imports the standard library, core and package cloudflare, never the
// root or a sibling. Package workers keeps each version's Assets (manifest
// and config) in its own state and calls Redeem, Serve and Collect; this
// package calls nothing while holding its lock.
//
// Error codes as observed / assumed (shared rows: package cloudflare and
// the root's ledger):
//
//	HTTP  code   message                                                     source
//	400   10021  bad manifest (path, hash, size), not base64 / multipart,
//	             a hash the session did not ask for, an invalid or spent
//	             completion token in a script upload                         assumed (the upload validation code)
//	401   10000  Authentication error: the upload session is unknown or
//	             expired                                                     assumed
//	413   10200  asset over 25 MiB                                           assumed
package assets
