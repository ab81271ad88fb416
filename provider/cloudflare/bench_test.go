package cloudflare_test

import (
	"fmt"
	"testing"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapitest"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/tests/migrationset"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
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
		_, dbID := cfapitest.NewDatabase(b, h)
		h.Emu.ResetCounts()
		b.StartTimer()
		if _, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.D1MigrationsToken, "m"), Properties: migrationInputs(b, dbID, files)}); err != nil {
			b.Fatal(err)
		}
		calls += h.Emu.CloudflareCalls()
	}
	b.ReportMetric(float64(calls)/float64(n), "api-calls/op")
}

// BenchmarkWorkerRefreshAccountSize refreshes one worker (crons, a queue
// consumer) in an account that also holds 10, then 500, other scripts, and
// reports the calls and response bytes per refresh: both stay the same,
// because every read addresses the script by name (issue 23's constant-cost
// reads); a read that listed the account's scripts would grow with it.
func BenchmarkWorkerRefreshAccountSize(b *testing.B) {
	for _, others := range []int{10, 500} {
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) {
			h := providertest.NewHarness(b)
			client, tg := newTargets(b, h)
			u := providertest.URN(cloudflare.WorkerToken, "w")
			inputs := providertest.Props(b, map[string]any{"name": "oi-refreshed", "content": providertest.FixtureWorker,
				"crons": []any{"0 * * * *"}, "queueConsumers": providertest.List(map[string]any{"queueId": tg.queueID})})
			created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
			if err != nil {
				b.Fatal(err)
			}
			for i := range others {
				if _, err := client.UploadScript(b.Context(), cfapi.ScriptUpload{Name: fmt.Sprintf("oi-other-%03d", i), MainModule: "index.js",
					Modules: []cfapi.Module{{Name: "index.js", Content: []byte(providertest.FixtureWorker)}}}); err != nil {
					b.Fatal(err)
				}
			}
			h.Emu.ResetCounts()
			b.ResetTimer()
			for b.Loop() {
				if _, err := h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: created.Properties, Inputs: inputs}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(h.Emu.CloudflareCalls())/float64(b.N), "api-calls/op")
			b.ReportMetric(float64(h.Emu.CloudflareBytes())/float64(b.N), "resp-bytes/op")
		})
	}
}
