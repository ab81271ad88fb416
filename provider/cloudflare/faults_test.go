package cloudflare_test

import (
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// Rate limiting is absorbed by the client's retries, honouring Retry-After.
func TestCreateRidesOutRateLimiting(t *testing.T) {
	h := providertest.NewHarness(t)
	h.Emu.InjectFault(emulator.Fault{Method: "POST", Route: "/client/v4/accounts/{account_id}/d1/database",
		Kind: emulator.FaultRateLimit, RetryAfter: 50 * time.Millisecond, Times: 2})
	created, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.D1DatabaseToken, "db"), Properties: providertest.Props(t, map[string]any{"name": "oi-limited"})})
	require.NoError(t, err)
	assert.NotEmpty(t, created.ID)
	assert.Equal(t, 3, h.Emu.Counts()["POST /client/v4/accounts/{account_id}/d1/database"])
}

// A worker whose cron call fails after the upload keeps what succeeded in
// state, so the next up finishes the job without a second upload.
func TestWorkerPartialFailureIsFinishedByTheNextUpdate(t *testing.T) {
	h := providertest.NewHarness(t)
	const schedules = "/client/v4/accounts/{account_id}/workers/scripts/{script_name}/schedules"
	h.Emu.InjectFault(emulator.Fault{Method: "PUT", Route: schedules, Kind: emulator.FaultServerError, Status: 503})
	u := providertest.URN(cloudflare.WorkerToken, "w")
	inputs := providertest.Props(t, map[string]any{"name": "oi-partial", "content": providertest.FixtureWorker, "crons": []any{"* * * * *"}})
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cron triggers")
	require.Equal(t, "oi-partial", created.ID, "the created script is kept in state")
	assert.Empty(t, providertest.Strings(created.Properties.Get("crons")), "the crons that failed are not recorded as applied")

	h.Emu.ClearFaults()
	h.Emu.ResetCounts()
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.Contains(t, diff.DetailedDiff, "crons[0]")
	_, err = h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.Zero(t, h.Emu.Counts()[uploadKey], "the script itself was already uploaded")
	assert.Equal(t, 1, h.Emu.Counts()["PUT "+schedules])
	w, _ := h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-partial")
	assert.Equal(t, []string{"* * * * *"}, w.Crons)
}
