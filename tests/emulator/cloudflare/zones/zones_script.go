package zones

// The script-scoped views of routes and custom domains that wrangler deploy
// uses in place of the zone and domain APIs:
//
//   - PUT accounts/{a}/workers/scripts/{name}/routes with
//     [{pattern, zone_id?, zone_name?}] makes exactly these the script's
//     routes (wrangler: "PUT will delete previous routes on this script");
//     a route's zone is zone_id, zone_name, or the account's zone whose
//     name the pattern's host ends with (the longest). GET lists them.
//   - PUT accounts/{a}/workers/scripts/{name}/domains/records with
//     {override_scope, override_existing_origin, override_existing_dns_record,
//     origins: [{hostname, zone_id?, zone_name?}]} attaches each origin;
//     override_scope also detaches the script's domains not listed.

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// scriptNotFound is the Workers API's answer for a missing script.
func scriptNotFound() *core.APIError {
	return core.NewAPIError(http.StatusNotFound, 10007, "workers.api.error.script_not_found")
}

// scriptFound is nil when the account has the script, else the Workers
// API's 404; asked before s.mu is taken.
func (s *Service) scriptFound(acct, script string) error {
	if !s.scripts.Exists(acct, script) {
		return scriptNotFound()
	}
	return nil
}

func (s *Service) registerScriptRouting() {
	const script = "/client/v4/accounts/{account_id}/workers/scripts/{script_name}"
	s.cf.API("GET "+script+"/routes", cloudflare.AuthAccount, s.scriptRoutesGet)
	s.cf.API("PUT "+script+"/routes", cloudflare.AuthAccount, s.scriptRoutesPut)
	s.cf.API("PUT "+script+"/domains/records", cloudflare.AuthAccount, s.scriptDomainsPut)
}

type scriptRouteBody struct {
	Pattern  string `json:"pattern"`
	ZoneID   string `json:"zone_id"`
	ZoneName string `json:"zone_name"`
}

// zoneForLocked resolves a route's or origin's zone in acct.
func (s *Service) zoneForLocked(acct, host, id, name string) *zone {
	var best *zone
	for _, z := range s.st.Zones {
		switch {
		case z.AccountID != acct:
		case id != "" && z.ID == id, id == "" && name != "" && z.Name == strings.ToLower(name):
			return z
		case id == "" && name == "" && inZone(host, z.Name) && (best == nil || len(z.Name) > len(best.Name)):
			best = z
		}
	}
	return best
}

func (s *Service) scriptRoutesLocked(acct, script string) []routeJSON {
	out := []routeJSON{}
	for _, rt := range s.st.WorkerRoutes {
		if z, ok := s.st.Zones[rt.ZoneID]; ok && z.AccountID == acct && rt.Script == script {
			out = append(out, routeJSON{ID: rt.ID, Pattern: rt.Pattern, Script: rt.Script})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pattern < out[j].Pattern })
	return out
}

