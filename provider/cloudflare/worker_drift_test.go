package cloudflare_test

import (
	"maps"
	"slices"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// TestWorkerRefreshSeesTriggerDrift changes a worker's cron triggers, its
// workers.dev switch and its queue consumer's settings outside Pulumi, each
// through the API as a dashboard or wrangler would: refresh reads each one
// back into the state, the diff names each field, and the next up restores
// what the program says.
func TestWorkerRefreshSeesTriggerDrift(t *testing.T) {
	h := providertest.NewHarness(t)
	client, tg := newTargets(t, h)
	ctx := t.Context()
	const name = "oi-trigger-drift"
	u := providertest.URN(cloudflare.WorkerToken, "w")
	inputs := providertest.Props(t, map[string]any{"name": name, "content": providertest.FixtureWorker,
		"crons": []any{"0 * * * *"}, "workersDev": true,
		"queueConsumers": providertest.List(map[string]any{"queueId": tg.queueID, "maxBatchSize": 5.0, "maxRetries": 2.0})})
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)

	require.NoError(t, client.SetSchedules(ctx, name, []string{"*/5 * * * *"}))
	require.NoError(t, client.SetWorkersDev(ctx, name, false))
	consumers, err := client.ListConsumers(ctx, tg.queueID)
	require.NoError(t, err)
	require.Len(t, consumers, 1)
	moved := consumers[0]
	batch := 9
	moved.Settings.BatchSize = &batch
	_, err = client.PutConsumer(ctx, tg.queueID, moved)
	require.NoError(t, err)

	read, err := h.Server.Read(p.ReadRequest{ID: name, Urn: u, Properties: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	state := read.Properties
	var crons []string
	for _, c := range state.Get("crons").AsArray().AsSlice() {
		crons = append(crons, c.AsString())
	}
	assert.Equal(t, []string{"*/5 * * * *"}, crons, "refresh reads the crons")
	assert.False(t, state.Get("workersDev").AsBool(), "refresh reads the workers.dev switch")
	consumer := state.Get("queueConsumers").AsArray().Get(0).AsMap()
	assert.Equal(t, 9.0, consumer.Get("maxBatchSize").AsNumber(), "refresh reads the consumer's batch size")
	assert.Equal(t, 2.0, consumer.Get("maxRetries").AsNumber(), "what did not move reads as it was")

	diff, err := h.Server.Diff(p.DiffRequest{ID: name, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	require.True(t, diff.HasChanges)
	assert.ElementsMatch(t, []string{"crons[0]", "workersDev", "queueConsumers[0]"}, slices.Collect(maps.Keys(diff.DetailedDiff)),
		"the diff names each moved setting, and nothing else")

	_, err = h.Server.Update(p.UpdateRequest{ID: name, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	crons, err = client.GetSchedules(ctx, name)
	require.NoError(t, err)
	assert.Equal(t, []string{"0 * * * *"}, crons, "the up restores the crons")
	dev, err := client.GetWorkersDev(ctx, name)
	require.NoError(t, err)
	assert.True(t, dev, "the up restores workers.dev")
	consumers, err = client.ListConsumers(ctx, tg.queueID)
	require.NoError(t, err)
	require.Len(t, consumers, 1)
	assert.Equal(t, cfapi.ConsumerSettings{BatchSize: new(5), MaxRetries: new(2)}, onlyStated(consumers[0].Settings),
		"the up restores the consumer")
}

// onlyStated keeps the two settings the test states.
func onlyStated(s cfapi.ConsumerSettings) cfapi.ConsumerSettings {
	return cfapi.ConsumerSettings{BatchSize: s.BatchSize, MaxRetries: s.MaxRetries}
}
