// Package family holds the few helpers every resource family of the
// provider (cloudflare, tenant, sandbox, installation) shares:
// how Go fields map to Pulumi property names, how content is digested, how an
// unknown input is recognised, and how Go packages map to the schema's single
// "index" module. It imports nothing of the provider's own, so any family may
// use it.
package family
