package installation

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// urlSourceToken is a resource of the test program whose output feeds a
// sandbox apiUrl, as another stack's or provider's resource would.
const urlSourceToken = "test:index:UrlSource"

type urlSource struct {
	pulumi.CustomResourceState
	URL pulumi.StringOutput `pulumi:"url"`
}

// sourceMocks answer the URL source with url, or with an unknown url when
// it is "" (a preview of a resource not created yet); every other resource
// as recordingMocks does.
type sourceMocks struct {
	*recordingMocks
	url string
}

func (m sourceMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	if args.TypeToken != urlSourceToken {
		return m.recordingMocks.NewResource(args)
	}
	out := resource.PropertyMap{"url": resource.MakeComputed(resource.NewProperty(""))}
	if m.url != "" {
		out["url"] = resource.NewProperty(m.url)
	}
	return "src-id", out, nil
}

// apiURLCase is one sandbox backend given its apiUrl from the source.
type apiURLCase struct {
	provider, child, cpVar string
	sandbox                func(apiURL pulumi.StringInput) *SandboxArgs
}

var apiURLCases = []apiURLCase{
	{"daytona", "oi-daytona-snapshot", "DAYTONA_API_URL", func(u pulumi.StringInput) *SandboxArgs {
		return &SandboxArgs{Provider: new("daytona"), Daytona: &DaytonaArgs{APIURL: u, APIKey: pulumi.String("dtn")}}
	}},
	{"e2b", "oi-e2b-template", "E2B_API_URL", func(u pulumi.StringInput) *SandboxArgs {
		return &SandboxArgs{Provider: new("e2b"), E2B: &E2BArgs{APIURL: u, APIKey: pulumi.String("e2b_00")}}
	}},
	{"opencomputer", "oi-opencomputer-snapshot", "OPENCOMPUTER_API_URL", func(u pulumi.StringInput) *SandboxArgs {
		return &SandboxArgs{Provider: new("opencomputer"), OpenComputer: &OpenComputerArgs{APIURL: u, APIKey: pulumi.String("oc_00")}}
	}},
	{"vercel", "oi-vercel-snapshot", "VERCEL_SANDBOX_API_BASE_URL", func(u pulumi.StringInput) *SandboxArgs {
		return &SandboxArgs{Provider: new("vercel"), Vercel: &VercelArgs{APIURL: u, Token: pulumi.String("vt_00"), ProjectID: new("prj_1")}}
	}},
}

// runWithSource runs a program in which the installation's sandbox apiUrl
// is the source's url output (through wrap), as a preview or an up.
func runWithSource(mocks sourceMocks, preview bool, c apiURLCase, wrap func(pulumi.StringOutput) pulumi.StringInput) error {
	return pulumi.RunErr(func(ctx *pulumi.Context) error {
		src := &urlSource{}
		if err := ctx.RegisterResource(urlSourceToken, "src", pulumi.Map{}, src); err != nil {
			return err
		}
		args := requiredArgs()
		args.Sandbox = c.sandbox(wrap(src.URL))
		_, err := NewOpenInspect(ctx, "oi", args)
		return err
	}, pulumi.WithMocks("project", "stack", mocks), func(info *pulumi.RunInfo) { info.DryRun = preview })
}

func asIs(o pulumi.StringOutput) pulumi.StringInput { return o }

// registeredInputs are a resource's inputs as registered, unknowns kept
// (the mocks' Inputs leave them out).
func registeredInputs(t *testing.T, r pulumi.MockResourceArgs) resource.PropertyMap {
	t.Helper()
	inputs, err := plugin.UnmarshalProperties(r.RegisterRPC.GetObject(), plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true})
	require.NoError(t, err)
	return inputs
}

// controlPlaneVar is the control plane Worker's var as registered: its
// value, and whether it is known (an unknown element may make the whole map
// unknown).
func controlPlaneVar(t *testing.T, mocks *recordingMocks, name string) (resource.PropertyValue, bool) {
	t.Helper()
	vars := registeredInputs(t, mocks.byName(t, "oi-worker-control-plane"))["vars"]
	if vars.IsSecret() {
		vars = vars.SecretValue().Element
	}
	if vars.IsComputed() {
		return vars, false
	}
	v, ok := vars.ObjectValue()[resource.PropertyKey(name)]
	require.True(t, ok, "the control plane has %s", name)
	return v, !v.IsComputed()
}

