// Package cfapi is the provider's thin client over cloudflare-go/v4. It
// turns the SDK's pagination, error envelopes and parameter wrappers into the
// few calls the resources need, and keeps raw HTTP out of the resources.
//
// It imports only the SDK; every family may import it.
package cfapi
