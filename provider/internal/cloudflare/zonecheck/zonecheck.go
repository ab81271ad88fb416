// Package zonecheck checks hostnames against the zones of a Cloudflare
// account with read-only calls, each zone read once: the Worker's preflight
// and the installation's NameLock refuse with it before anything is built.
package zonecheck

import (
	"context"
	"fmt"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
)

// Zones collects, each naming its field, the hostnames whose zone the
// account lacks or that lie outside their zone.
type Zones struct {
	client *cfapi.Client
	seen   map[string]zone // by "id:<id>" or "name:<name>"
	// Problems are the refusals found so far, each a sentence naming its
	// field and what to set.
	Problems []string
}

// zone is one zone as the account answered for it.
type zone struct {
	name  string
	found bool
}

// New returns a check reading client's account.
func New(client *cfapi.Client) *Zones {
	return &Zones{client: client, seen: map[string]zone{}}
}

func (c *Zones) read(ctx context.Context, id, name string) (zone, error) {
	key := "id:" + id
	if id == "" {
		key = "name:" + name
	}
	if z, ok := c.seen[key]; ok {
		return z, nil
	}
	z := zone{name: name}
	var err error
	if id != "" {
		z.name, z.found, err = c.client.ZoneName(ctx, id)
	} else {
		_, z.found, err = c.client.FindZone(ctx, name)
	}
	if err != nil {
		return z, err
	}
	c.seen[key] = z
	return z, nil
}

// Check records a problem of field's hostname host (any case) in the
// zone given by id or by name: host empty checks only the zone, id and
// name both empty (not known yet) check nothing. A failed read is the error.
func (c *Zones) Check(ctx context.Context, field, host, id, name string) error {
	if id == "" && name == "" {
		return nil
	}
	z, err := c.read(ctx, id, name)
	if err != nil {
		return err
	}
	host = strings.ToLower(host)
	account := c.client.AccountID()
	switch {
	case !z.found && id != "":
		c.Problems = append(c.Problems, fmt.Sprintf("%s.zoneId: the account has no zone %s: add the zone to account %s, or fix zoneId",
			field, id, account))
	case !z.found:
		c.Problems = append(c.Problems, fmt.Sprintf("%s.zoneName: zone %s is not in account %s: add it to the account, or fix zoneName",
			field, name, account))
	case host != "" && !InZone(host, z.name):
		c.Problems = append(c.Problems, fmt.Sprintf("%s: %s is not in zone %s (%s): use a hostname under %s, or the zone that holds it",
			field, host, z.name, id, z.name))
	}
	return nil
}

// InZone reports whether host (lower case) is the zone's apex or under it.
func InZone(host, zone string) bool {
	zone = strings.ToLower(zone)
	return host == zone || strings.HasSuffix(host, "."+zone)
}
