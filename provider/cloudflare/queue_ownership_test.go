package cloudflare_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapitest"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

const registryName = "openinspect-registry"

// registryRecords is every record of the account's ownership registry as
// "kind/name=owner", sorted; nil when the account has no registry.
func registryRecords(t *testing.T, h *providertest.Harness) []string {
	t.Helper()
	var id string
	for _, db := range h.Emu.Inventory().D1 {
		if db.Name == registryName {
			require.Empty(t, id, "one registry per account")
			id = db.ID
		}
	}
	if id == "" {
		return nil
	}
	res, err := cfapitest.Client(t, h).Query(t.Context(), id, "SELECT kind, name, owner FROM objects ORDER BY kind, name, owner")
	require.NoError(t, err)
	out := []string{}
	for _, r := range res {
		for _, row := range r.Rows {
			out = append(out, fmt.Sprintf("%s/%s=%s", row["kind"], row["name"], row["owner"]))
		}
	}
	return out
}

func queueCreate(t *testing.T, server integration.Server, props map[string]any) (p.CreateResponse, error) {
	t.Helper()
	if _, ok := props["name"]; !ok {
		props["name"] = "oi-owned-queue"
	}
	return server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.QueueToken, "q"), Properties: providertest.Props(t, props)})
}

func TestQueueOwnershipRegistry(t *testing.T) {
	h := providertest.NewHarness(t)
	create := func(props map[string]any) (p.CreateResponse, error) { return queueCreate(t, h.Server, props) }

	created, err := create(map[string]any{"owner": ownerA})
	require.NoError(t, err)
	assert.False(t, created.Properties.Get("adopted").AsBool())
	assert.Equal(t, []string{"queue/oi-owned-queue=" + ownerA}, registryRecords(t, h),
		"the first installation creates the registry and records its queue")

	// A create the engine never recorded (a killed run) is finished by the
	// next one, without adoptExisting: the registry records this installation.
	again, err := create(map[string]any{"owner": ownerA})
	require.NoError(t, err)
	assert.Equal(t, created.ID, again.ID)
	assert.True(t, again.Properties.Get("adopted").AsBool())

	// Another installation is refused, naming the owner, even with adoptExisting.
	for _, adopt := range []bool{false, true} {
		_, err = create(map[string]any{"owner": ownerB, "adoptExisting": adopt})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `queue "oi-owned-queue" already exists`)
		assert.Contains(t, err.Error(), "belongs to installation "+ownerA+", not this one ("+ownerB+")")
		assert.Contains(t, err.Error(), "takeOverFrom: "+ownerA)
	}
	// So is a queue declared on its own, without an owner.
	_, err = create(map[string]any{"adoptExisting": true})
	require.ErrorContains(t, err, "belongs to installation "+ownerA+", not this one (no installation identity)")
	assert.Equal(t, []string{"queue/oi-owned-queue=" + ownerA}, registryRecords(t, h), "a refusal changes nothing")

	// takeOverFrom names the live owner: taken over and recorded anew.
	taken, err := create(map[string]any{"owner": ownerB, "takeOverFrom": ownerA})
	require.NoError(t, err)
	assert.Equal(t, created.ID, taken.ID)
	assert.Equal(t, []string{"queue/oi-owned-queue=" + ownerB}, registryRecords(t, h))

	// The installation taken from no longer owns it: its destroy leaves it.
	u := providertest.URN(cloudflare.QueueToken, "q")
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}))
	require.Len(t, h.Emu.Inventory().Queues, 1, "A's destroy leaves B's queue")
	assert.Equal(t, []string{"queue/oi-owned-queue=" + ownerB}, registryRecords(t, h))

	// The owner's delete removes the queue, then its record; the registry stays.
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: taken.ID, Urn: u, Properties: taken.Properties}))
	inv := h.Emu.Inventory()
	assert.Empty(t, inv.Queues)
	require.Len(t, inv.D1, 1, "the registry is never deleted")
	assert.Equal(t, registryName, inv.D1[0].Name)
	assert.Equal(t, []string{}, registryRecords(t, h), "the record goes with the queue")
}

