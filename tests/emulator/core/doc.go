// Package core is what every emulated API family shares: the Cloudflare v4
// envelope and its errors (envelope.go), route registration that counts a
// request, applies injected faults and only then checks credentials, in that
// order (core.go), the request counters, fault injection and held requests
// (faults.go), the ordering-safe writer and the version-checked loader of a
// family's state file (statefile.go), bearer tokens and the accepted
// credentials of a family (bearer.go), the request log (log.go), the
// /__emulator/ admin routes for counts and faults (admin.go) and ID and
// ordering helpers (ids.go).
//
// It imitates no API of its own; what it answers (the envelope, the 429 and
// 5xx of a fault, the 7003/7000 of an unknown route) is checked against
// cloudflare-go and wrangler by the suites of the families that use it.
//
// core imports only the standard library. Families import core, never the
// other way round: a family's own fault kinds and routes reach core through
// AllowFaultKind and SetFaultCheck, set by the composition root
// (tests/emulator).
package core
