package emulator_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/cloudflare/cloudflare-go/v4/zones"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emuzones "github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/zones"
)

func findZone(t *testing.T, c *cloudflare.Client, name string) []zones.Zone {
	t.Helper()
	page, err := c.Zones.List(context.Background(), zones.ZoneListParams{Name: cloudflare.F(name),
		Account: cloudflare.F(zones.ZoneListParamsAccount{ID: cloudflare.F(acct)})})
	require.NoError(t, err)
	return page.Result
}

// Every account starts with example.com; more zones come from Options.Zones,
// AddZone or the admin route, and a token sees only its account's zones.
func TestZonesSeededPerAccount(t *testing.T) {
	other := strings.Repeat("b", 32)
	s := start(t, emulator.Options{
		Tokens: map[string]string{emulator.DefaultToken: acct, "other-token": other},
		Zones:  emuzones.Options{Seeded: map[string][]string{acct: {"example.com", "example.org"}, "*": {"other.example"}}},
	})
	c := newClient(s)
	got := findZone(t, c, "example.com")
	require.Len(t, got, 1)
	assert.Equal(t, "example.com", got[0].Name)
	assert.Equal(t, acct, got[0].Account.ID)
	assert.EqualValues(t, "active", got[0].Status)
	id, ok := s.Zones().ZoneID(acct, "example.com")
	require.True(t, ok)
	assert.Equal(t, id, got[0].ID)
	assert.Len(t, findZone(t, c, "example.org"), 1)
	assert.Empty(t, findZone(t, c, "other.example"), "another account's zone is not listed")
	assert.Empty(t, findZone(t, c, "nope.example"))

	resp, body := do(t, http.MethodPost, s.URL()+"/__emulator/zones", "", `{"account_id":"`+acct+`","name":"added.example"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Len(t, findZone(t, c, "added.example"), 1)
	resp, _ = do(t, http.MethodPost, s.URL()+"/__emulator/zones", "", `{"account_id":"`+acct+`","name":"not a zone"}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)

	z, err := c.Zones.Get(context.Background(), zones.ZoneGetParams{ZoneID: cloudflare.F(id)})
	require.NoError(t, err)
	assert.Equal(t, "example.com", z.Name)
	otherID, _ := s.Zones().ZoneID(other, "other.example")
	_, err = c.Zones.Get(context.Background(), zones.ZoneGetParams{ZoneID: cloudflare.F(otherID)})
	requireAPIError(t, err, http.StatusNotFound, 1001)

	// The default: example.com for every account.
	d := start(t, emulator.Options{})
	assert.Len(t, findZone(t, newClient(d), emuzones.DefaultZone), 1)
}

func attach(c *cloudflare.Client, host, zoneID, script string) (*workers.Domain, error) {
	return c.Workers.Domains.Update(context.Background(), workers.DomainUpdateParams{AccountID: cloudflare.F(acct),
		Hostname: cloudflare.F(host), ZoneID: cloudflare.F(zoneID), Service: cloudflare.F(script), Environment: cloudflare.F("production")})
}

func listDomains(t *testing.T, c *cloudflare.Client, params workers.DomainListParams) []workers.Domain {
	t.Helper()
	params.AccountID = cloudflare.F(acct)
	page, err := c.Workers.Domains.List(context.Background(), params)
	require.NoError(t, err)
	return page.Result
}

