package provider

import (
	"fmt"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
)

// BenchmarkWorkerNoopUpdate measures what an unchanged worker costs on
// `pulumi up`: Diff plus Update with equal inputs. It reports the Cloudflare
// calls per operation (the target is zero) next to the time.
func BenchmarkWorkerNoopUpdate(b *testing.B) {
	h := newHarness(b)
	u := urn(workerToken, "w")
	inputs := props(b, map[string]any{"name": "oi-bench", "content": fixtureWorker,
		"vars": map[string]any{"A": "1"}, "crons": []any{"* * * * *"}})
	created, err := h.server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	if err != nil {
		b.Fatal(err)
	}
	h.emu.ResetCounts()
	b.ResetTimer()
	for b.Loop() {
		if _, err := h.server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs}); err != nil {
			b.Fatal(err)
		}
		if _, err := h.server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(h.emu.CloudflareCalls())/float64(b.N), "api-calls/op")
}

// BenchmarkD1MigrationsApply applies a 66-file migration set, the size of
// upstream's, to a fresh database per iteration, and reports the calls.
func BenchmarkD1MigrationsApply(b *testing.B) {
	h := newHarness(b)
	files := map[string]string{}
	for i := 1; i <= 67; i++ {
		if i == 46 { // upstream's numbering has this gap
			continue
		}
		files[fmt.Sprintf("%04d_step.sql", i)] = fmt.Sprintf("CREATE TABLE t%d (id INTEGER PRIMARY KEY, v TEXT DEFAULT 'a;b');", i)
	}
	n := 0
	h.emu.ResetCounts()
	for b.Loop() {
		n++
		_, dbID := newDatabase(b, h)
		if _, err := h.server.Create(p.CreateRequest{Urn: urn(d1MigrationsToken, "m"), Properties: migrationInputs(b, dbID, files)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(h.emu.CloudflareCalls())/float64(n), "api-calls/op")
}

// BenchmarkOpenInspectConstruct measures what the component costs on every
// preview and up before any child runs: validating the spec, expanding the
// contract, checking the artifacts and registering the children (against
// mocks). It reports the children registered per installation.
func BenchmarkOpenInspectConstruct(b *testing.B) {
	args := requiredArgs()
	var registered int
	for b.Loop() {
		mocks := &recordingMocks{}
		if err := runWithMocks(mocks, args); err != nil {
			b.Fatal(err)
		}
		registered = len(mocks.registered())
	}
	b.ReportAllocs()
	b.ReportMetric(float64(registered), "resources/op")
}
