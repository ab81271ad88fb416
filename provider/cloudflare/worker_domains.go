package cloudflare

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
)

// CustomDomain is a hostname the worker serves as its origin, in a zone of
// the account given by ID or by name.
type CustomDomain struct {
	Hostname string `pulumi:"hostname"`
	ZoneID   string `pulumi:"zoneId,optional"`
	ZoneName string `pulumi:"zoneName,optional"`
}

// WorkerRoute is a zone route pattern the worker runs on.
type WorkerRoute struct {
	Pattern  string `pulumi:"pattern"`
	ZoneID   string `pulumi:"zoneId,optional"`
	ZoneName string `pulumi:"zoneName,optional"`
}

// WorkerRouting is what the provider records of the attached hostnames.
type WorkerRouting struct {
	// DomainIDs are the custom domains' IDs by hostname.
	DomainIDs map[string]string `pulumi:"domainIds,optional"`
	// RouteIDs are "zoneId/routeId" by pattern.
	RouteIDs map[string]string `pulumi:"routeIds,optional"`
}

// hostnamePattern is a DNS name of at least two labels.
var hostnamePattern = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)

func (a WorkerArgs) validateRouting(fail func(field, format string, args ...any), unknown func(string) bool) {
	zone := func(field, id, name string) {
		if unknown(field+".zoneId") || unknown(field+".zoneName") {
			return // either may be the one set
		}
		switch {
		case id == "" && name == "":
			fail(field+".zoneId", "set zoneId or zoneName")
		case id != "" && name != "":
			fail(field+".zoneName", "set zoneId or zoneName, not both")
		}
	}
	seen := map[string]string{}
	for i, d := range a.Domains {
		field := fmt.Sprintf("domains[%d]", i)
		host := strings.ToLower(d.Hostname)
		switch {
		case len(host) > 253:
			fail(field+".hostname", "is %d characters; a hostname has at most 253", len(host))
		case !hostnamePattern.MatchString(host):
			fail(field+".hostname", "%q is not a hostname (no scheme, path, port or wildcard)", d.Hostname)
		case seen[host] != "":
			fail(field+".hostname", "%s is already listed at %s", d.Hostname, seen[host])
		}
		seen[host] = field
		zone(field, d.ZoneID, d.ZoneName)
		if d.ZoneName != "" && host != d.ZoneName && !strings.HasSuffix(host, "."+d.ZoneName) {
			fail(field+".hostname", "%s is not in zone %s", d.Hostname, d.ZoneName)
		}
	}
	patterns := map[string]string{}
	for i, r := range a.Routes {
		field := fmt.Sprintf("routes[%d]", i)
		switch {
		case r.Pattern == "" || strings.Contains(r.Pattern, "://") || strings.ContainsAny(r.Pattern, " \t"):
			fail(field+".pattern", "%q is not a route pattern: use host/path with optional * wildcards, without a scheme", r.Pattern)
		case patterns[r.Pattern] != "":
			fail(field+".pattern", "%s is already listed at %s", r.Pattern, patterns[r.Pattern])
		}
		patterns[r.Pattern] = field
		zone(field, r.ZoneID, r.ZoneName)
	}
}

// zoneResolver looks zone names up once per deploy.
type zoneResolver struct {
	client *cfapi.Client
	ids    map[string]string
}

func (z *zoneResolver) id(ctx context.Context, zoneID, zoneName string) (string, error) {
	if zoneID != "" {
		return zoneID, nil
	}
	if id, ok := z.ids[zoneName]; ok {
		return id, nil
	}
	id, found, err := z.client.FindZone(ctx, zoneName)
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("zone %s is not in account %s: add it to the account, or fix zoneName", zoneName, z.client.AccountID())
	}
	z.ids[zoneName] = id
	return id, nil
}