// A crash between the record and the create (here: the create fails after
// the record was written) leaves the name this installation's: the next
// create goes on without adoptExisting, another installation is refused.
func TestQueueRecordedBeforeCreate(t *testing.T) {
	h := providertest.NewHarness(t)
	h.Emu.InjectFault(emulator.Fault{Route: "POST /client/v4/accounts/{account_id}/queues", Kind: emulator.FaultServerError, Status: 500})
	_, err := queueCreate(t, h.Server, map[string]any{"owner": ownerA})
	require.Error(t, err)
	assert.Empty(t, h.Emu.Inventory().Queues)
	assert.Equal(t, []string{"queue/oi-owned-queue=" + ownerA}, registryRecords(t, h), "recorded before the create")
	h.Emu.ClearFaults()

	for _, adopt := range []bool{false, true} {
		_, err = queueCreate(t, h.Server, map[string]any{"owner": ownerB, "adoptExisting": adopt})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `queue "oi-owned-queue" does not exist in account `+emulator.DefaultAccountID+
			` yet, but the account's ownership registry (D1 database "openinspect-registry") records that it belongs to installation `+
			ownerA+", not this one ("+ownerB+")")
		assert.Contains(t, err.Error(), "takeOverFrom: "+ownerA)
	}
	assert.Empty(t, h.Emu.Inventory().Queues, "the refusal created nothing")

	created, err := queueCreate(t, h.Server, map[string]any{"owner": ownerA})
	require.NoError(t, err, "the recorded installation goes on")
	assert.False(t, created.Properties.Get("adopted").AsBool())
	require.Len(t, h.Emu.Inventory().Queues, 1)
	assert.Equal(t, []string{"queue/oi-owned-queue=" + ownerA}, registryRecords(t, h))
}

func TestQueueWithoutRecord(t *testing.T) {
	h := providertest.NewHarness(t)
	client := cfapitest.Client(t, h)

	// A queue nobody recorded (made outside Pulumi, or by a release before
	// the registry): needs adoptExisting, and the hint says where.
	q, err := client.CreateQueue(t.Context(), "oi-owned-queue")
	require.NoError(t, err)
	_, err = queueCreate(t, h.Server, map[string]any{"owner": ownerA})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "records no installation")
	assert.Contains(t, err.Error(), "set adoptExisting: true on the OpenInspect component")
	assert.Nil(t, registryRecords(t, h), "a refusal creates no registry")

	adopted, err := queueCreate(t, h.Server, map[string]any{"owner": ownerA, "adoptExisting": true})
	require.NoError(t, err)
	assert.Equal(t, q.ID, adopted.ID)
	assert.True(t, adopted.Properties.Get("adopted").AsBool())
	assert.Equal(t, []string{"queue/oi-owned-queue=" + ownerA}, registryRecords(t, h), "an adopted queue is recorded")

	_, err = queueCreate(t, h.Server, map[string]any{"owner": ownerB, "adoptExisting": true})
	require.ErrorContains(t, err, "belongs to installation "+ownerA)
}

// A queue in a state written before queues were recorded gets its owner
// through Update; a name another installation holds is refused there.
func TestQueueUpdateRecordsOwner(t *testing.T) {
	h := providertest.NewHarness(t)
	u := providertest.URN(cloudflare.QueueToken, "q")
	old, err := queueCreate(t, h.Server, map[string]any{"name": "oi-old-queue"})
	require.NoError(t, err)
	assert.Nil(t, registryRecords(t, h), "a queue without an owner is not recorded")

	updated, err := h.Server.Update(p.UpdateRequest{ID: old.ID, Urn: u, State: old.Properties,
		Inputs: providertest.Props(t, map[string]any{"name": "oi-old-queue", "owner": ownerA})})
	require.NoError(t, err)
	assert.Equal(t, ownerA, updated.Properties.Get("owner").AsString())
	assert.Equal(t, []string{"queue/oi-old-queue=" + ownerA}, registryRecords(t, h))

	_, err = h.Server.Update(p.UpdateRequest{ID: old.ID, Urn: u, State: old.Properties,
		Inputs: providertest.Props(t, map[string]any{"name": "oi-old-queue", "owner": ownerB})})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `queue "oi-old-queue" (id `+old.ID+`) in account `+emulator.DefaultAccountID+` is in this stack's state, `+
		`but the account's ownership registry records that it belongs to installation `+ownerA+", not this one ("+ownerB+")")
	assert.Equal(t, []string{"queue/oi-old-queue=" + ownerA}, registryRecords(t, h))
}

