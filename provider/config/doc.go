// Package config is the provider configuration (openinspect:<key>): its
// schema, the environment fallbacks read in Configure, a Diff that never
// replaces resources, and the factories that build each API client from it.
//
// It may import internal API clients and common; no resource family.
package config
