package provider

import (
	"fmt"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare"
)

// existsError is the refusal to capture a remote object that this stack did
// not create. It says both ways to take the object over on purpose.
func existsError(kind, name, accountID, token, resourceName, id string) error {
	return fmt.Errorf("%s %q already exists in account %s (id %s) and is not managed by this stack; "+
		"set adoptExisting: true to take it over, or run: pulumi import %s %s %s",
		kind, name, accountID, id, token, resourceName, id)
}

// sameAccount refuses to touch a resource recorded in another account than
// the one the provider is configured for: with a changed account ID, reads and
// deletes would otherwise address the wrong tenant's objects.
func sameAccount(recorded string, client *cloudflare.Client) error {
	if recorded != "" && recorded != client.AccountID() {
		return fmt.Errorf("resource lives in Cloudflare account %s but the provider is configured for account %s; "+
			"restore openinspect:cloudflareAccountId to manage it", recorded, client.AccountID())
	}
	return nil
}