func (s *Service) scriptRoutesGet(w http.ResponseWriter, r *http.Request) {
	err := s.scriptFound(r.PathValue("account_id"), r.PathValue("script_name"))
	s.mu.Lock()
	var out []routeJSON
	if err == nil {
		out = s.scriptRoutesLocked(r.PathValue("account_id"), r.PathValue("script_name"))
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

func (s *Service) scriptRoutesPut(w http.ResponseWriter, r *http.Request) {
	var body []scriptRouteBody
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	acct, script := r.PathValue("account_id"), r.PathValue("script_name")
	err := s.scriptFound(acct, script)
	s.mu.Lock()
	type placed struct {
		z       *zone
		pattern string
	}
	var want []placed
	for i := 0; err == nil && i < len(body); i++ {
		b := body[i]
		host, _, _ := strings.Cut(b.Pattern, "/")
		z := s.zoneForLocked(acct, host, b.ZoneID, b.ZoneName)
		if z == nil {
			err = core.NewAPIError(http.StatusBadRequest, 10022, fmt.Sprintf("route pattern %q matches no zone of the account", b.Pattern))
			break
		}
		for _, rt := range s.st.WorkerRoutes {
			if rt.ZoneID == z.ID && rt.Pattern == b.Pattern && rt.Script != script && rt.Script != "" {
				err = core.NewAPIError(http.StatusConflict, 10020, fmt.Sprintf("route %q is already assigned to script %s", b.Pattern, rt.Script))
			}
		}
		if err == nil {
			err = s.checkRouteLocked(z, routeBody{Pattern: b.Pattern}, s.routeIDLocked(z.ID, b.Pattern), true)
		}
		want = append(want, placed{z, b.Pattern})
	}
	var out []routeJSON
	if err == nil {
		for id, rt := range s.st.WorkerRoutes {
			if z, ok := s.st.Zones[rt.ZoneID]; ok && z.AccountID == acct && rt.Script == script {
				delete(s.st.WorkerRoutes, id)
			}
		}
		for _, p := range want {
			if id := s.routeIDLocked(p.z.ID, p.pattern); id != "" {
				s.st.WorkerRoutes[id].Script = script // a route running no script is taken over
				continue
			}
			rt := &workerRoute{ID: core.NewHexID(), ZoneID: p.z.ID, Pattern: p.pattern, Script: script}
			s.st.WorkerRoutes[rt.ID] = rt
		}
		out = s.scriptRoutesLocked(acct, script)
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

// routeIDLocked is the ID of the zone's route with this pattern, or "".
func (s *Service) routeIDLocked(zoneID, pattern string) string {
	for _, rt := range s.st.WorkerRoutes {
		if rt.ZoneID == zoneID && rt.Pattern == pattern {
			return rt.ID
		}
	}
	return ""
}

func (s *Service) scriptDomainsPut(w http.ResponseWriter, r *http.Request) {
	var body struct {
		OverrideScope          bool `json:"override_scope"`
		OverrideExistingOrigin bool `json:"override_existing_origin"`
		Origins                []struct {
			Hostname string `json:"hostname"`
			ZoneID   string `json:"zone_id"`
			ZoneName string `json:"zone_name"`
		} `json:"origins"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	acct, script := r.PathValue("account_id"), r.PathValue("script_name")
	err := s.scriptFound(acct, script)
	s.mu.Lock()
	listed := map[string]bool{}
	var out []domainJSON
	// Check every origin first, so a refused one changes nothing.
	type attach struct {
		host string
		z    *zone
	}
	var todo []attach
	for i := 0; err == nil && i < len(body.Origins); i++ {
		o := body.Origins[i]
		host := strings.ToLower(o.Hostname)
		z := s.zoneForLocked(acct, host, o.ZoneID, o.ZoneName)
		switch {
		case !hostnamePatternRE.MatchString(host):
			err = core.NewAPIError(http.StatusBadRequest, 100101, fmt.Sprintf("hostname %q is not a valid hostname", o.Hostname))
		case z == nil:
			err = core.NewAPIError(http.StatusNotFound, 1001, "Invalid zone identifier")
		case !inZone(host, z.Name):
			err = core.NewAPIError(http.StatusBadRequest, 100105, fmt.Sprintf("hostname %s is not in zone %s", host, z.Name))
		}
		for _, d := range s.st.WorkerDomains {
			if err == nil && d.AccountID == acct && d.Hostname == host && d.Service != script && !body.OverrideExistingOrigin {
				err = core.NewAPIError(http.StatusConflict, 100116, fmt.Sprintf(
					"Hostname '%s' already in use by other custom domain. Either delete it, try a different hostname, or use the option 'override_existing_origin' to override.", host))
			}
		}
		todo = append(todo, attach{host, z})
		listed[host] = true
	}
	if err == nil {
		for _, a := range todo {
			found := false
			for _, d := range s.st.WorkerDomains {
				if d.AccountID == acct && d.Hostname == a.host {
					d.Service, d.Environment, d.ZoneID, found = script, "production", a.z.ID, true
				}
			}
			if !found {
				d := &workerDomain{ID: core.NewHexID(), AccountID: acct, Hostname: a.host, Service: script, Environment: "production", ZoneID: a.z.ID}
				s.st.WorkerDomains[d.ID] = d
			}
		}
		for id, d := range s.st.WorkerDomains {
			if body.OverrideScope && d.AccountID == acct && d.Service == script && !listed[d.Hostname] {
				delete(s.st.WorkerDomains, id)
			}
		}
		out = []domainJSON{}
		for _, id := range core.SortedKeys(s.st.WorkerDomains) {
			if d := s.st.WorkerDomains[id]; d.AccountID == acct && d.Service == script {
				out = append(out, s.domainJSONLocked(d))
			}
		}
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}
