package engine

import (
	"regexp"
	"testing"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/stretchr/testify/assert"
)

// TestExamplesPreviewAFreshStack previews each example as a new user's
// first `pulumi up` does, on a stack that has nothing yet: every input that
// depends on a resource not created (generated secrets, database IDs, the
// rendered web) is unknown, so the providers' Checks see unknowns deep in
// their inputs (issue 30: the web Worker refused its unknown
// assets.directory). The preview must succeed and name what it will
// create. examples/go, nodejs and python are the same component through
// each SDK; their programs need the language plugins (pulumi-language-go,
// the Node and Python toolchains with the example's dependencies), which
// the tools cache does not hold, so the same component previews a fresh
// stack through each SDK's Automation API instead (go_component_test.go,
// nodejs_test.go, python_test.go). examples/pko's program is examples/yaml's
// component run by the operator (pko_test.go previews it before its update).
func TestExamplesPreviewAFreshStack(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	for _, tc := range []struct {
		name string
		pt   func(t tb, emu *emulatorProcess) *pulumitest.PulumiTest
		// want are resource types the preview creates.
		want []string
	}{
		{"yaml", newInstallationWithWebTest, []string{"openinspect:index:OpenInspect", "openinspect:index:Worker",
			"openinspect:index:D1Database", "openinspect:index:GeneratedSecret", "openinspect:index:AppSecrets"}},
		{"yaml-vercel", newVercelWebTest, []string{"openinspect:index:OpenInspect", "openinspect:index:VercelProject",
			"openinspect:index:VercelDeployment", "openinspect:index:Worker"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emu := startEmulator(t)
			pt := tc.pt(t, emu)
			preview := pt.Preview(t)
			creates := preview.ChangeSummary[apitype.OpCreate]
			t.Logf("%s: %v", tc.name, preview.ChangeSummary)
			// The stack and the component, and the component's children.
			assert.Greater(t, creates, 10, "a fresh stack's preview creates the installation: %v", preview.ChangeSummary)
			for _, typ := range tc.want {
				assert.Regexp(t, regexp.MustCompile(`\+\s+`+regexp.QuoteMeta(typ)+`\s`), preview.StdOut, "the preview creates a %s", typ)
			}
			assert.NotContains(t, preview.StdOut, "error:", "the preview reports no error")
			assert.NotContains(t, preview.StdOut, "services[", "the installation's workers bind each other: no warning of a missing target")
			assert.Empty(t, emu.inventory(t).Workers, "a preview creates nothing")
			assert.Empty(t, emu.inventory(t).Vercel.Projects, "a preview creates nothing")
		})
	}
}
