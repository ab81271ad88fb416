package cloudflare

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A preview waits briefly for a service target to be planned: a name
// planned before, or while, it waits is found; one never planned is not,
// once the grace is over.
func TestScriptPlanAwait(t *testing.T) {
	plan := newScriptPlan()
	plan.add("oi-before")
	assert.True(t, plan.await(t.Context(), "oi-before", time.Hour), "a name planned before the wait")

	go func() {
		time.Sleep(20 * time.Millisecond)
		plan.add("oi-other", "oi-during")
	}()
	assert.True(t, plan.await(t.Context(), "oi-during", time.Hour), "a name planned during the wait wakes it")

	assert.False(t, plan.await(t.Context(), "oi-never", 30*time.Millisecond), "a name never planned, after the grace")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.False(t, plan.await(ctx, "oi-never", time.Hour), "a cancelled preview stops waiting")
	plan.add("") // an unknown name plans nothing
	assert.False(t, plan.await(t.Context(), "", 0))
}
