// Package common holds the few helpers every family of the provider shares:
// how Go fields map to Pulumi property names, how content is digested, how an
// unknown input is recognised, and how Go packages map to the schema's single
// "index" module. It imports nothing of the provider's own, so any family may
// use it.
package common
