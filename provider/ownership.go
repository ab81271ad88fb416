package provider

import (
	"context"
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare"
)

// claim is how every named Cloudflare object comes under this stack's
// management: found by name and adopted only when the user asked for it,
// created otherwise. Capturing an object another stack or tool made would let
// this stack delete it later, so that is refused by default.
type claim[T any] struct {
	kind         string // human name, e.g. "D1 database"
	name         string
	token        string // resource type token, for the import hint
	resourceName string
	adopt        bool
	accountID    string
	find         func(context.Context) (T, bool, error)
	create       func(context.Context) (T, error)
	id           func(T) string
}

// run returns the object and whether it was adopted rather than created.
func (c claim[T]) run(ctx context.Context) (T, bool, error) {
	existing, found, err := c.find(ctx)
	if err != nil {
		var zero T
		return zero, false, err
	}
	if found {
		if !c.adopt {
			var zero T
			return zero, false, fmt.Errorf("%s %q already exists in account %s (id %s) and is not managed by this stack; "+
				"set adoptExisting: true to take it over, or run: pulumi import %s %s %s",
				c.kind, c.name, c.accountID, c.id(existing), c.token, c.resourceName, c.id(existing))
		}
		return existing, true, nil
	}
	created, err := c.create(ctx)
	return created, false, err
}

// accountClient returns the Cloudflare client for a resource recorded in
// account recorded ("" when not yet known, as in an import). It refuses a
// provider configured for another account: with a changed account ID, reads
// and deletes would otherwise address the wrong tenant's objects.
func accountClient(ctx context.Context, recorded string) (*cloudflare.Client, error) {
	client, err := cloudflareFrom(ctx)
	if err != nil {
		return nil, err
	}
	if recorded != "" && recorded != client.AccountID() {
		return nil, fmt.Errorf("resource lives in Cloudflare account %s but the provider is configured for account %s; "+
			"restore openinspect:cloudflareAccountId to manage it", recorded, client.AccountID())
	}
	return client, nil
}

// isUnknown reports whether an input is not yet known (a preview with values
// that depend on resources not created yet). Unknown values decode as zero
// values, so validation must skip them rather than reject them.
func isUnknown(inputs property.Map, key string) bool {
	v, ok := inputs.GetOk(key)
	return ok && v.IsComputed()
}