// Two installations in one account at once: the registry is created once
// however many creators race for it, and of two installations creating the
// same queue exactly one wins.
func TestQueueRegistryConcurrency(t *testing.T) {
	h := providertest.NewHarness(t)
	other := h.AnotherServer(t, nil)

	// Four queues of A and four of B, all at once, with no registry yet.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 4 {
		for owner, server := range map[string]integration.Server{ownerA: h.Server, ownerB: other} {
			wg.Go(func() {
				_, err := queueCreate(t, server, map[string]any{"name": fmt.Sprintf("oi-%s-%d", owner[:6], i), "owner": owner})
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Len(t, registryRecords(t, h), 8, "every queue recorded, in the one registry")
	assert.Len(t, h.Emu.Inventory().Queues, 8)

	// The same name from both at once: exactly one creates it.
	results := make(chan error, 2)
	for owner, server := range map[string]integration.Server{ownerA: h.Server, ownerB: other} {
		wg.Go(func() {
			_, err := queueCreate(t, server, map[string]any{"name": "oi-contested", "owner": owner})
			results <- err
		})
	}
	wg.Wait()
	close(results)
	var failures []error
	for err := range results {
		if err != nil {
			failures = append(failures, err)
		}
	}
	require.Len(t, failures, 1, "exactly one installation wins the name")
	assert.Contains(t, failures[0].Error(), "belongs to installation")
	var contested []cfapi.Queue
	for _, q := range h.Emu.Inventory().Queues {
		if q.Name == "oi-contested" {
			contested = append(contested, cfapi.Queue{ID: q.ID, Name: q.Name})
		}
	}
	assert.Len(t, contested, 1)
}

func TestD1DatabaseRefusesTheRegistryName(t *testing.T) {
	h := providertest.NewHarness(t)
	check, err := h.Server.Check(p.CheckRequest{Urn: providertest.URN(cloudflare.D1DatabaseToken, "db"),
		Inputs: providertest.Props(t, map[string]any{"name": registryName, "adoptExisting": true})})
	require.NoError(t, err)
	require.Len(t, check.Failures, 1)
	assert.Equal(t, "name", family.FailureField(check.Failures[0]))
	assert.Contains(t, check.Failures[0].Reason, "reserved for the account's ownership registry")
	assert.Zero(t, h.Emu.CloudflareCalls())
}

const queueListKey = "GET /client/v4/accounts/{account_id}/queues"

// Once the account has its registry, a new queue's create lists no queues
// and costs the same calls and bytes whether the account holds 0 or 250
// other queues (other installations'): the name is recorded, then created.
func TestQueueCreateCostDoesNotGrowWithTheAccount(t *testing.T) {
	h := providertest.NewHarness(t)
	client := cfapitest.Client(t, h)
	_, err := queueCreate(t, h.Server, map[string]any{"name": "oi-first", "owner": ownerA})
	require.NoError(t, err, "the first create makes the account's registry")

	calls, bytes := map[int]int{}, map[int]int64{}
	for _, others := range []int{0, 250} {
		for i := len(h.Emu.Inventory().Queues) - 1; i < others; i++ {
			_, err := client.CreateQueue(t.Context(), fmt.Sprintf("other-installation-%03d", i))
			require.NoError(t, err)
		}
		h.Emu.ResetCounts()
		created, err := queueCreate(t, h.Server, map[string]any{"name": fmt.Sprintf("oi-cost-%03d", others), "owner": ownerA})
		require.NoError(t, err)
		assert.False(t, created.Properties.Get("adopted").AsBool())
		assert.Zero(t, h.Emu.Counts()[queueListKey], "with %d other queues the create lists the account", others)
		calls[others], bytes[others] = h.Emu.CloudflareCalls(), h.Emu.CloudflareBytes()
	}
	assert.Equal(t, calls[0], calls[250], "calls of a create with 0 and 250 other queues")
	// Within a few bytes, not equal: the answers' timestamps vary in length
	// (fractional seconds); a listing of 250 queues would add tens of KB.
	assert.InDelta(t, bytes[0], bytes[250], 64, "bytes of a create with 0 and 250 other queues")
	assert.Contains(t, registryRecords(t, h), "queue/oi-cost-250="+ownerA)
}

// With the registry in place, an unrecorded queue in the way is found once
// the create fails: refused without adoptExisting (withdrawing this run's
// record of the name), adopted and recorded with it.
func TestQueueWithoutRecordInAnAccountWithARegistry(t *testing.T) {
	h := providertest.NewHarness(t)
	client := cfapitest.Client(t, h)
	_, err := queueCreate(t, h.Server, map[string]any{"name": "oi-first", "owner": ownerA})
	require.NoError(t, err)
	q, err := client.CreateQueue(t.Context(), "oi-owned-queue")
	require.NoError(t, err)

	_, err = queueCreate(t, h.Server, map[string]any{"owner": ownerB})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `queue "oi-owned-queue" already exists`)
	assert.Contains(t, err.Error(), "records no installation")
	assert.Contains(t, err.Error(), "set adoptExisting: true on the OpenInspect component")
	assert.Equal(t, []string{"queue/oi-first=" + ownerA}, registryRecords(t, h), "the refusal leaves no record of the name")

	adopted, err := queueCreate(t, h.Server, map[string]any{"owner": ownerB, "adoptExisting": true})
	require.NoError(t, err)
	assert.Equal(t, q.ID, adopted.ID)
	assert.True(t, adopted.Properties.Get("adopted").AsBool())
	assert.Equal(t, []string{"queue/oi-first=" + ownerA, "queue/oi-owned-queue=" + ownerB}, registryRecords(t, h))
}
