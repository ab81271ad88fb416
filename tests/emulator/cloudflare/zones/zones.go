package zones

// Zones and the two ways a Worker serves a zone's hostnames:
//
//   - GET zones (?name=, ?account.id=): the account's zones. The emulator
//     cannot add a domain to Cloudflare, so zones are seeded: every account
//     starts with Options.Seeded (default example.com), and AddZone or
//     POST /__emulator/zones add more.
//   - Custom domains, PUT/GET/DELETE accounts/{a}/workers/domains[/{id}]:
//     a hostname of a zone served by a script as its origin. A hostname
//     serving another script is refused with 409 100116 unless the body
//     sets override_existing_origin (the code and the option are
//     Cloudflare's; see the alchemy and workers-sdk threads about them).
//   - Routes, GET/POST/PUT/DELETE zones/{z}/workers/routes[/{id}]: URL
//     patterns of the zone that run a script.
//
// A deleted script loses its custom domains (a domain cannot exist without
// its service); routes are zone objects and stay, naming the gone script.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// DefaultZone is the zone every account has when Options.Zones is nil.
const DefaultZone = "example.com"

type zone struct {
	ID        string    `json:"id"`
	AccountID string    `json:"account_id"`
	Name      string    `json:"name"`
	CreatedOn time.Time `json:"created_on"`
}

type workerDomain struct {
	ID          string `json:"id"`
	AccountID   string `json:"account_id"`
	Hostname    string `json:"hostname"`
	Service     string `json:"service"`
	Environment string `json:"environment"`
	ZoneID      string `json:"zone_id"`
}

type workerRoute struct {
	ID      string `json:"id"`
	ZoneID  string `json:"zone_id"`
	Pattern string `json:"pattern"`
	Script  string `json:"script,omitempty"`
}

// zoneNameRE is a registrable name: two or more DNS labels.
var zoneNameRE = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$`)

// zoneID is stable for an account and name, so a seeded zone keeps its ID
// across restarts and fresh emulators alike.
func zoneID(acct, name string) string {
	sum := sha256.Sum256([]byte("openinspect-emulator-zone:" + acct + ":" + name))
	return hex.EncodeToString(sum[:16])
}

// seedZones gives each account its seeded zones (once; kept in the state).
// It runs in New, before any request.
func (s *Service) seedZones(names map[string][]string) error {
	for _, acct := range s.cf.IDs() {
		list, ok := names[acct]
		if !ok {
			list = []string{DefaultZone}
			if names != nil {
				list = names["*"]
			}
		}
		for _, n := range list {
			if _, err := s.addZoneLocked(acct, n); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Service) addZoneLocked(acct, name string) (string, error) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if !zoneNameRE.MatchString(name) {
		return "", fmt.Errorf("emulator: %q is not a zone name", name)
	}
	id := zoneID(acct, name)
	if _, ok := s.st.Zones[id]; !ok {
		s.st.Zones[id] = &zone{ID: id, AccountID: acct, Name: name, CreatedOn: time.Now().UTC()}
	}
	return id, nil
}

// AddZone adds a zone to an account (idempotent) and returns its ID.
func (s *Service) AddZone(accountID, name string) (string, error) {
	s.mu.Lock()
	id, err := s.addZoneLocked(accountID, name)
	s.mu.Unlock()
	if err != nil {
		return "", err
	}
	return id, s.save()
}

// ZoneID returns the ID of an account's zone, or false.
func (s *Service) ZoneID(accountID, name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.st.Zones[zoneID(accountID, name)]
	return zoneID(accountID, name), ok && z.AccountID == accountID
}

// Register mounts the routes of the API.
func (s *Service) Register() {
	s.cf.API("GET /client/v4/zones", cloudflare.AuthToken, s.zoneList)
	s.cf.API("GET /client/v4/zones/{zone_id}", cloudflare.AuthToken, s.zoneGet)
	const domains = "/client/v4/accounts/{account_id}/workers/domains"
	s.cf.API("GET "+domains, cloudflare.AuthAccount, s.domainList)
	s.cf.API("PUT "+domains, cloudflare.AuthAccount, s.domainPut)
	s.cf.API("GET "+domains+"/{domain_id}", cloudflare.AuthAccount, s.domainGet)
	s.cf.API("DELETE "+domains+"/{domain_id}", cloudflare.AuthAccount, s.domainDelete)
	const routes = "/client/v4/zones/{zone_id}/workers/routes"
	s.cf.API("GET "+routes, cloudflare.AuthToken, s.routeList)
	s.cf.API("POST "+routes, cloudflare.AuthToken, s.routeCreate)
	s.cf.API("GET "+routes+"/{route_id}", cloudflare.AuthToken, s.routeGet)
	s.cf.API("PUT "+routes+"/{route_id}", cloudflare.AuthToken, s.routeUpdate)
	s.cf.API("DELETE "+routes+"/{route_id}", cloudflare.AuthToken, s.routeDelete)
	s.registerScriptRouting()
	s.mux.HandleFunc("POST /__emulator/zones", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			AccountID string `json:"account_id"`
			Name      string `json:"name"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.AccountID == "" {
			core.AdminError(w, http.StatusBadRequest, fmt.Errorf("body must be {\"account_id\": ..., \"name\": ...}"))
			return
		}
		id, err := s.AddZone(body.AccountID, body.Name)
		if err != nil {
			core.AdminError(w, http.StatusBadRequest, err)
			return
		}
		core.WriteJSON(w, http.StatusOK, map[string]string{"id": id, "name": body.Name, "account_id": body.AccountID})
	})
}

