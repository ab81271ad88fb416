package cloudflare_test

import (
	"testing"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/providertest"
	"github.com/openinspect/pulumi-openinspect/tests/migrationset"
	p "github.com/pulumi/pulumi-go-provider"
)

// BenchmarkWorkerNoopUpdate measures what an unchanged worker costs on
// `pulumi up`: Diff plus Update with equal inputs. It reports the Cloudflare
// calls per operation (the target is zero) next to the time.
func BenchmarkWorkerNoopUpdate(b *testing.B) {
	h := providertest.NewHarness(b)
	u := providertest.URN(cloudflare.WorkerToken, "w")
	inputs := providertest.Props(b, map[string]any{"name": "oi-bench", "content": providertest.FixtureWorker,
		"vars": map[string]any{"A": "1"}, "crons": []any{"* * * * *"}})
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	if err != nil {
		b.Fatal(err)
	}
	h.Emu.ResetCounts()
	b.ResetTimer()
	for b.Loop() {
		if _, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs}); err != nil {
			b.Fatal(err)
		}
		if _, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(h.Emu.CloudflareCalls())/float64(b.N), "api-calls/op")
}

// BenchmarkD1MigrationsApply applies the 66-file set the side-by-side
// benchmark also gives wrangler (tests/migrationset, shaped like upstream's)
// to a fresh database per iteration, and reports the migrations' calls (the
// database's creation is not counted).
func BenchmarkD1MigrationsApply(b *testing.B) {
	h := providertest.NewHarness(b)
	files := migrationset.Files()
	n, calls := 0, 0
	for b.Loop() {
		n++
		b.StopTimer()
		_, dbID := h.NewDatabase(b)
		h.Emu.ResetCounts()
		b.StartTimer()
		if _, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.D1MigrationsToken, "m"), Properties: migrationInputs(b, dbID, files)}); err != nil {
			b.Fatal(err)
		}
		calls += h.Emu.CloudflareCalls()
	}
	b.ReportMetric(float64(calls)/float64(n), "api-calls/op")
}
