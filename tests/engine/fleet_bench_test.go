package engine

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optrefresh"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/stretchr/testify/require"
)

// Cloudflare's global rate limit per token (the emulator's figures,
// core.CloudflareRateLimitRequests per five minutes).
const tokenRequestsPer5Min = 1200

// BenchmarkFleet runs 1, 10 and 50 full installations (examples/yaml, the
// fixture checkout, sandbox unmanaged so the fleet measures Cloudflare) in
// one emulator account, one stack each, OI_FLEET_PARALLEL (default 4) at a
// time as an operator's workspaces would, and prints per installation the
// Cloudflare calls and response bytes of `up`, a no-op `preview` and
// `refresh`, each phase's wall time, and how many installations one token
// can refresh every 5 minutes within Cloudflare's 1200-call limit. The
// refreshes run with the emulator enforcing that limit, so "429s" shows
// whether the fleet stayed inside it. Numbers only, no assertion on them:
// `make bench` runs it (OI_FLEET_SIZES overrides the sizes, e.g. "1,10").
func BenchmarkFleet(b *testing.B) {
	requirePulumi(benchTB{b})
	sizes := []int{1, 10, 50}
	if v := os.Getenv("OI_FLEET_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			require.NoError(b, err, "OI_FLEET_SIZES")
			sizes = append(sizes, n)
		}
	}
	parallel := 4
	if v := os.Getenv("OI_FLEET_PARALLEL"); v != "" {
		var err error
		parallel, err = strconv.Atoi(v)
		require.NoError(b, err, "OI_FLEET_PARALLEL")
	}
	var rows []fleetRow
	for b.Loop() {
		rows = rows[:0]
		for _, n := range sizes {
			rows = append(rows, runFleet(benchTB{b}, n, parallel))
		}
	}
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "installations\tup calls/inst\tup KiB/inst\tup wall\tpreview calls/inst\trefresh calls/inst\trefresh KiB/inst\trefresh wall\t429s\tinstallations per token per 5 min\t\n")
	for _, r := range rows {
		fmt.Fprintf(w, "%d\t%.1f\t%.1f\t%s\t%.1f\t%.1f\t%.1f\t%s\t%d\t%d\t\n", r.n, r.up.callsPer(r.n), r.up.kibPer(r.n),
			r.up.wall.Round(100*time.Millisecond), r.preview.callsPer(r.n), r.refresh.callsPer(r.n), r.refresh.kibPer(r.n),
			r.refresh.wall.Round(100*time.Millisecond), r.refused, int(tokenRequestsPer5Min/r.refresh.callsPer(r.n)))
	}
	require.NoError(b, w.Flush())
	fmt.Printf("(%d stacks at a time; one emulator account; walls are whole phases on this machine)\n", parallel)
}

type fleetPhase struct {
	calls int
	bytes int64
	wall  time.Duration
}

func (p fleetPhase) callsPer(n int) float64 { return float64(p.calls) / float64(n) }
func (p fleetPhase) kibPer(n int) float64   { return float64(p.bytes) / 1024 / float64(n) }

type fleetRow struct {
	n                    int
	up, preview, refresh fleetPhase
	refused              int
}

// runFleet deploys n installations, previews and refreshes them, destroys
// them, and returns the measured phases.
func runFleet(t benchTB, n, parallel int) fleetRow {
	emu := startEmulator(t)
	stacks := make([]*pulumitest.PulumiTest, n)
	for i := range stacks {
		pt := newInstallationTest(t, emu)
		pt.SetConfig(t, "deploymentName", fmt.Sprintf("f%d", i))
		editProgram(t, pt, withSandbox(unmanagedSandbox))
		stacks[i] = pt
	}
	row := fleetRow{n: n}
	// Up alone, without previewUp: the bench measures the update, and
	// measures the preview on its own next.
	row.up = fleetRun(t, emu, stacks, parallel, func(ctx context.Context, pt *pulumitest.PulumiTest) error {
		_, err := pt.CurrentStack().Up(ctx, optup.SuppressOutputs())
		return err
	})
	row.preview = fleetRun(t, emu, stacks, parallel, func(ctx context.Context, pt *pulumitest.PulumiTest) error {
		res, err := pt.CurrentStack().Preview(ctx, optpreview.ExpectNoChanges())
		if err == nil && res.ChangeSummary["same"] == 0 {
			err = fmt.Errorf("preview reported no resources: %v", res.ChangeSummary)
		}
		return err
	})
	require.Less(t, emu.postAdmin(t, "ratelimit", []byte("{}")), 300) // Cloudflare's own limit, per token
	row.refresh = fleetRun(t, emu, stacks, parallel, func(ctx context.Context, pt *pulumitest.PulumiTest) error {
		_, err := pt.CurrentStack().Refresh(ctx, optrefresh.ExpectNoChanges())
		return err
	})
	var limit struct {
		Refused int `json:"refused"`
	}
	emu.admin(t, http.MethodGet, "ratelimit", &limit)
	row.refused = limit.Refused
	require.Less(t, emu.postAdmin(t, "ratelimit", []byte(`{"requests": 0}`)), 300)
	fleetRun(t, emu, stacks, parallel, func(ctx context.Context, pt *pulumitest.PulumiTest) error {
		// In parallel here; pulumitest's own destroy at cleanup then finds
		// nothing left.
		_, err := pt.CurrentStack().Destroy(ctx, optdestroy.SuppressOutputs())
		return err
	})
	return row
}

// fleetRun runs op on every stack, parallel at a time, and measures the
// Cloudflare calls and bytes of the whole phase.
func fleetRun(t benchTB, emu *emulatorProcess, stacks []*pulumitest.PulumiTest, parallel int,
	op func(context.Context, *pulumitest.PulumiTest) error) fleetPhase {
	t.Helper()
	emu.resetCounts(t)
	start := time.Now()
	sem := make(chan struct{}, parallel)
	errs := make([]error, len(stacks))
	var wg sync.WaitGroup
	for i, pt := range stacks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = op(context.Background(), pt)
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	for i, err := range errs {
		require.NoError(t, err, "installation f%d", i)
	}
	stats := emu.requests(t)
	return fleetPhase{calls: stats.CloudflareCalls, bytes: stats.CloudflareBytes, wall: wall}
}