// zoneJSON is a zone in the shape of cloudflare-go/v4 zones.Zone (its
// required fields filled with what a fresh full-setup zone reports).
type zoneJSON struct {
	ID                  string         `json:"id"`
	Name                string         `json:"name"`
	Status              string         `json:"status"`
	Paused              bool           `json:"paused"`
	Type                string         `json:"type"`
	DevelopmentMode     int            `json:"development_mode"`
	NameServers         []string       `json:"name_servers"`
	OriginalNameServers []string       `json:"original_name_servers"`
	OriginalRegistrar   *string        `json:"original_registrar"`
	OriginalDnshost     *string        `json:"original_dnshost"`
	CreatedOn           string         `json:"created_on"`
	ModifiedOn          string         `json:"modified_on"`
	ActivatedOn         string         `json:"activated_on"`
	Account             map[string]any `json:"account"`
	Owner               map[string]any `json:"owner"`
	Meta                map[string]any `json:"meta"`
	Plan                map[string]any `json:"plan"`
	Permissions         []string       `json:"permissions"`
}

func (z *zone) json() zoneJSON {
	t := cloudflare.Time(z.CreatedOn)
	return zoneJSON{
		ID: z.ID, Name: z.Name, Status: "active", Type: "full",
		NameServers: []string{"ada.ns.cloudflare.com", "bob.ns.cloudflare.com"}, OriginalNameServers: []string{},
		CreatedOn: t, ModifiedOn: t, ActivatedOn: t,
		Account: map[string]any{"id": z.AccountID, "name": cloudflare.AccountName(z.AccountID)},
		// The owning account, with the id and name the SDKs declare as
		// strings (null fails the Python SDK's strict validation).
		Owner:       map[string]any{"id": z.AccountID, "type": "organization", "name": cloudflare.AccountName(z.AccountID)},
		Meta:        map[string]any{"cdn_only": false, "dns_only": false, "foundation_dns": false, "page_rule_quota": 3, "phishing_detected": false, "step": 2},
		Plan:        map[string]any{"id": "0feeeeeeeeeeeeeeeeeeeeeeeeeeeeee", "name": "Free Website", "price": 0, "currency": "USD", "frequency": "", "is_subscribed": false, "can_subscribe": false, "legacy_id": "free", "legacy_discount": false, "externally_managed": false},
		Permissions: []string{"#worker:edit", "#worker:read", "#zone:read"},
	}
}

// zoneList answers GET zones: the token's account's zones, filtered by
// name and account.id (the SDK's dotted form of account[id]).
func (s *Service) zoneList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	acct := s.cf.Of(r)
	name := strings.ToLower(q.Get("name"))
	wantAcct := q.Get("account.id")
	if wantAcct == "" {
		wantAcct = q.Get("account[id]")
	}
	s.mu.Lock()
	items := []zoneJSON{}
	for _, id := range core.SortedKeys(s.st.Zones) {
		z := s.st.Zones[id]
		if z.AccountID != acct || (wantAcct != "" && z.AccountID != wantAcct) || (name != "" && z.Name != name) {
			continue
		}
		items = append(items, z.json())
	}
	s.mu.Unlock()
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	page, perPage := core.PageParams(r, 20, 50)
	pageItems, info := core.Paginate(items, page, perPage)
	core.WriteEnvelope(w, http.StatusOK, pageItems, info, nil)
}

