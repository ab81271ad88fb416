package provider

import (
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// Rate limiting is absorbed by the client's retries, honouring Retry-After.
func TestCreateRidesOutRateLimiting(t *testing.T) {
	h := newHarness(t)
	h.emu.InjectFault(emulator.Fault{Method: "POST", Route: "/client/v4/accounts/{account_id}/d1/database",
		Kind: emulator.FaultRateLimit, RetryAfter: 50 * time.Millisecond, Times: 2})
	created, err := h.server.Create(p.CreateRequest{Urn: urn(d1DatabaseToken, "db"), Properties: props(t, map[string]any{"name": "oi-limited"})})
	require.NoError(t, err)
	assert.NotEmpty(t, created.ID)
	assert.Equal(t, 3, h.emu.Counts()["POST /client/v4/accounts/{account_id}/d1/database"])
}

// A worker whose cron call fails after the upload keeps what succeeded in
// state, so the next up finishes the job without a second upload.
func TestWorkerPartialFailureIsFinishedByTheNextUpdate(t *testing.T) {
	h := newHarness(t)
	const schedules = "/client/v4/accounts/{account_id}/workers/scripts/{script_name}/schedules"
	h.emu.InjectFault(emulator.Fault{Method: "PUT", Route: schedules, Kind: emulator.FaultServerError, Status: 503})
	u := urn(workerToken, "w")
	inputs := props(t, map[string]any{"name": "oi-partial", "content": fixtureWorker, "crons": []any{"* * * * *"}})
	created, err := h.server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cron triggers")
	require.Equal(t, "oi-partial", created.ID, "the created script is kept in state")
	assert.Empty(t, strs(created.Properties.Get("crons")), "the crons that failed are not recorded as applied")

	h.emu.ClearFaults()
	h.emu.ResetCounts()
	diff, err := h.server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.Contains(t, diff.DetailedDiff, "crons")
	_, err = h.server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.Zero(t, h.emu.Counts()[uploadKey], "the script itself was already uploaded")
	assert.Equal(t, 1, h.emu.Counts()["PUT "+schedules])
	w, _ := h.emu.Worker(emulator.DefaultAccountID, "oi-partial")
	assert.Equal(t, []string{"* * * * *"}, w.Crons)
}
