// Package logredact keeps the plaintext of secrets out of the plugin's own
// verbose log (`pulumi up -v=9 --logflow`).
//
// Pulumi's RPC layer logs every property it unmarshals at level 9, and it
// unmarshals the inside of a secret (its "value", and the entries of a
// secret map) before it marks the result secret; its global secret filter
// is applied before the log arguments are formatted, so it never sees them.
// A provider therefore logs every secret the engine sends it from state and
// every secret it returns.
// This package closes that hole from the outside, without patching Pulumi:
// Server registers every secret of an incoming request with Pulumi's global
// filter before the request is unmarshaled, Provider registers the secrets
// of each response (a generated value, a digest kept secret) before it is
// marshaled, and InstallHandler formats log records before that filter runs. Both do nothing unless level-9 logging is
// on, so a normal run pays nothing.
//
// It imports nothing of the provider's own.
package logredact
