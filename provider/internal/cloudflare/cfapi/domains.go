package cfapi

import (
	"context"
	"fmt"

	cf "github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/cloudflare/cloudflare-go/v4/zones"
)

// Custom domains (PUT/GET/DELETE accounts/{a}/workers/domains) and zone
// routes (zones/{z}/workers/routes) of Workers, and the zone look-up they
// need when a program names a zone rather than its ID.

// Domain is a hostname attached to a worker.
type Domain struct {
	ID, Hostname, Service, Environment, ZoneID, ZoneName string
}

// FindZone returns the ID of the account's zone with this name, or
// ok=false (GET zones?name=...&account.id=..., one zone at most).
func (c *Client) FindZone(ctx context.Context, name string) (string, bool, error) {
	page, err := c.api.Zones.List(ctx, zones.ZoneListParams{Name: cf.F(name),
		Account: cf.F(zones.ZoneListParamsAccount{ID: cf.F(c.accountID)})})
	if err != nil {
		return "", false, wrap(fmt.Sprintf("find zone %q", name), err)
	}
	for _, z := range page.Result {
		if z.Name == name {
			return z.ID, true, nil
		}
	}
	return "", false, nil
}

// DomainByHostname returns the domain attached at hostname in the account,
// or ok=false (the list filtered by hostname: one entry at most).
func (c *Client) DomainByHostname(ctx context.Context, hostname string) (Domain, bool, error) {
	page, err := c.api.Workers.Domains.List(ctx, workers.DomainListParams{AccountID: cf.F(c.accountID), Hostname: cf.F(hostname)})
	if err != nil {
		return Domain{}, false, wrap(fmt.Sprintf("read custom domain %q", hostname), err)
	}
	for _, d := range page.Result {
		if d.Hostname == hostname {
			return domainOf(d), true, nil
		}
	}
	return Domain{}, false, nil
}

// DomainsOfScript lists the domains attached to a script (filtered by
// service: its cost follows the script's own domains).
func (c *Client) DomainsOfScript(ctx context.Context, script string) ([]Domain, error) {
	page, err := c.api.Workers.Domains.List(ctx, workers.DomainListParams{AccountID: cf.F(c.accountID), Service: cf.F(script)})
	if err != nil {
		return nil, wrap(fmt.Sprintf("list custom domains of worker %q", script), err)
	}
	out := make([]Domain, 0, len(page.Result))
	for _, d := range page.Result {
		if d.Service == script {
			out = append(out, domainOf(d))
		}
	}
	return out, nil
}

func domainOf(d workers.Domain) Domain {
	return Domain{ID: d.ID, Hostname: d.Hostname, Service: d.Service, Environment: d.Environment, ZoneID: d.ZoneID, ZoneName: d.ZoneName}
}

// AttachDomain points hostname in zoneID at script's production
// environment, replacing whatever it served: Cloudflare refuses a hostname
// serving another worker (409, 100116) unless override_existing_origin is
// set, and the caller has already decided that this one may be taken
// (ours, or adoptExisting). cloudflare-go v4.6 has no field for the option.
func (c *Client) AttachDomain(ctx context.Context, hostname, zoneID, script string) (Domain, error) {
	res, err := c.api.Workers.Domains.Update(ctx, workers.DomainUpdateParams{AccountID: cf.F(c.accountID),
		Hostname: cf.F(hostname), ZoneID: cf.F(zoneID), Service: cf.F(script), Environment: cf.F("production")},
		option.WithJSONSet("override_existing_origin", true))
	if err != nil {
		return Domain{}, wrap(fmt.Sprintf("attach custom domain %q to worker %q", hostname, script), err)
	}
	return domainOf(*res), nil
}

// DetachDomain removes a custom domain; a missing one is fine.
func (c *Client) DetachDomain(ctx context.Context, id string) error {
	err := wrap(fmt.Sprintf("detach custom domain %s", id), c.api.Workers.Domains.Delete(ctx, id, workers.DomainDeleteParams{AccountID: cf.F(c.accountID)}))
	if IsNotFound(err) {
		return nil
	}
	return err
}

// Route is a zone route and the script it runs ("" for none).
type Route struct {
	ID, Pattern, Script string
}

// ListRoutes lists a zone's worker routes.
func (c *Client) ListRoutes(ctx context.Context, zoneID string) ([]Route, error) {
	page, err := c.api.Workers.Routes.List(ctx, workers.RouteListParams{ZoneID: cf.F(zoneID)})
	if err != nil {
		return nil, wrap(fmt.Sprintf("list worker routes of zone %s", zoneID), err)
	}
	out := make([]Route, 0, len(page.Result))
	for _, r := range page.Result {
		out = append(out, Route{ID: r.ID, Pattern: r.Pattern, Script: r.Script})
	}
	return out, nil
}

// CreateRoute adds a route running script.
func (c *Client) CreateRoute(ctx context.Context, zoneID, pattern, script string) (Route, error) {
	res, err := c.api.Workers.Routes.New(ctx, workers.RouteNewParams{ZoneID: cf.F(zoneID), Pattern: cf.F(pattern), Script: cf.F(script)})
	if err != nil {
		return Route{}, wrap(fmt.Sprintf("add route %q to worker %q", pattern, script), err)
	}
	return Route{ID: res.ID, Pattern: res.Pattern, Script: res.Script}, nil
}

// UpdateRoute points an existing route at script.
func (c *Client) UpdateRoute(ctx context.Context, zoneID, id, pattern, script string) error {
	_, err := c.api.Workers.Routes.Update(ctx, id, workers.RouteUpdateParams{ZoneID: cf.F(zoneID), ID: cf.F(id),
		Pattern: cf.F(pattern), Script: cf.F(script)})
	return wrap(fmt.Sprintf("point route %q at worker %q", pattern, script), err)
}

// DeleteRoute removes a route; a missing one is fine.
func (c *Client) DeleteRoute(ctx context.Context, zoneID, id string) error {
	_, err := c.api.Workers.Routes.Delete(ctx, id, workers.RouteDeleteParams{ZoneID: cf.F(zoneID)})
	if err = wrap(fmt.Sprintf("delete route %s of zone %s", id, zoneID), err); IsNotFound(err) {
		return nil
	}
	return err
}

// ZoneName returns the name of the zone with this ID, or ok=false when the
// token's accounts have no such zone (GET zones/{id}).
func (c *Client) ZoneName(ctx context.Context, id string) (string, bool, error) {
	z, err := c.api.Zones.Get(ctx, zones.ZoneGetParams{ZoneID: cf.F(id)})
	if err != nil {
		if err := wrap(fmt.Sprintf("read zone %s", id), err); IsNotFound(err) {
			return "", false, nil
		} else {
			return "", false, err
		}
	}
	return z.Name, true, nil
}