func TestWorkerCustomDomains(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	mustUpload(t, c, "web", meta())
	mustUpload(t, c, "other", meta())
	zoneID, _ := s.Zones().ZoneID(acct, "example.com")

	d, err := attach(c, "app.example.com", zoneID, "web")
	require.NoError(t, err)
	assert.Equal(t, "app.example.com", d.Hostname)
	assert.Equal(t, "web", d.Service)
	assert.Equal(t, "production", d.Environment)
	assert.Equal(t, zoneID, d.ZoneID)
	assert.Equal(t, "example.com", d.ZoneName)
	assert.NotEmpty(t, d.ID)

	again, err := attach(c, "app.example.com", zoneID, "web")
	require.NoError(t, err)
	assert.Equal(t, d.ID, again.ID, "attaching again is a no-op")

	// A hostname serving another script is refused unless overridden.
	_, err = attach(c, "app.example.com", zoneID, "other")
	apiErr := requireAPIError(t, err, http.StatusConflict, 100116)
	assert.Contains(t, apiErr.Errors[0].Message, "override_existing_origin")
	status, env := api(t, s, http.MethodPut, "accounts/"+acct+"/workers/domains", "application/json", jsonBody(M{
		"hostname": "app.example.com", "zone_id": zoneID, "service": "other", "environment": "production", "override_existing_origin": true}))
	require.Equal(t, http.StatusOK, status, "%v", env.Errors)
	var moved M
	env.into(t, &moved)
	assert.Equal(t, "other", moved["service"])

	// By zone name, too; the hostname must be in the zone, the zone and the script must exist.
	status, env = api(t, s, http.MethodPut, "accounts/"+acct+"/workers/domains", "application/json", jsonBody(M{
		"hostname": "api.example.com", "zone_name": "example.com", "service": "web"}))
	require.Equal(t, http.StatusOK, status, "%v", env.Errors)
	_, err = attach(c, "app.elsewhere.org", zoneID, "web")
	requireAPIError(t, err, http.StatusBadRequest, 100105)
	_, err = attach(c, "x.example.com", strings.Repeat("0", 32), "web")
	requireAPIError(t, err, http.StatusNotFound, 1001)
	_, err = attach(c, "x.example.com", zoneID, "ghost")
	requireAPIError(t, err, http.StatusNotFound, 10007)
	_, err = attach(c, "not a host", zoneID, "web")
	requireAPIError(t, err, http.StatusBadRequest, 100101)

	// The list filters by hostname and service.
	assert.Len(t, listDomains(t, c, workers.DomainListParams{}), 2)
	byHost := listDomains(t, c, workers.DomainListParams{Hostname: cloudflare.F("api.example.com")})
	require.Len(t, byHost, 1)
	assert.Equal(t, "web", byHost[0].Service)
	assert.Len(t, listDomains(t, c, workers.DomainListParams{Service: cloudflare.F("other")}), 1)
	assert.Len(t, listDomains(t, c, workers.DomainListParams{ZoneName: cloudflare.F("example.com")}), 2)
	assert.Empty(t, listDomains(t, c, workers.DomainListParams{Service: cloudflare.F("ghost")}))

	got, err := c.Workers.Domains.Get(context.Background(), byHost[0].ID, workers.DomainGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Equal(t, "api.example.com", got.Hostname)
	require.NoError(t, c.Workers.Domains.Delete(context.Background(), byHost[0].ID, workers.DomainDeleteParams{AccountID: cloudflare.F(acct)}))
	_, err = c.Workers.Domains.Get(context.Background(), byHost[0].ID, workers.DomainGetParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 100114)
	err = c.Workers.Domains.Delete(context.Background(), byHost[0].ID, workers.DomainDeleteParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 100114)

	// Deleting a script takes its custom domains with it.
	assert.Len(t, s.Inventory().Domains, 1)
	_, err = c.Workers.Scripts.Delete(context.Background(), "other", workers.ScriptDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Empty(t, s.Inventory().Domains)
}

func TestWorkerRoutes(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	mustUpload(t, c, "web", meta())
	mustUpload(t, c, "other", meta())
	zoneID, _ := s.Zones().ZoneID(acct, "example.com")
	ctx := context.Background()

	created, err := c.Workers.Routes.New(ctx, workers.RouteNewParams{ZoneID: cloudflare.F(zoneID), Pattern: cloudflare.F("example.com/api/*"), Script: cloudflare.F("web")})
	require.NoError(t, err)
	assert.Equal(t, "example.com/api/*", created.Pattern)
	assert.Equal(t, "web", created.Script)
	_, err = c.Workers.Routes.New(ctx, workers.RouteNewParams{ZoneID: cloudflare.F(zoneID), Pattern: cloudflare.F("*.example.com/*"), Script: cloudflare.F("other")})
	require.NoError(t, err)

	page, err := c.Workers.Routes.List(ctx, workers.RouteListParams{ZoneID: cloudflare.F(zoneID)})
	require.NoError(t, err)
	require.Len(t, page.Result, 2)

	// Duplicates, patterns outside the zone, unknown scripts and zones are refused.
	_, err = c.Workers.Routes.New(ctx, workers.RouteNewParams{ZoneID: cloudflare.F(zoneID), Pattern: cloudflare.F("example.com/api/*"), Script: cloudflare.F("other")})
	requireAPIError(t, err, http.StatusConflict, 10020)
	_, err = c.Workers.Routes.New(ctx, workers.RouteNewParams{ZoneID: cloudflare.F(zoneID), Pattern: cloudflare.F("elsewhere.org/*"), Script: cloudflare.F("web")})
	requireAPIError(t, err, http.StatusBadRequest, 10022)
	_, err = c.Workers.Routes.New(ctx, workers.RouteNewParams{ZoneID: cloudflare.F(zoneID), Pattern: cloudflare.F("https://example.com/*"), Script: cloudflare.F("web")})
	requireAPIError(t, err, http.StatusBadRequest, 10022)
	_, err = c.Workers.Routes.New(ctx, workers.RouteNewParams{ZoneID: cloudflare.F(zoneID), Pattern: cloudflare.F("example.com/x"), Script: cloudflare.F("ghost")})
	requireAPIError(t, err, http.StatusNotFound, 10007)
	_, err = c.Workers.Routes.List(ctx, workers.RouteListParams{ZoneID: cloudflare.F(strings.Repeat("0", 32))})
	requireAPIError(t, err, http.StatusNotFound, 1001)

	updated, err := c.Workers.Routes.Update(ctx, created.ID, workers.RouteUpdateParams{ZoneID: cloudflare.F(zoneID), ID: cloudflare.F(created.ID),
		Pattern: cloudflare.F("example.com/api/*"), Script: cloudflare.F("other")})
	require.NoError(t, err)
	assert.Equal(t, "other", updated.Script)
	got, err := c.Workers.Routes.Get(ctx, created.ID, workers.RouteGetParams{ZoneID: cloudflare.F(zoneID)})
	require.NoError(t, err)
	assert.Equal(t, "other", got.Script)

	del, err := c.Workers.Routes.Delete(ctx, created.ID, workers.RouteDeleteParams{ZoneID: cloudflare.F(zoneID)})
	require.NoError(t, err)
	assert.Equal(t, created.ID, del.ID)
	_, err = c.Workers.Routes.Delete(ctx, created.ID, workers.RouteDeleteParams{ZoneID: cloudflare.F(zoneID)})
	requireAPIError(t, err, http.StatusNotFound, 10005)
	inv := s.Inventory()
	require.Len(t, inv.Routes, 1)
	assert.Equal(t, "*.example.com/*", inv.Routes[0].Pattern)
	assert.False(t, inv.Empty())
}

// Zones, domains and routes survive a restart on the same data directory.
func TestZonesAndRoutingPersist(t *testing.T) {
	dir := t.TempDir()
	s, err := emulator.Start(emulator.Options{DataDir: dir})
	require.NoError(t, err)
	c := newClient(s)
	mustUpload(t, c, "web", meta())
	zoneID, _ := s.Zones().ZoneID(acct, "example.com")
	_, err = attach(c, "app.example.com", zoneID, "web")
	require.NoError(t, err)
	_, err = c.Workers.Routes.New(context.Background(), workers.RouteNewParams{ZoneID: cloudflare.F(zoneID), Pattern: cloudflare.F("example.com/*"), Script: cloudflare.F("web")})
	require.NoError(t, err)
	_, err = s.Zones().AddZone(acct, "kept.example")
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s2 := start(t, emulator.Options{DataDir: dir})
	inv := s2.Inventory()
	assert.Len(t, inv.Domains, 1)
	assert.Len(t, inv.Routes, 1)
	assert.Len(t, findZone(t, newClient(s2), "kept.example"), 1)
}

// The script-scoped routes and domains wrangler deploy uses: each PUT makes
// its list the script's whole set.
func TestScriptScopedRoutesAndDomains(t *testing.T) {
	s := start(t, emulator.Options{Zones: emuzones.Options{Seeded: map[string][]string{acct: {"example.com", "api.example.com"}}}})
	c := newClient(s)
	mustUpload(t, c, "web", meta())
	mustUpload(t, c, "other", meta())
	zoneID, _ := s.Zones().ZoneID(acct, "example.com")
	apiZone, _ := s.Zones().ZoneID(acct, "api.example.com")

	status, env := api(t, s, http.MethodPut, scriptsPath+"web/routes", "application/json", jsonBody([]M{
		{"pattern": "example.com/a/*", "zone_name": "example.com"}, {"pattern": "v1.api.example.com/*"}}))
	require.Equal(t, http.StatusOK, status, "%v", env.Errors)
	inv := s.Inventory()
	require.Len(t, inv.Routes, 2)
	zones := map[string]string{}
	for _, r := range inv.Routes {
		zones[r.Pattern] = r.ZoneID
	}
	assert.Equal(t, map[string]string{"example.com/a/*": zoneID, "v1.api.example.com/*": apiZone}, zones, "the longest zone wins")

	status, _ = api(t, s, http.MethodPut, scriptsPath+"web/routes", "application/json", jsonBody([]M{{"pattern": "example.com/b/*"}}))
	require.Equal(t, http.StatusOK, status)
	status, env = api(t, s, http.MethodGet, scriptsPath+"web/routes", "", nil)
	require.Equal(t, http.StatusOK, status)
	var routes []M
	env.into(t, &routes)
	require.Len(t, routes, 1, "the PUT replaced the script's routes")
	assert.Equal(t, "example.com/b/*", routes[0]["pattern"])
	status, env = api(t, s, http.MethodPut, scriptsPath+"other/routes", "application/json", jsonBody([]M{{"pattern": "example.com/b/*"}}))
	assert.Equal(t, http.StatusConflict, status)
	assert.EqualValues(t, 10020, env.code())
	status, _ = api(t, s, http.MethodPut, scriptsPath+"web/routes", "application/json", jsonBody([]M{{"pattern": "nowhere.org/*"}}))
	assert.Equal(t, http.StatusBadRequest, status)

	records := func(script string, body M) (int, envelopeOf) {
		return api(t, s, http.MethodPut, scriptsPath+script+"/domains/records", "application/json", jsonBody(body))
	}
	status, env = records("web", M{"override_scope": true, "origins": []M{{"hostname": "app.example.com"}, {"hostname": "x.api.example.com"}}})
	require.Equal(t, http.StatusOK, status, "%v", env.Errors)
	var attached []M
	env.into(t, &attached)
	require.Len(t, attached, 2)
	status, env = records("other", M{"override_scope": true, "origins": []M{{"hostname": "app.example.com"}}})
	assert.Equal(t, http.StatusConflict, status)
	assert.EqualValues(t, 100116, env.code())
	status, _ = records("other", M{"override_scope": true, "override_existing_origin": true, "origins": []M{{"hostname": "app.example.com"}}})
	require.Equal(t, http.StatusOK, status)
	status, _ = records("web", M{"override_scope": true, "origins": []M{}})
	require.Equal(t, http.StatusOK, status)
	hosts := map[string]string{}
	for _, d := range s.Inventory().Domains {
		hosts[d.Hostname] = d.Service
	}
	assert.Equal(t, map[string]string{"app.example.com": "other"}, hosts, "override_scope detached web's remaining domain")
}
