package cloudflare_test

import (
	"fmt"
	"testing"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/providertest"
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

// BenchmarkD1MigrationsApply applies a 66-file migration set, the size of
// upstream's, to a fresh database per iteration, and reports the calls.
func BenchmarkD1MigrationsApply(b *testing.B) {
	h := providertest.NewHarness(b)
	files := map[string]string{}
	for i := 1; i <= 67; i++ {
		if i == 46 { // upstream's numbering has this gap
			continue
		}
		files[fmt.Sprintf("%04d_step.sql", i)] = fmt.Sprintf("CREATE TABLE t%d (id INTEGER PRIMARY KEY, v TEXT DEFAULT 'a;b');", i)
	}
	n := 0
	h.Emu.ResetCounts()
	for b.Loop() {
		n++
		_, dbID := h.NewDatabase(b)
		if _, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.D1MigrationsToken, "m"), Properties: migrationInputs(b, dbID, files)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(h.Emu.CloudflareCalls())/float64(n), "api-calls/op")
}
