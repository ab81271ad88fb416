package installation

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// schemaResources reads the committed schema.json: token -> input and output
// property names.
func schemaResources(t *testing.T) map[string]struct{ inputs, outputs map[string]bool } {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "schema.json"))
	require.NoError(t, err)
	var schema struct {
		Resources map[string]struct {
			InputProperties map[string]json.RawMessage `json:"inputProperties"`
			Properties      map[string]json.RawMessage `json:"properties"`
		} `json:"resources"`
	}
	require.NoError(t, json.Unmarshal(raw, &schema))
	out := map[string]struct{ inputs, outputs map[string]bool }{}
	for token, r := range schema.Resources {
		e := struct{ inputs, outputs map[string]bool }{map[string]bool{}, map[string]bool{}}
		for k := range r.InputProperties {
			e.inputs[k] = true
		}
		for k := range r.Properties {
			e.outputs[k] = true
		}
		out[token] = e
	}
	return out
}

// TestChildWiringMatchesSchema: the component registers its children by
// token with untyped maps, so a renamed property would compile and pass the
// mocks. Every key it passes must be an input of that token in schema.json,
// and every output it reads (the child structs' tags) must be an output.
func TestChildWiringMatchesSchema(t *testing.T) {
	resources := schemaResources(t)
	provider, api := "daytona", "https://daytona.example/api"
	// (The web part's children are pulumi-kubernetes resources, typed by its SDK.)
	withSecrets := requiredArgs()
	withSecrets.AppSecrets = map[string]pulumi.StringInput{"GH_TOKEN": pulumi.String("x")}
	daytona := requiredArgs()
	daytona.Sandbox = &SandboxArgs{Provider: &provider, Daytona: &DaytonaArgs{APIURL: pulumi.String(api), APIKey: pulumi.String("k")}}
	e2bProvider, e2bAPI := "e2b", "https://e2b.example"
	e2b := requiredArgs()
	e2b.Sandbox = &SandboxArgs{Provider: &e2bProvider, E2B: &E2BArgs{APIURL: pulumi.String(e2bAPI), APIKey: pulumi.String("e2b_00")}}
	ocProvider, ocAPI := "opencomputer", "https://oc.example/api"
	oc := requiredArgs()
	oc.Sandbox = &SandboxArgs{Provider: &ocProvider, OpenComputer: &OpenComputerArgs{APIURL: pulumi.String(ocAPI), APIKey: pulumi.String("oc_00")}}
	vercelProvider, vercelProject := "vercel", "prj_wiring"
	vercel := requiredArgs()
	vercel.Sandbox = &SandboxArgs{Provider: &vercelProvider, Vercel: &VercelArgs{Token: pulumi.String("vt_00"), ProjectID: &vercelProject}}

	onVercel := requiredArgs()
	vercelPlatform := web.PlatformVercel
	onVercel.Web = &web.Args{Platform: &vercelPlatform, Vercel: &web.Vercel{Token: pulumi.String("vercel-web-token"), TeamID: "team_wiring"}}

	seen := map[string]bool{}
	for _, args := range []OpenInspectArgs{withSecrets, daytona, e2b, oc, vercel, onVercel} {
		mocks := &recordingMocks{}
		require.NoError(t, runWithMocks(mocks, args))
		for _, r := range mocks.registered() {
			if !strings.HasPrefix(r.TypeToken, family.PackageName+":index:") || r.TypeToken == "openinspect:index:OpenInspect" {
				continue
			}
			schema, ok := resources[r.TypeToken]
			require.True(t, ok, "%s is registered but not in schema.json", r.TypeToken)
			seen[r.TypeToken] = true
			if r.TypeToken == "openinspect:index:Worker" && strings.HasSuffix(r.Name, "worker-control-plane") && args.Web != nil {
				assert.Contains(t, fmt.Sprint(r.RegisterRPC.GetDependencies()), "vercel-deployment",
					"the control plane's WEB_APP_URL is the Vercel deployment's production URL")
			}
			if r.TypeToken == "openinspect:index:VercelDeployment" {
				assert.Contains(t, fmt.Sprint(r.RegisterRPC.GetDependencies()), "vercel-project", "the deployment follows its project")
			}
			if r.TypeToken == "openinspect:index:E2bTemplate" {
				// Upstream's order: the template builds after the control plane is uploaded.
				assert.Contains(t, fmt.Sprint(r.RegisterRPC.GetDependencies()), "worker-control-plane", "the E2B template waits for the control plane")
			}
			for key := range r.Inputs {
				assert.True(t, schema.inputs[string(key)], "%s passes %q, which is not an input in schema.json", r.TypeToken, key)
			}
		}
	}
	assert.Len(t, seen, 17, "every openinspect child is covered: %v", seen)

	// The outputs the component reads from each child.
	for token, child := range map[string]any{
		"openinspect:index:D1Database": d1Child{}, "openinspect:index:D1Migrations": migrationsChild{},
		"openinspect:index:KvNamespace": kvNamespaceChild{}, "openinspect:index:R2Bucket": r2BucketChild{},
		"openinspect:index:Queue": queueChild{}, "openinspect:index:Worker": workerChild{},
		"openinspect:index:GeneratedSecret": generatedSecretChild{}, "openinspect:index:WorkerUrls": workerUrlsChild{},
		"openinspect:index:ModalApp": modalAppChild{}, "openinspect:index:DaytonaSnapshot": snapshotChild{},
		"openinspect:index:E2bTemplate": e2bTemplateChild{}, "openinspect:index:OpenComputerSnapshot": openComputerChild{},
		"openinspect:index:VercelSnapshot": vercelChild{},
		"openinspect:index:VercelProject":  vercelProjectChild{}, "openinspect:index:VercelDeployment": vercelDeploymentChild{},
	} {
		typ := reflect.TypeOf(child)
		for i := range typ.NumField() {
			name := family.PulumiName(typ.Field(i))
			if name == "" {
				continue
			}
			assert.True(t, resources[token].outputs[name], "the component reads %s.%s, which is not an output in schema.json", token, name)
		}
	}
}

// The planner keeps every kind of binding the contract has: a kind added to
// upstream's list and not here would be refused at every plan.
func TestPlanKeepsEveryBindingKind(t *testing.T) {
	w := &plannedWorker{}
	for _, kind := range upstream.BindingKinds() {
		assert.NotNil(t, w.bindingsOf(kind), "binding kind %s", kind)
	}
	assert.Nil(t, w.bindingsOf("unknown"))
}