// zoneLookupLocked finds the zone in the path among the token's account's.
// An unknown zone and another account's zone get the same answer, so a
// token learns nothing about zones it cannot use.
func (s *Service) zoneLookupLocked(r *http.Request) (*zone, error) {
	z, ok := s.st.Zones[r.PathValue("zone_id")]
	if !ok || z.AccountID != s.cf.Of(r) {
		return nil, core.NewAPIError(http.StatusNotFound, 1001, "Invalid zone identifier")
	}
	return z, nil
}

func (s *Service) zoneGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	z, err := s.zoneLookupLocked(r)
	var out zoneJSON
	if err == nil {
		out = z.json()
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

// inZone reports whether host (a hostname, or a route pattern's host with
// an optional leading "*" or "*.") belongs to the zone.
func inZone(host, zoneName string) bool {
	host = strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(host), "*"), ".")
	return host == zoneName || strings.HasSuffix(host, "."+zoneName)
}

type domainJSON struct {
	ID          string `json:"id"`
	CertID      string `json:"cert_id"`
	Environment string `json:"environment"`
	Hostname    string `json:"hostname"`
	Service     string `json:"service"`
	ZoneID      string `json:"zone_id"`
	ZoneName    string `json:"zone_name"`
}

func (s *Service) domainJSONLocked(d *workerDomain) domainJSON {
	out := domainJSON{ID: d.ID, CertID: certID(d.ID), Environment: d.Environment, Hostname: d.Hostname, Service: d.Service, ZoneID: d.ZoneID}
	if z, ok := s.st.Zones[d.ZoneID]; ok {
		out.ZoneName = z.Name
	}
	return out
}

// certID is the edge certificate Cloudflare issues a custom domain (a
// UUID, required by the SDKs' types): derived from the domain's ID, so it
// is stable across restarts and needs no state of its own.
func certID(domainID string) string {
	sum := sha256.Sum256([]byte("cert/" + domainID))
	h := hex.EncodeToString(sum[:16])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func domainNotFound() *core.APIError {
	// Assumed: the code of a missing custom domain was not found in
	// public material; 100114 sits in the custom-domain range (100116,
	// 100117 are documented in issue threads).
	return core.NewAPIError(http.StatusNotFound, 100114, "Domain not found")
}

// domainList filters by hostname, service, environment, zone_id and
// zone_name, all optional.
func (s *Service) domainList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	acct := r.PathValue("account_id")
	s.mu.Lock()
	out := []domainJSON{}
	for _, id := range core.SortedKeys(s.st.WorkerDomains) {
		d := s.st.WorkerDomains[id]
		if d.AccountID != acct {
			continue
		}
		j := s.domainJSONLocked(d)
		if (q.Get("hostname") != "" && j.Hostname != strings.ToLower(q.Get("hostname"))) ||
			(q.Get("service") != "" && j.Service != q.Get("service")) ||
			(q.Get("environment") != "" && j.Environment != q.Get("environment")) ||
			(q.Get("zone_id") != "" && j.ZoneID != q.Get("zone_id")) ||
			(q.Get("zone_name") != "" && j.ZoneName != q.Get("zone_name")) {
			continue
		}
		out = append(out, j)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Hostname < out[j].Hostname })
	core.WriteResult(w, out)
}

