package zones

// The host -> script lookup serving by Host uses (package workers serves
// the request): a zone hostname's routes first, the most specific pattern
// winning, then its custom domain.

import (
	"sort"
	"strings"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// ScriptFor is the script serving host and path (with its query) under the
// zones' routes and custom domains, and whether host belongs to a zone at
// all: ok with script "" is a zone hostname nothing serves (told apart from
// a name the emulator itself is reached by, ok false). Routes are matched
// under s.mu; whether their scripts exist is asked after it is released.
func (s *Service) ScriptFor(host, escapedPath, rawQuery string) (account, script string, ok bool) {
	type candidate struct{ acct, script string }
	var cands []candidate
	zoned := false
	s.mu.Lock()
	var zones []*zone
	for _, id := range core.SortedKeys(s.st.Zones) {
		if z := s.st.Zones[id]; inZone(host, z.Name) {
			zones, zoned = append(zones, z), true
		}
	}
	target := escapedPath
	if rawQuery != "" {
		target += "?" + rawQuery
	}
	var best *workerRoute
	var bestZone *zone
	for _, z := range zones {
		for _, id := range core.SortedKeys(s.st.WorkerRoutes) {
			rt := s.st.WorkerRoutes[id]
			if rt.ZoneID != z.ID || !routeMatches(rt.Pattern, host, target) {
				continue
			}
			if best == nil || moreSpecific(rt.Pattern, best.Pattern) {
				best, bestZone = rt, z
			}
		}
	}
	if best != nil && best.Script != "" {
		cands = append(cands, candidate{bestZone.AccountID, best.Script})
	}
	for _, id := range core.SortedKeys(s.st.WorkerDomains) {
		d := s.st.WorkerDomains[id]
		if strings.EqualFold(d.Hostname, host) {
			zoned = true
			cands = append(cands, candidate{d.AccountID, d.Service})
		}
	}
	s.mu.Unlock()
	for _, c := range cands {
		if s.scripts.Exists(c.acct, c.script) {
			return c.acct, c.script, true
		}
	}
	return "", "", zoned
}

// routePattern is a route's pattern split into its host and path parts,
// each with its wildcard noted.
type routePattern struct {
	host, path         string // without the wildcards
	hostWild, pathWild bool   // a leading * on the host, a trailing * on the path
}

func parseRoutePattern(p string) routePattern {
	host, path, found := strings.Cut(p, "/")
	out := routePattern{host: strings.ToLower(host), path: "/" + path}
	if !found {
		out.path = "/"
	}
	out.host, out.hostWild = strings.CutPrefix(out.host, "*")
	out.path, out.pathWild = strings.CutSuffix(out.path, "*")
	return out
}

// routeMatches reports whether pattern matches host and target (the
// escaped path and any query). "*example.com" matches example.com and its
// subdomains, "*.example.com" only the subdomains; a path without a
// trailing * matches only itself, with no query, as Cloudflare's route
// matching considers the whole URL.
func routeMatches(pattern, host, target string) bool {
	rp := parseRoutePattern(pattern)
	if rp.hostWild {
		if !strings.HasSuffix(host, rp.host) {
			return false
		}
	} else if host != rp.host {
		return false
	}
	if rp.pathWild {
		return strings.HasPrefix(target, rp.path)
	}
	return target == rp.path
}

// moreSpecific orders two matching patterns as "the most specific wins":
// an exact host over a wildcard one, then the longer host, then an exact
// path over a wildcard one, then the longer path; the pattern text breaks
// ties so the choice never depends on map order.
func moreSpecific(a, b string) bool {
	pa, pb := parseRoutePattern(a), parseRoutePattern(b)
	keys := func(p routePattern) []int {
		return []int{boolInt(!p.hostWild), len(p.host), boolInt(!p.pathWild), len(p.path)}
	}
	ka, kb := keys(pa), keys(pb)
	for i := range ka {
		if ka[i] != kb[i] {
			return ka[i] > kb[i]
		}
	}
	return a < b
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// RoutesByScript is account's zone routes by the script they run, each
// script's sorted by pattern (the Workers script list's routes).
func (s *Service) RoutesByScript(account string) map[string][]cloudflare.ScriptRoute {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]cloudflare.ScriptRoute{}
	for _, id := range core.SortedKeys(s.st.WorkerRoutes) {
		rt := s.st.WorkerRoutes[id]
		if z := s.st.Zones[rt.ZoneID]; z == nil || z.AccountID != account || rt.Script == "" {
			continue
		}
		out[rt.Script] = append(out[rt.Script], cloudflare.ScriptRoute{ID: rt.ID, Pattern: rt.Pattern, Script: rt.Script})
	}
	for _, rs := range out {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Pattern < rs[j].Pattern })
	}
	return out
}
