// Package kv is the emulated Workers KV API: namespaces (create, list, get,
// rename, delete), keys and values with metadata and expiry, the bulk
// write/delete/get routes (kv_bulk.go), and the backend of the scripts' KV
// bindings (binding.go). It owns kv.json.
//
// It imports the standard library, core and package cloudflare, never the
// root or a sibling: the workers package reaches it through its own KV
// interface (Exists, ServeBinding), which the root wires.
//
// Error codes as observed / assumed (shared rows: package cloudflare and
// the root's ledger):
//
//	HTTP  code   message                                                     source
//	400   10014  a namespace with this account ID and title already exists   observed
//	404   10013  namespace not found                                         assumed
//	404   10009  get: 'key not found'                                        assumed
//	400   10019  invalid title, key name, cursor or multipart body; bulk/get
//	             of 0 or over 100 keys, a type other than text or json, a
//	             value type json cannot parse                                assumed
//	400   10038  invalid expiration / expiration_ttl                         assumed
//	414   10033  key name longer than 512 bytes                              assumed
package kv