func (s *Service) domainGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	d, ok := s.st.WorkerDomains[r.PathValue("domain_id")]
	var out domainJSON
	var err error
	if !ok || d.AccountID != r.PathValue("account_id") {
		err = domainNotFound()
	} else {
		out = s.domainJSONLocked(d)
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

// domainPut attaches a hostname to a script. The zone is given by zone_id
// or zone_name; the hostname must be in it. Attaching a hostname again to
// the script it serves is a no-op answering the same domain.
func (s *Service) domainPut(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Hostname               string `json:"hostname"`
		Service                string `json:"service"`
		Environment            string `json:"environment"`
		ZoneID                 string `json:"zone_id"`
		ZoneName               string `json:"zone_name"`
		OverrideExistingOrigin bool   `json:"override_existing_origin"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	acct := r.PathValue("account_id")
	host := strings.ToLower(strings.TrimSpace(body.Hostname))
	if body.Environment == "" {
		body.Environment = "production"
	}
	bad := func(code int, format string, args ...any) error {
		return core.NewAPIError(http.StatusBadRequest, code, fmt.Sprintf(format, args...))
	}
	serviceExists := body.Service != "" && s.scripts.Exists(acct, body.Service) // before s.mu
	s.mu.Lock()
	var out domainJSON
	err := func() error {
		switch {
		case host == "" || !hostnamePatternRE.MatchString(host):
			return bad(100101, "hostname %q is not a valid hostname", body.Hostname)
		case body.Service == "":
			return bad(100102, "service is required")
		case body.ZoneID == "" && body.ZoneName == "":
			return bad(100103, "zone_id or zone_name is required")
		}
		var z *zone
		for _, cand := range s.st.Zones {
			if cand.AccountID == acct && (cand.ID == body.ZoneID || (body.ZoneID == "" && cand.Name == strings.ToLower(body.ZoneName))) {
				z = cand
			}
		}
		if z == nil {
			return core.NewAPIError(http.StatusNotFound, 1001, "Invalid zone identifier")
		}
		if !inZone(host, z.Name) {
			return bad(100105, "hostname %s is not in zone %s", host, z.Name)
		}
		if !serviceExists {
			return scriptNotFound()
		}
		for _, d := range s.st.WorkerDomains {
			if d.AccountID != acct || d.Hostname != host {
				continue
			}
			if (d.Service != body.Service || d.Environment != body.Environment) && !body.OverrideExistingOrigin {
				return core.NewAPIError(http.StatusConflict, 100116, fmt.Sprintf(
					"Hostname '%s' already in use by other custom domain. Either delete it, try a different hostname, or use the option 'override_existing_origin' to override.", host))
			}
			d.Service, d.Environment, d.ZoneID = body.Service, body.Environment, z.ID
			out = s.domainJSONLocked(d)
			return nil
		}
		d := &workerDomain{ID: core.NewHexID(), AccountID: acct, Hostname: host, Service: body.Service, Environment: body.Environment, ZoneID: z.ID}
		s.st.WorkerDomains[d.ID] = d
		out = s.domainJSONLocked(d)
		return nil
	}()
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

// hostnamePatternRE is a hostname of two or more labels.
var hostnamePatternRE = zoneNameRE

func (s *Service) domainDelete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	d, ok := s.st.WorkerDomains[r.PathValue("domain_id")]
	var err error
	if !ok || d.AccountID != r.PathValue("account_id") {
		err = domainNotFound()
	} else {
		delete(s.st.WorkerDomains, d.ID)
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, nil)
}

// RemoveScript drops a deleted script's custom domains (a domain cannot
// exist without its service) and persists that; a failed write is logged,
// the script's deletion having happened. Its routes are zone objects and
// stay, naming the gone script.
func (s *Service) RemoveScript(acct, script string) {
	s.mu.Lock()
	for id, d := range s.st.WorkerDomains {
		if d.AccountID == acct && d.Service == script {
			delete(s.st.WorkerDomains, id)
		}
	}
	s.mu.Unlock()
	if err := s.save(); err != nil && s.logf != nil {
		s.logf("zones: %v", err)
	}
}

type routeJSON struct {
	ID      string `json:"id"`
	Pattern string `json:"pattern"`
	Script  string `json:"script,omitempty"`
}

func routeNotFound() *core.APIError {
	// Assumed code: 10005 is not documented publicly for a missing route.
	return core.NewAPIError(http.StatusNotFound, 10005, "workers.api.error.route_not_found")
}

func (s *Service) routeList(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	z, err := s.zoneLookupLocked(r)
	out := []routeJSON{}
	if err == nil {
		for _, id := range core.SortedKeys(s.st.WorkerRoutes) {
			rt := s.st.WorkerRoutes[id]
			if rt.ZoneID == z.ID {
				out = append(out, routeJSON{ID: rt.ID, Pattern: rt.Pattern, Script: rt.Script})
			}
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Pattern < out[j].Pattern })
	core.Respond(w, err, out)
}

type routeBody struct {
	Pattern string `json:"pattern"`
	Script  string `json:"script"`
}

// checkRouteLocked validates a route of zone z; self is the route being
// updated ("" on create). scriptExists is whether b.Script exists, asked
// before s.mu was taken (routeScriptExists).
func (s *Service) checkRouteLocked(z *zone, b routeBody, self string, scriptExists bool) error {
	host, _, _ := strings.Cut(b.Pattern, "/")
	switch {
	case b.Pattern == "" || strings.Contains(b.Pattern, "://") || strings.ContainsAny(b.Pattern, " \t"):
		return core.NewAPIError(http.StatusBadRequest, 10022, fmt.Sprintf("route pattern %q is invalid: use host/path with optional * wildcards, without a scheme", b.Pattern))
	case !inZone(host, z.Name):
		return core.NewAPIError(http.StatusBadRequest, 10022, fmt.Sprintf("route pattern %q does not match zone %s", b.Pattern, z.Name))
	}
	if b.Script != "" && !scriptExists {
		return scriptNotFound()
	}
	for _, rt := range s.st.WorkerRoutes {
		if rt.ZoneID == z.ID && rt.Pattern == b.Pattern && rt.ID != self {
			// Assumed code for a duplicate pattern.
			return core.NewAPIError(http.StatusConflict, 10020, fmt.Sprintf("a route with pattern %q already exists in zone %s", b.Pattern, z.Name))
		}
	}
	return nil
}

// routeScriptExists is whether the script a route body names exists in the
// token's account (the only account whose zones the request may reach).
func (s *Service) routeScriptExists(r *http.Request, b routeBody) bool {
	return b.Script == "" || s.scripts.Exists(s.cf.Of(r), b.Script)
}

func (s *Service) routeCreate(w http.ResponseWriter, r *http.Request) {
	var body routeBody
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	scriptExists := s.routeScriptExists(r, body)
	s.mu.Lock()
	z, err := s.zoneLookupLocked(r)
	var out routeJSON
	if err == nil {
		err = s.checkRouteLocked(z, body, "", scriptExists)
	}
	if err == nil {
		rt := &workerRoute{ID: core.NewHexID(), ZoneID: z.ID, Pattern: body.Pattern, Script: body.Script}
		s.st.WorkerRoutes[rt.ID] = rt
		out = routeJSON{ID: rt.ID, Pattern: rt.Pattern, Script: rt.Script}
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

func (s *Service) routeLookupLocked(r *http.Request) (*zone, *workerRoute, error) {
	z, err := s.zoneLookupLocked(r)
	if err != nil {
		return nil, nil, err
	}
	rt, ok := s.st.WorkerRoutes[r.PathValue("route_id")]
	if !ok || rt.ZoneID != z.ID {
		return z, nil, routeNotFound()
	}
	return z, rt, nil
}

func (s *Service) routeGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	_, rt, err := s.routeLookupLocked(r)
	var out routeJSON
	if err == nil {
		out = routeJSON{ID: rt.ID, Pattern: rt.Pattern, Script: rt.Script}
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

func (s *Service) routeUpdate(w http.ResponseWriter, r *http.Request) {
	var body routeBody
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	scriptExists := s.routeScriptExists(r, body)
	s.mu.Lock()
	z, rt, err := s.routeLookupLocked(r)
	var out routeJSON
	if err == nil {
		err = s.checkRouteLocked(z, body, rt.ID, scriptExists)
	}
	if err == nil {
		rt.Pattern, rt.Script = body.Pattern, body.Script
		out = routeJSON{ID: rt.ID, Pattern: rt.Pattern, Script: rt.Script}
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

func (s *Service) routeDelete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	_, rt, err := s.routeLookupLocked(r)
	var out routeJSON
	if err == nil {
		delete(s.st.WorkerRoutes, rt.ID)
		out = routeJSON{ID: rt.ID}
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

// DomainEntry is one custom domain in an Inventory.
type DomainEntry struct {
	AccountID string `json:"account_id"`
	ID        string `json:"id"`
	Hostname  string `json:"hostname"`
	Service   string `json:"service"`
	ZoneID    string `json:"zone_id"`
}

// RouteEntry is one zone route in an Inventory.
type RouteEntry struct {
	AccountID string `json:"account_id"`
	ZoneID    string `json:"zone_id"`
	ID        string `json:"id"`
	Pattern   string `json:"pattern"`
	Script    string `json:"script"`
}

// Inventory lists the custom domains and routes, sorted; the zones
// themselves are seeded, not deployed, and are not listed.
func (s *Service) Inventory() ([]DomainEntry, []RouteEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	domains, routes := []DomainEntry{}, []RouteEntry{}
	for _, d := range s.st.WorkerDomains {
		domains = append(domains, DomainEntry{AccountID: d.AccountID, ID: d.ID, Hostname: d.Hostname, Service: d.Service, ZoneID: d.ZoneID})
	}
	for _, rt := range s.st.WorkerRoutes {
		acct := ""
		if z, ok := s.st.Zones[rt.ZoneID]; ok {
			acct = z.AccountID
		}
		routes = append(routes, RouteEntry{AccountID: acct, ZoneID: rt.ZoneID, ID: rt.ID, Pattern: rt.Pattern, Script: rt.Script})
	}
	sort.Slice(domains, func(i, j int) bool { return domains[i].Hostname < domains[j].Hostname })
	sort.Slice(routes, func(i, j int) bool { return routes[i].Pattern < routes[j].Pattern })
	return domains, routes
}
