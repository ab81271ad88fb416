package cloudflare

import (
	"context"
	"fmt"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cfapi"
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
func accountClient(ctx context.Context, recorded string) (*cfapi.Client, error) {
	client, err := config.Cloudflare(ctx)
	if err != nil {
		return nil, err
	}
	if recorded != "" && recorded != client.AccountID() {
		return nil, fmt.Errorf("resource lives in Cloudflare account %s but the provider is configured for account %s; "+
			"restore openinspect:cloudflareAccountId to manage it", recorded, client.AccountID())
	}
	return client, nil
}
