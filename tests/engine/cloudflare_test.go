package engine

import (
	"path/filepath"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	uploadRoute  = "PUT /client/v4/accounts/{account_id}/workers/scripts/{script_name}"
	seedRoute    = "PUT /__workers/{script_name}/secrets"
	anthropicKey = "sk-ant-engine-test-0123456789abcdef"
)

// TestYAMLCloudflareStack runs testdata/resources-yaml, the resources one by one: D1 with
// migrations, KV, R2, a queue with its consumer and two workers that bind
// each other, in ONE `pulumi up`; then a preview that changes nothing and
// calls Cloudflare zero times; then one changed var that re-uploads exactly
// one worker; then destroy to empty.
func TestYAMLCloudflareStack(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	pt := newYAMLTest(t, filepath.Join(repoRoot(), "tests", "engine", "testdata", "resources-yaml"), emu)
	pt.SetConfig(t, "checkout", filepath.Join(repoRoot(), "tests", "fixtures", "upstream"))
	require.NoError(t, pt.CurrentStack().SetConfig(t.Context(), "anthropicApiKey",
		auto.ConfigValue{Value: anthropicKey, Secret: true}))

	up := previewUp(t, pt)
	// The third migration makes the table the fixture control plane keeps
	// the seeded secrets in.
	assert.Equal(t, 3.0, up.Outputs["appliedMigrations"].Value)
	assert.Equal(t, "0003", up.Outputs["latestMigration"].Value)
	assert.Equal(t, emu.workerURL("open-inspect-control-plane-engine"), up.Outputs["controlPlaneUrl"].Value)
	inv := emu.inventory(t)
	require.Len(t, inv.Workers, 2)
	for _, w := range inv.Workers {
		if w.Name == "open-inspect-control-plane-engine" {
			assert.Equal(t, []string{"SessionDO"}, w.Classes)
			assert.Equal(t, "v1", w.MigrationTag)
			assert.ElementsMatch(t, []string{"* * * * *", "7,37 * * * *", "23 * * * *"}, w.Crons)
			assert.True(t, w.WorkersDev)
			assert.Equal(t, 1, w.AppSecrets, "ANTHROPIC_API_KEY seeded through the signed API")
		}
	}
	require.Len(t, inv.Queues, 2)
	consumers := map[string][]string{}
	for _, q := range inv.Queues {
		consumers[q.Name] = q.Consumers
	}
	assert.Equal(t, []string{"open-inspect-slack-bot-engine"}, consumers["open-inspect-slack-completion-engine"])
	requireNoPlaintext(t, pt.CurrentStack(), anthropicKey)

	requireSteadyState(t, pt, emu)

	pt.SetConfig(t, "allowedUsers", "octocat")
	changed := previewUp(t, pt, func() { emu.resetCounts(t) })
	calls, counts := emu.cloudflareCalls(t)
	assert.Equal(t, 1, counts[uploadRoute], "a var of the control plane alone re-uploads exactly that worker: %v", counts)
	assert.Equal(t, 1, calls, "and makes no other call: %v", counts)
	assert.NotEqual(t, up.Outputs["controlPlaneHash"].Value, changed.Outputs["controlPlaneHash"].Value)
	assert.Equal(t, up.Outputs["slackBotHash"].Value, changed.Outputs["slackBotHash"].Value)

	pt.SetConfig(t, "appName", "Open Inspect Engine")
	previewUp(t, pt, func() { emu.resetCounts(t) })
	_, counts = emu.cloudflareCalls(t)
	assert.Equal(t, 2, counts[uploadRoute], "appName is a var of both workers: each re-uploads once: %v", counts)

	require.NoError(t, pt.CurrentStack().SetConfig(t.Context(), "anthropicApiKey",
		auto.ConfigValue{Value: anthropicKey + "-rotated", Secret: true}))
	previewUp(t, pt, func() { emu.resetCounts(t) })
	_, counts = emu.cloudflareCalls(t)
	assert.Equal(t, 1, counts[seedRoute], "a rotated platform secret is re-seeded once: %v", counts)
	assert.Zero(t, counts[uploadRoute], "and no worker is re-uploaded: %v", counts)
	requireNoPlaintext(t, pt.CurrentStack(), anthropicKey+"-rotated")

	pt.Destroy(t)
	emu.requireEmpty(t)
}
