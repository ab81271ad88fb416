package emulator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/d1"
	"github.com/cloudflare/cloudflare-go/v4/r2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

func TestAdminAPI(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	admin := s.URL() + "/__emulator/"

	resp, body := do(t, http.MethodGet, admin+"healthz", "", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok", body)

	createDB(t, c, "via-sdk")
	resp, body = do(t, http.MethodGet, admin+"requests", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var requests struct {
		Counts          map[string]int `json:"counts"`
		CloudflareCalls int            `json:"cloudflare_calls"`
		CloudflareBytes int64          `json:"cloudflare_bytes"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &requests))
	assert.Equal(t, map[string]int{d1Create: 1}, requests.Counts)
	assert.Equal(t, 1, requests.CloudflareCalls)
	assert.Positive(t, requests.CloudflareBytes, "the create's answer was counted")
	assert.Equal(t, s.CloudflareBytes(), requests.CloudflareBytes)

	resp, _ = do(t, http.MethodDelete, admin+"requests", "", "")
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Zero(t, s.CloudflareCalls())

	resp, body = do(t, http.MethodPost, admin+"faults", "",
		`{"method":"GET","route":"/client/v4/accounts/{account_id}/d1/database","kind":"server_error","status":502,"times":1}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, body)
	resp, body = do(t, http.MethodGet, admin+"faults", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"faults":[{"method":"GET","route":"/client/v4/accounts/{account_id}/d1/database","kind":"server_error","status":502,"times":1,"remaining":1}],"holds":{"held":0,"released":0,"abandoned":0}}`, body)
	_, err := c.D1.Database.List(context.Background(), d1.DatabaseListParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusBadGateway, 10001)
	_, err = c.D1.Database.List(context.Background(), d1.DatabaseListParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err, "times: 1 is used up")

	resp, body = do(t, http.MethodPost, admin+"faults", "", `{"kind":"latency","latency":"soon"}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	resp, body = do(t, http.MethodPost, admin+"faults", "", `{"kind":"latency","latency":"20ms"}`)
	assert.Equal(t, http.StatusCreated, resp.StatusCode, body)
	resp, _ = do(t, http.MethodDelete, admin+"faults", "", "")
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	_, body = do(t, http.MethodGet, admin+"faults", "", "")
	assert.JSONEq(t, `{"faults":[],"holds":{"held":0,"released":0,"abandoned":0}}`, body)

	_, err = c.R2.Buckets.New(context.Background(), r2.BucketNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("bucket")})
	require.NoError(t, err)
	resp, _ = do(t, http.MethodPut, admin+"r2/"+acct+"/bucket/dir/obj.txt", "", "data")
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, _ = do(t, http.MethodPut, admin+"r2/"+acct+"/no-such-bucket/obj", "", "data")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	resp, body = do(t, http.MethodGet, admin+"inventory", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var inv emulator.Inventory
	require.NoError(t, json.Unmarshal([]byte(body), &inv))
	assert.Equal(t, s.Inventory(), inv)
	require.Len(t, inv.D1, 1)
	assert.Equal(t, "via-sdk", inv.D1[0].Name)
	assert.Equal(t, acct, inv.D1[0].AccountID)
	require.Len(t, inv.R2, 1)
	assert.Equal(t, 1, inv.R2[0].Objects)

	resp, _ = do(t, http.MethodGet, admin+"nope", "", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, 3, s.CloudflareCalls(), "admin calls are never counted")
	assert.NotContains(t, s.Counts(), "UNMATCHED")
}
