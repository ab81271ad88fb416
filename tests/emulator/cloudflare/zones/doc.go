// Package zones is the emulated zones API and what attaches Workers to a
// zone's hostnames: the seeded zones (GET zones), Workers custom domains,
// zone routes, the script-scoped views of both that wrangler deploy uses
// (zones_script.go), and the host -> script lookup serving by Host needs
// (lookup.go: ScriptFor). It owns zones.json ("zones", "worker_domains",
// "worker_routes").
//
// It imports the standard library, core and package cloudflare, never the
// root or a sibling. It asks whether a script exists through Scripts,
// which it declares and the root wires, only while its own lock is not
// held; the workers package reaches it through its own Zones interface
// (ScriptFor, RemoveScript).
//
// Error codes as observed / assumed (shared rows: package cloudflare and
// the root's ledger; a body naming a missing script answers the Workers
// 10007 row):
//
//	HTTP  code   message                                                     source
//	404   1001   Invalid zone identifier (unknown or another account's)     assumed
//	409   100116 Hostname 'X' already in use by other custom domain ...
//	             'override_existing_origin' to override.                     observed (issue threads)
//	400   100101 invalid hostname; 100102 no service; 100103 no zone;
//	             100105 hostname not in the zone                            assumed
//	404   100114 Domain not found                                            assumed
//	400   10022  route pattern invalid or outside the zone                   assumed
//	409   10020  route pattern already in the zone / on another script      assumed
//	404   10005  workers.api.error.route_not_found                           assumed
package zones
