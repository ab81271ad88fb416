// Package d1 is the emulated D1 API: databases (create, list, get, delete),
// /query and /raw on real SQLite files driven through modernc.org/sqlite's
// C-level API (d1sqlite.go), the import flow wrangler's d1 execute --file
// uses (d1_import.go), export as a SQL dump (d1_export.go), and the
// backend of the scripts' D1 bindings (binding.go). It owns d1.json (the
// databases' metadata) and the SQLite files in <DataDir>/d1/.
//
// It imports the standard library, modernc.org/sqlite, core and package
// cloudflare (accounts, the v4 route check), never the root or a sibling:
// the workers package reaches it through its own D1 interface (Exists,
// ServeBinding, Query), which the root wires.
//
// Error codes as observed / assumed (the shared rows are in package
// cloudflare's and the root's ledger):
//
//	HTTP  code   message                                                     source
//	400   7400   The request is malformed: <detail> (import and export
//	             bodies, an unknown export bookmark)                         assumed
//	400   7502   A database with that name already exists                    code observed; message is wrangler's wording
//	404   7404   The database <id> could not be found                        assumed
//	400   7500   <sqlite message> at offset N: SQLITE_<CODE>                 observed (format, code); status assumed
//	400   7500   the D1 "To execute a transaction, please use the
//	             state.storage.transaction() ..." text, for BEGIN etc.       message observed; code assumed
package d1
