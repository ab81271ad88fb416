package installation

import "testing"

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
