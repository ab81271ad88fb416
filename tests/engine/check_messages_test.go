package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckFailuresPrintNoGoValue previews a lone Worker whose nested input
// its Check refuses, through the real pulumi CLI: the engine prints a failure
// that names a property with that property's input as a Go value ({<nil>}
// for a nested path, {map[...]} for a map), so the provider's failures name
// their field in the reason instead, and the CLI prints only the sentence.
func TestCheckFailuresPrintNoGoValue(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	dir := t.TempDir()
	program := `name: check-messages
runtime: yaml
resources:
  worker:
    type: openinspect:index:Worker
    properties:
      name: oi-check-messages
      content: "export default { fetch() { return new Response('ok') } }"
      observability:
        enabled: true
        headSamplingRate: 2
      vars:
        class: reserved
        FINE: value
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(program), 0o644))
	pt := newYAMLTest(t, dir, emu)
	_, err := pt.CurrentStack().Preview(t.Context())
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "has a problem: observability.headSamplingRate: 2 is not a sampling rate")
	assert.Contains(t, msg, `has a problem: vars.class: "class" is a JavaScript reserved word`)
	for _, goValue := range []string{"{<nil>}", "map[", "&{", "value {"} {
		assert.NotContains(t, msg, goValue, "the CLI prints a Go value")
	}
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "a refused check makes no call: %v", counts)
}