// reconcileRouting attaches the wanted domains and routes and removes the
// ones recorded before and no longer wanted. A hostname or pattern serving
// another script is refused unless adoptExisting, or unless this stack
// attached it. done records each step as it lands.
func reconcileRouting(ctx context.Context, client *cfapi.Client, args WorkerArgs, prior WorkerRouting) (WorkerRouting, error) {
	zones := &zoneResolver{client: client, ids: map[string]string{}}
	out := WorkerRouting{DomainIDs: map[string]string{}, RouteIDs: map[string]string{}}
	keepUnfinished := func() WorkerRouting {
		for k, v := range prior.DomainIDs {
			if _, ok := out.DomainIDs[k]; !ok {
				out.DomainIDs[k] = v
			}
		}
		for k, v := range prior.RouteIDs {
			if _, ok := out.RouteIDs[k]; !ok {
				out.RouteIDs[k] = v
			}
		}
		return out.compact()
	}
	for _, d := range args.Domains {
		zoneID, err := zones.id(ctx, d.ZoneID, d.ZoneName)
		if err != nil {
			return keepUnfinished(), err
		}
		existing, found, err := client.DomainByHostname(ctx, d.Hostname)
		if err != nil {
			return keepUnfinished(), err
		}
		_, ours := prior.DomainIDs[d.Hostname]
		if found && existing.Service == args.Name && existing.ZoneID == zoneID {
			out.DomainIDs[d.Hostname] = existing.ID
			continue
		}
		if found && existing.Service != args.Name && !ours && !args.AdoptExisting {
			return keepUnfinished(), fmt.Errorf("custom domain %s already serves worker %s, not %s; %s",
				d.Hostname, existing.Service, args.Name, adoptHint)
		}
		attached, err := client.AttachDomain(ctx, d.Hostname, zoneID, args.Name)
		if err != nil {
			return keepUnfinished(), err
		}
		out.DomainIDs[d.Hostname] = attached.ID
	}
	for host, id := range prior.DomainIDs {
		if _, kept := out.DomainIDs[host]; kept {
			continue
		}
		if err := client.DetachDomain(ctx, id); err != nil {
			return keepUnfinished(), err
		}
	}
	listed := map[string][]cfapi.Route{}
	routesOf := func(zoneID string) ([]cfapi.Route, error) {
		if r, ok := listed[zoneID]; ok {
			return r, nil
		}
		r, err := client.ListRoutes(ctx, zoneID)
		listed[zoneID] = r
		return r, err
	}
	for _, r := range args.Routes {
		zoneID, err := zones.id(ctx, r.ZoneID, r.ZoneName)
		if err != nil {
			return keepUnfinished(), err
		}
		routes, err := routesOf(zoneID)
		if err != nil {
			return keepUnfinished(), err
		}
		i := slices.IndexFunc(routes, func(x cfapi.Route) bool { return x.Pattern == r.Pattern })
		_, ours := prior.RouteIDs[r.Pattern]
		switch {
		case i >= 0 && routes[i].Script == args.Name:
			out.RouteIDs[r.Pattern] = zoneID + "/" + routes[i].ID
		case i >= 0 && routes[i].Script != "" && !ours && !args.AdoptExisting:
			return keepUnfinished(), fmt.Errorf("route %s already runs worker %s, not %s; %s", r.Pattern, routes[i].Script, args.Name, adoptHint)
		case i >= 0:
			if err := client.UpdateRoute(ctx, zoneID, routes[i].ID, r.Pattern, args.Name); err != nil {
				return keepUnfinished(), err
			}
			out.RouteIDs[r.Pattern] = zoneID + "/" + routes[i].ID
		default:
			created, err := client.CreateRoute(ctx, zoneID, r.Pattern, args.Name)
			if err != nil {
				return keepUnfinished(), err
			}
			out.RouteIDs[r.Pattern] = zoneID + "/" + created.ID
		}
	}
	for pattern, ref := range prior.RouteIDs {
		if _, kept := out.RouteIDs[pattern]; kept {
			continue
		}
		if err := deleteRouteRef(ctx, client, ref); err != nil {
			return keepUnfinished(), err
		}
	}
	return out.compact(), nil
}

func deleteRouteRef(ctx context.Context, client *cfapi.Client, ref string) error {
	zoneID, routeID, ok := strings.Cut(ref, "/")
	if !ok {
		return fmt.Errorf("recorded route %q is not zoneId/routeId", ref)
	}
	return client.DeleteRoute(ctx, zoneID, routeID)
}

// compact makes empty maps nil, as the wire does.
func (r WorkerRouting) compact() WorkerRouting {
	if len(r.DomainIDs) == 0 {
		r.DomainIDs = nil
	}
	if len(r.RouteIDs) == 0 {
		r.RouteIDs = nil
	}
	return r
}

// removeRouting detaches every recorded domain and route (a destroy).
func removeRouting(ctx context.Context, client *cfapi.Client, r WorkerRouting) error {
	for _, id := range r.DomainIDs {
		if err := client.DetachDomain(ctx, id); err != nil {
			return err
		}
	}
	for _, ref := range r.RouteIDs {
		if err := deleteRouteRef(ctx, client, ref); err != nil {
			return err
		}
	}
	return nil
}

// readRouting compares the attached domains and routes with the state and
// returns the domains and routes really serving the script: a hostname
// or pattern detached (or moved to another script) outside Pulumi leaves
// the list, so the next up attaches it again.
func readRouting(ctx context.Context, client *cfapi.Client, state WorkerState) ([]CustomDomain, []WorkerRoute, WorkerRouting, error) {
	routing := WorkerRouting{DomainIDs: maps.Clone(state.DomainIDs), RouteIDs: maps.Clone(state.RouteIDs)}
	var domains []CustomDomain
	if len(state.Domains) > 0 {
		attached, err := client.DomainsOfScript(ctx, state.Name)
		if err != nil {
			return nil, nil, routing, err
		}
		for _, d := range state.Domains {
			if i := slices.IndexFunc(attached, func(a cfapi.Domain) bool { return a.Hostname == d.Hostname }); i >= 0 {
				domains = append(domains, d)
			} else {
				delete(routing.DomainIDs, d.Hostname)
			}
		}
	}
	var routes []WorkerRoute
	listed := map[string][]cfapi.Route{}
	for _, r := range state.Routes {
		ref := routing.RouteIDs[r.Pattern]
		zoneID, routeID, _ := strings.Cut(ref, "/")
		if zoneID == "" {
			continue
		}
		if _, ok := listed[zoneID]; !ok {
			got, err := client.ListRoutes(ctx, zoneID)
			if err != nil {
				return nil, nil, routing, err
			}
			listed[zoneID] = got
		}
		if slices.ContainsFunc(listed[zoneID], func(x cfapi.Route) bool {
			return x.ID == routeID && x.Pattern == r.Pattern && x.Script == state.Name
		}) {
			routes = append(routes, r)
		} else {
			delete(routing.RouteIDs, r.Pattern)
		}
	}
	return domains, routes, routing.compact(), nil
}
