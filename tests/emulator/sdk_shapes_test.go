package emulator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/r2"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// getResult is GET path's result, decoded as plain JSON.
func getResult(t *testing.T, s *emulator.Server, path string) any {
	t.Helper()
	resp, body := do(t, http.MethodGet, s.CloudflareBaseURL()+path, "Bearer "+emulator.DefaultToken, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var env struct {
		Result any `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &env), body)
	return env.Result
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// The fields the official SDKs' types declare, with their declared JSON
// types, where the emulator once left them out or gave another type.
func TestAnswersHaveTheShapeTheSDKsDeclare(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	zoneID, _ := s.Zones().ZoneID(acct, "example.com")

	// D1 bindings: database_id (required by the types) beside the
	// deprecated id, whichever the upload used.
	db := createDB(t, c, "shapes-db")
	mustUpload(t, c, "web", meta(M{"type": "d1", "name": "DB", "database_id": db.UUID}, M{"type": "d1", "name": "OLD", "id": db.UUID}))
	settings := getResult(t, s, "accounts/"+acct+"/workers/scripts/web/settings").(map[string]any)
	want := []any{
		map[string]any{"type": "d1", "name": "DB", "id": db.UUID, "database_id": db.UUID},
		map[string]any{"type": "d1", "name": "OLD", "id": db.UUID, "database_id": db.UUID},
	}
	assert.Equal(t, want, settings["bindings"])
	versions := getResult(t, s, "accounts/"+acct+"/workers/scripts/web/versions").(map[string]any)["items"].([]any)
	require.Len(t, versions, 1)
	version := getResult(t, s, "accounts/"+acct+"/workers/scripts/web/versions/"+versions[0].(map[string]any)["id"].(string)).(map[string]any)
	assert.Equal(t, want, version["resources"].(map[string]any)["bindings"])
	_, err := upload(t, c, "web", meta(M{"type": "d1", "name": "DB", "database_id": db.UUID, "id": "another"}))
	requireAPIError(t, err, http.StatusBadRequest, 10021)

	// Custom domains: cert_id, a UUID, stable.
	_, err = attach(c, "app.example.com", zoneID, "web")
	require.NoError(t, err)
	domains := getResult(t, s, "accounts/"+acct+"/workers/domains").([]any)
	require.Len(t, domains, 1)
	d := domains[0].(map[string]any)
	assert.Regexp(t, uuidRE, d["cert_id"])
	got := getResult(t, s, "accounts/"+acct+"/workers/domains/"+d["id"].(string)).(map[string]any)
	assert.Equal(t, d["cert_id"], got["cert_id"])

	// The script list: a script's zone routes.
	route, err := c.Workers.Routes.New(ctx, workers.RouteNewParams{ZoneID: cloudflare.F(zoneID), Pattern: cloudflare.F("example.com/api/*"), Script: cloudflare.F("web")})
	require.NoError(t, err)
	mustUpload(t, c, "plain", meta())
	scripts := map[string]map[string]any{}
	for _, sc := range getResult(t, s, "accounts/"+acct+"/workers/scripts").([]any) {
		scripts[sc.(map[string]any)["id"].(string)] = sc.(map[string]any)
	}
	assert.Equal(t, []any{map[string]any{"id": route.ID, "pattern": "example.com/api/*", "script": "web"}}, scripts["web"]["routes"])
	assert.Nil(t, scripts["plain"]["routes"])

	// R2: the location lower-case, as declared ('enam' | 'weur' | …).
	_, err = c.R2.Buckets.New(ctx, r2.BucketNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("shapes"), LocationHint: cloudflare.F(r2.BucketNewParamsLocationHintWnam)})
	require.NoError(t, err)
	bucket := getResult(t, s, "accounts/"+acct+"/r2/buckets/shapes").(map[string]any)
	assert.Equal(t, "wnam", bucket["location"])

	// Queue consumers: max_concurrency a number, or absent when unset
	// (never null).
	q := createQueue(t, c, "shapes-q")
	_, err = c.Queues.Consumers.New(ctx, q.QueueID, consumerParams("web", "", M{"batch_size": 5}))
	require.NoError(t, err)
	consumers := listConsumers(t, c, q.QueueID)
	require.Len(t, consumers, 1)
	assert.NotContains(t, consumers[0]["settings"], "max_concurrency")
	_, err = c.Queues.Consumers.Update(ctx, q.QueueID, consumers[0]["consumer_id"].(string), consumerUpdate("web", "", M{"max_concurrency": 3}))
	require.NoError(t, err)
	assert.Equal(t, 3.0, listConsumers(t, c, q.QueueID)[0]["settings"].(M)["max_concurrency"])

	// Zones: the owner's id and name, strings.
	zone := getResult(t, s, "zones/"+zoneID).(map[string]any)
	owner := zone["owner"].(map[string]any)
	assert.Equal(t, acct, owner["id"])
	assert.IsType(t, "", owner["name"])
	assert.NotEmpty(t, owner["name"])
	assert.Equal(t, zone["account"].(map[string]any)["name"], owner["name"])
}
