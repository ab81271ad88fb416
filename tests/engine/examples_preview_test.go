package engine

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExamplesPreviewAFreshStack previews each example as a new user's
// first `pulumi up` does, on a stack that has nothing yet: every input that
// depends on a resource not created (generated secrets, database IDs, the
// rendered web) is unknown, so the providers' Checks see unknowns deep in
// their inputs (issue 30: the web Worker refused its unknown
// assets.directory). The preview must succeed and name what it will
// create. The Node and Python SDKs preview a fresh stack in nodejs_test.go
// and python_test.go; examples/pko's program is examples/yaml's component
// run by the operator (pko_test.go previews it before its update).
func TestExamplesPreviewAFreshStack(t *testing.T) {
	requirePulumi(t)
	for _, tc := range []struct {
		name string
		pt   func(t tb, emu *emulatorProcess) *pulumitest.PulumiTest
		// want are resource types the preview creates.
		want []string
	}{
		{"yaml", newInstallationWithWebTest, []string{"openinspect:index:OpenInspect", "openinspect:index:Worker",
			"openinspect:index:D1Database", "openinspect:index:GeneratedSecret", "openinspect:index:AppSecrets"}},
		{"go", newGoExampleTest, []string{"openinspect:index:OpenInspect", "openinspect:index:Worker", "openinspect:index:D1Database"}},
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
			assert.Empty(t, emu.inventory(t).Workers, "a preview creates nothing")
		})
	}
}

// newGoExampleTest is examples/go on a fresh stack against emu: the program
// copied with a go.mod that builds it against this checkout's Go SDK (in
// the repository it builds as part of the root module).
func newGoExampleTest(t tb, emu *emulatorProcess) *pulumitest.PulumiTest {
	t.Helper()
	pt := newYAMLTest(t, filepath.Join(repoRoot(), "examples", "go"), emu)
	root := repoRoot()
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	text := regexp.MustCompile(`(?m)^module .*$`).ReplaceAllString(string(mod), "module openinspect-example-go")
	text = strings.ReplaceAll(text, "=> ./sdk/go", "=> "+filepath.Join(root, "sdk", "go"))
	require.NoError(t, os.WriteFile(filepath.Join(pt.WorkingDir(), "go.mod"), []byte(text), 0o644))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(pt.WorkingDir(), "go.sum"), sum, 0o644))
	pt.SetConfig(t, "upstreamCheckout", filepath.Join(root, "tests", "fixtures", "upstream"))
	for key, v := range map[string]string{"githubAppId": "1", "githubAppInstallationId": "2",
		"allowedUsers": "octocat", "githubOAuthClientId": "oi-test-oauth-client"} {
		pt.SetConfig(t, key, v)
	}
	setInstallationSecrets(t, pt.CurrentStack())
	// The fixture checkout is not the pinned commit's tree, which a real
	// checkout is: the test lets it through as examples/yaml's
	// allowUnverified does.
	main := filepath.Join(pt.WorkingDir(), "main.go")
	src, err := os.ReadFile(main)
	require.NoError(t, err)
	const upstream = `&openinspect.UpstreamArgs{Checkout: pulumi.String(cfg.Require("upstreamCheckout"))}`
	require.Contains(t, string(src), upstream, "examples/go names its checkout as the test expects")
	edited := strings.Replace(string(src), upstream,
		`&openinspect.UpstreamArgs{Checkout: pulumi.String(cfg.Require("upstreamCheckout")), AllowUnverified: pulumi.Bool(true)}`, 1)
	require.NoError(t, os.WriteFile(main, []byte(edited), 0o644))
	return pt
}