// TestSandboxAPIURLFromAnotherResource: issue 48. A sandbox apiUrl that is
// another resource's output is accepted: at a preview, before that resource
// exists, the installation is planned with the control plane's var and the
// sandbox child's apiUrl unknown; at the up, the value reaches both, with
// the dependency on the source kept. The lock checks the backend's key at
// the up, at that URL.
func TestSandboxAPIURLFromAnotherResource(t *testing.T) {
	for _, c := range apiURLCases {
		t.Run(c.provider, func(t *testing.T) {
			url := "https://" + c.provider + ".example/api"
			preview := sourceMocks{recordingMocks: &recordingMocks{}}
			require.NoError(t, runWithSource(preview, true, c, asIs), "a preview with the apiUrl unknown")
			child := preview.byName(t, c.child)
			apiURL := registeredInputs(t, child)["apiUrl"]
			assert.True(t, apiURL.IsComputed(), "the child's apiUrl is unknown at the preview: %v", apiURL)
			assert.Contains(t, child.RegisterRPC.GetPropertyDependencies()["apiUrl"].GetUrns(), "urn:pulumi:stack::project::test:index:UrlSource::src")
			_, known := controlPlaneVar(t, preview.recordingMocks, c.cpVar)
			assert.False(t, known, "%s is unknown at the preview", c.cpVar)
			lockPreflight := registeredInputs(t, preview.byName(t, "oi-names"))["preflight"].ObjectValue()
			_, checked := lockPreflight["sandbox"]
			assert.False(t, checked, "the lock does not check the key at the preview, against the backend's default URL")

			up := sourceMocks{recordingMocks: &recordingMocks{}, url: url}
			require.NoError(t, runWithSource(up, false, c, asIs))
			child = up.byName(t, c.child)
			assert.Equal(t, url, child.Inputs["apiUrl"].StringValue(), "the child is given the value")
			assert.Contains(t, child.RegisterRPC.GetPropertyDependencies()["apiUrl"].GetUrns(), "urn:pulumi:stack::project::test:index:UrlSource::src",
				"the child depends on the resource the value comes from")
			v, known := controlPlaneVar(t, up.recordingMocks, c.cpVar)
			require.True(t, known)
			assert.Equal(t, url, v.StringValue(), "the control plane's %s is the value", c.cpVar)
			assert.False(t, v.IsSecret())
			sandbox := registeredInputs(t, up.byName(t, "oi-names"))["preflight"].ObjectValue()["sandbox"]
			require.True(t, sandbox.IsObject(), "the lock checks the key at the up: %v", sandbox)
			assert.Equal(t, url, sandbox.ObjectValue()["apiUrl"].StringValue(), "with the value, once known")
		})
	}
}

// TestSandboxAPIURLOutputCheckedOnceKnown: an output's value is held to
// the rules of a plain apiUrl once known, before anything is registered;
// a secret is refused whether known or not, without quoting it.
func TestSandboxAPIURLOutputCheckedOnceKnown(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		wrap      func(pulumi.StringOutput) pulumi.StringInput
		preview   bool
		want      string
	}{
		{"plain http to another host", "http://daytona.example/api", asIs, false,
			`sandbox.daytona.apiUrl: "http://daytona.example/api" is plain http to another host`},
		{"not a URL", "daytona.example", asIs, false, `sandbox.daytona.apiUrl: "daytona.example" is not an http(s) URL`},
		{"empty once known", "https://replaced.example/api", func(o pulumi.StringOutput) pulumi.StringInput {
			return o.ApplyT(func(string) string { return "" }).(pulumi.StringOutput)
		}, false, "sandbox.daytona.apiUrl: required with the daytona provider"},
		{"a secret at the up", "https://daytona.example/secret-path", func(o pulumi.StringOutput) pulumi.StringInput { return pulumi.ToSecret(o).(pulumi.StringOutput) },
			false, "sandbox.daytona.apiUrl: must not be a secret: it becomes the control plane's plain-text var DAYTONA_API_URL"},
		{"a secret at a preview", "", func(o pulumi.StringOutput) pulumi.StringInput { return pulumi.ToSecret(o).(pulumi.StringOutput) },
			true, "sandbox.daytona.apiUrl: must not be a secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mocks := sourceMocks{recordingMocks: &recordingMocks{}, url: tc.url}
			err := runWithSource(mocks, tc.preview, apiURLCases[0], tc.wrap)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			if strings.Contains(tc.name, "secret") && tc.url != "" {
				assert.NotContains(t, err.Error(), tc.url, "the secret is not quoted")
			}
			for _, r := range mocks.registered() {
				assert.Equal(t, urlSourceToken, r.TypeToken, "nothing of the installation is registered: %s", r.Name)
			}
		})
	}
}

// TestPlainSandboxAPIURLPlannedAsALiteral: a plain apiUrl is planned as
// before, a literal the Worker's own checks see.
func TestPlainSandboxAPIURLPlannedAsALiteral(t *testing.T) {
	args := requiredArgs()
	args.Sandbox = apiURLCases[0].sandbox(pulumi.String("https://daytona.example/api"))
	plan := mustPlan(t, args)
	assert.Equal(t, literal("https://daytona.example/api"), plan.worker(controlPlane).Vars["DAYTONA_API_URL"])
	assert.Empty(t, plan.OutputInputs)
}
