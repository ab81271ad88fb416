package vercel_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/internal/web/vercelapi"
	"github.com/openinspect/pulumi-openinspect/provider/vercel"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emvercel "github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

const sensitiveValue = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"

func harness(t *testing.T) *providertest.Harness {
	t.Helper()
	return providertest.NewHarnessWith(t, emulator.Options{Vercel: emvercel.Options{BuildTime: 100 * time.Millisecond}},
		provider.WithVercelDeployment(&vercel.VercelDeployment{PollInterval: 20 * time.Millisecond}))
}

func projectInputs(h *providertest.Harness, extra map[string]any) map[string]any {
	m := map[string]any{
		"name": "open-inspect-unit", "teamId": emvercel.DefaultTeamID, "apiUrl": h.Emu.URL() + emvercel.APIPrefix,
		"token": emvercel.DefaultToken, "framework": "nextjs", "rootDirectory": "packages/web",
		"installCommand": "cd ../.. && npm install && npm run build -w @open-inspect/shared", "buildCommand": "next build",
		"variables":          map[string]any{"NEXT_PUBLIC_APP_NAME": "Open-Inspect", "CONTROL_PLANE_URL": "https://cp.example"},
		"sensitiveVariables": map[string]any{"SERVICE_AUTH_SECRET": sensitiveValue},
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func project(h *providertest.Harness, name string) *emvercel.ProjectEntry {
	for _, p := range h.Emu.Inventory().Vercel.Projects {
		if p.Name == name {
			return &p
		}
	}
	return nil
}

// TestVercelProjectLifecycle: create with the settings and variables (one
// sensitive, never shown), a taken name refused then adopted, a no-op diff,
// a changed value updated in place by ID (the diff names the key, the
// preview never a sensitive value), refresh seeing a setting and a value
// changed outside, import, and delete.
func TestVercelProjectLifecycle(t *testing.T) {
	h := harness(t)
	u := providertest.URN(vercel.VercelProjectToken, "project")
	inputs := providertest.Props(t, projectInputs(h, nil))
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	_, err = h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs, DryRun: true})
	require.NoError(t, err)
	assert.Zero(t, h.Emu.Vercel().Calls(), "a preview makes no call")

	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	proj := project(h, "open-inspect-unit")
	require.NotNil(t, proj)
	assert.Equal(t, created.ID, proj.ID)
	assert.Equal(t, "packages/web", proj.RootDirectory)
	require.Len(t, proj.Env, 3)
	ids := map[string]string{}
	for _, e := range proj.Env {
		ids[e.Key] = e.ID
		assert.ElementsMatch(t, []string{"production", "preview"}, e.Targets)
		if e.Key == "SERVICE_AUTH_SECRET" {
			assert.Equal(t, "sensitive", e.Type)
		} else {
			assert.Equal(t, "plain", e.Type)
		}
	}
	digest := created.Properties.Get("variablesDigest").AsString()
	assert.True(t, created.Properties.Get("sensitiveVariables").Secret() || created.Properties.Get("sensitiveVariables").HasSecrets(),
		"the sensitive values are kept only as secrets")
	assert.False(t, created.Properties.Get("variablesDigest").HasSecrets(), "the digest is not made of secrets")

	// An empty project of another name (a create killed before its state
	// was written) is taken over without adoptExisting.
	cl0 := client(t, h)
	empty, err := cl0.CreateProject(t.Context(), "open-inspect-killed", vercelSettings("packages/web"))
	require.NoError(t, err)
	resumed, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(vercel.VercelProjectToken, "resumed"),
		Properties: providertest.Props(t, projectInputs(h, map[string]any{"name": "open-inspect-killed"}))})
	require.NoError(t, err)
	assert.Equal(t, empty.ID, resumed.ID)
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: resumed.ID, Urn: providertest.URN(vercel.VercelProjectToken, "resumed"),
		Properties: resumed.Properties}))

	// Another project of that name in the team, holding variables: a
	// conflict naming it, then adopted on request.
	other := providertest.URN(vercel.VercelProjectToken, "other")
	_, err = h.Server.Create(p.CreateRequest{Urn: other, Properties: check.Inputs})
	require.ErrorContains(t, err, "adoptExisting")
	assert.ErrorContains(t, err, created.ID)
	adopted, err := h.Server.Create(p.CreateRequest{Urn: other, Properties: providertest.Props(t, projectInputs(h, map[string]any{"adoptExisting": true}))})
	require.NoError(t, err)
	assert.Equal(t, created.ID, adopted.ID)
	assert.True(t, adopted.Properties.Get("adopted").AsBool())
	for _, e := range project(h, "open-inspect-unit").Env {
		assert.Equal(t, ids[e.Key], e.ID, "adoption updated %s in place after ENV_CONFLICT", e.Key)
	}

	noop, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	assert.False(t, noop.HasChanges)

	changed := providertest.Props(t, projectInputs(h, map[string]any{
		"variables":          map[string]any{"NEXT_PUBLIC_APP_NAME": "Acme", "CONTROL_PLANE_URL": "https://cp.example"},
		"sensitiveVariables": map[string]any{"SERVICE_AUTH_SECRET": strings.Repeat("a", 64)},
	}))
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: changed})
	require.NoError(t, err)
	assert.Equal(t, p.Update, diff.DetailedDiff["variables.NEXT_PUBLIC_APP_NAME"].Kind)
	assert.Equal(t, p.Update, diff.DetailedDiff["sensitiveVariables.SERVICE_AUTH_SECRET"].Kind)
	assert.NotContains(t, diff.DetailedDiff, "variables.CONTROL_PLANE_URL")
	h.Emu.ResetCounts()
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: changed})
	require.NoError(t, err)
	counts := h.Emu.Counts()
	assert.Equal(t, 2, counts["PATCH "+emvercel.APIPrefix+"/v9/projects/{idOrName}/env/{id}"], "%v", counts)
	assert.Zero(t, counts["POST "+emvercel.APIPrefix+"/v10/projects/{idOrName}/env"], "no variable created again: %v", counts)
	for _, e := range project(h, "open-inspect-unit").Env {
		assert.Equal(t, ids[e.Key], e.ID, "%s keeps its ID", e.Key)
	}
	assert.NotEqual(t, digest, updated.Properties.Get("variablesDigest").AsString(), "a sensitive change moves the digest")
	assert.Equal(t, 1.0, updated.Properties.Get("sensitiveRevision").AsNumber())

	// Refresh sees a build setting and a plain value changed outside.
	cl := client(t, h)
	_, err = cl.UpdateProject(t.Context(), created.ID, vercelSettings("packages/other"))
	require.NoError(t, err)
	require.NoError(t, cl.UpdateEnv(t.Context(), created.ID, ids["NEXT_PUBLIC_APP_NAME"], envPlain("Changed outside")))
	read, err := h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: updated.Properties, Inputs: changed})
	require.NoError(t, err)
	assert.Equal(t, "packages/other", read.Inputs.Get("rootDirectory").AsString())
	assert.Equal(t, "Changed outside", read.Inputs.Get("variables").AsMap().Get("NEXT_PUBLIC_APP_NAME").AsString())
	assert.Equal(t, strings.Repeat("a", 64), read.Inputs.Get("sensitiveVariables").AsMap().Get("SERVICE_AUTH_SECRET").AsString(),
		"a sensitive value cannot be read: the state's stands")

	// Import by <teamId>/<projectId> with the token in VERCEL_TOKEN.
	t.Setenv("VERCEL_TOKEN", emvercel.DefaultToken)
	t.Setenv("VERCEL_API_URL", h.Emu.URL()+emvercel.APIPrefix)
	imported, err := h.Server.Read(p.ReadRequest{ID: emvercel.DefaultTeamID + "/" + created.ID, Urn: u})
	require.NoError(t, err)
	assert.Equal(t, created.ID, imported.ID)
	assert.Equal(t, "open-inspect-unit", imported.Inputs.Get("name").AsString())
	assert.Equal(t, emvercel.DefaultTeamID, imported.Inputs.Get("teamId").AsString())
	assert.Equal(t, "next build", imported.Inputs.Get("buildCommand").AsString())

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}))
	assert.Nil(t, project(h, "open-inspect-unit"))
}

// TestVercelProjectCheck: every bad input is refused naming its field,
// before any call.
func TestVercelProjectCheck(t *testing.T) {
	h := harness(t)
	check, err := h.Server.Check(p.CheckRequest{Urn: providertest.URN(vercel.VercelProjectToken, "p"), Inputs: providertest.Props(t,
		projectInputs(h, map[string]any{"name": "Bad Name", "teamId": "acme", "apiUrl": "ftp://x", "targets": []any{"staging"},
			"variables": map[string]any{"1BAD": "x"}}))})
	require.NoError(t, err)
	var fields []string
	for _, f := range check.Failures {
		fields = append(fields, family.FailureField(f))
	}
	assert.ElementsMatch(t, []string{"name", "teamId", "apiUrl", "targets[0]", "variables.1BAD"}, fields, "%v", check.Failures)
	assert.Zero(t, h.Emu.Vercel().Calls())
}

// webCheckout is a minimal checkout of upstream's web package (a workspace
// root, the shared and web packages) in a temporary directory; write adds
// a file to it.
func webCheckout(t *testing.T) (src string, write func(rel, body string)) {
	t.Helper()
	src = t.TempDir()
	write = func(rel, body string) {
		path := filepath.Join(src, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	}
	write("package.json", `{"name":"root","workspaces":["packages/*"]}`)
	write("package-lock.json", `{"lockfileVersion":3}`)
	write("packages/shared/package.json", `{"name":"@open-inspect/shared"}`)
	write("packages/web/package.json", `{"name":"@open-inspect/web","dependencies":{"next":"16.0.0"}}`)
	write("packages/web/next.config.ts", `export default {}`)
	write("packages/web/src/app/page.tsx", `export default function Page() { return null }`)
	return src, write
}

// TestVercelDeploymentLifecycle: the first deployment uploads every file
// once and becomes ready with the production alias; an unchanged source and
// variables make no call; a changed file uploads only itself; a failed
// build fails with Vercel's message, keeps the last good deployment
// serving, and the next update deploys again.
func TestVercelDeploymentLifecycle(t *testing.T) {
	h := harness(t)
	src, write := webCheckout(t)
	write("packages/web/node_modules/next/index.js", `never uploaded`)
	write("packages/web/.open-next/worker.js", `never uploaded`)

	pu := providertest.URN(vercel.VercelProjectToken, "project")
	proj, err := h.Server.Create(p.CreateRequest{Urn: pu, Properties: providertest.Props(t, projectInputs(h, nil))})
	require.NoError(t, err)

	u := providertest.URN(vercel.VercelDeploymentToken, "deployment")
	inputs := func(digest string) property.Map {
		return providertest.Props(t, map[string]any{"teamId": emvercel.DefaultTeamID, "apiUrl": h.Emu.URL() + emvercel.APIPrefix,
			"token": emvercel.DefaultToken, "projectId": proj.ID, "projectName": "open-inspect-unit", "source": src, "variablesDigest": digest})
	}
	in := inputs(proj.Properties.Get("variablesDigest").AsString())
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: in})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	h.Emu.ResetCounts()
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	assert.Equal(t, 6, int(created.Properties.Get("files").AsNumber()), "node_modules and .open-next are never sent")
	assert.Equal(t, 6, int(created.Properties.Get("uploaded").AsNumber()))
	prod := created.Properties.Get("productionUrl").AsString()
	assert.True(t, strings.HasPrefix(prod, "http://open-inspect-unit"+emvercel.LocalSuffix+":"), prod)
	assert.Equal(t, 6, h.Emu.Counts()["POST "+emvercel.APIPrefix+"/v2/files"])

	h.Emu.ResetCounts()
	noop, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	assert.False(t, noop.HasChanges)
	assert.Zero(t, h.Emu.Vercel().Calls(), "an unchanged deployment is decided without a call")

	write("packages/web/src/app/page.tsx", `export default function Page() { return "changed" }`)
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	require.True(t, diff.HasChanges)
	assert.Contains(t, diff.DetailedDiff, "sourceDigest")
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	assert.Equal(t, 1, int(updated.Properties.Get("uploaded").AsNumber()), "only the changed file")
	assert.NotEqual(t, created.Properties.Get("deploymentId").AsString(), updated.Properties.Get("deploymentId").AsString())
	assert.Equal(t, prod, updated.Properties.Get("productionUrl").AsString(), "the production URL stays")

	h.Emu.Vercel().FailNextDeployment("Type error: Property 'x' does not exist (arranged)")
	moved := inputs("another-digest")
	_, err = h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: updated.Properties, Inputs: moved})
	require.ErrorContains(t, err, "Type error: Property 'x' does not exist (arranged)")
	assert.NotContains(t, err.Error(), emvercel.DefaultToken)
	ready := 0
	for _, d := range project(h, "open-inspect-unit").Deployments {
		if d.State == "READY" && len(d.Aliases) > 0 {
			ready++
		}
	}
	assert.Equal(t, 1, ready, "the last good deployment keeps the production alias")
	again, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: updated.Properties, Inputs: moved})
	require.NoError(t, err, "the next up deploys again")
	assert.Zero(t, int(again.Properties.Get("uploaded").AsNumber()))
}

// TestVercelDeploymentAdoptsAnInterruptedRun: a create whose deployment
// was made but never recorded (here its first read fails, as a killed run's
// never came) is finished by the next create, which finds the deployment
// by its marker and awaits it instead of deploying again; a deployment of
// the same source that a newer one has since replaced as production is
// not taken: going back to that source deploys again.
func TestVercelDeploymentAdoptsAnInterruptedRun(t *testing.T) {
	h := harness(t)
	src, write := webCheckout(t)
	proj, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(vercel.VercelProjectToken, "project"),
		Properties: providertest.Props(t, projectInputs(h, nil))})
	require.NoError(t, err)
	u := providertest.URN(vercel.VercelDeploymentToken, "deployment")
	inputs := providertest.Props(t, map[string]any{"teamId": emvercel.DefaultTeamID, "apiUrl": h.Emu.URL() + emvercel.APIPrefix,
		"token": emvercel.DefaultToken, "projectId": proj.ID, "projectName": "open-inspect-unit", "source": src,
		"variablesDigest": proj.Properties.Get("variablesDigest").AsString()})
	deployments := func() []emvercel.DeploymentEntry { return project(h, "open-inspect-unit").Deployments }

	h.Emu.InjectFault(emulator.Fault{Route: "GET " + emvercel.APIPrefix + "/v13/deployments/{idOrUrl}",
		Kind: emulator.FaultServerError, Status: 502, Times: 1})
	_, err = h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.Error(t, err, "the first read failed")
	require.Len(t, deployments(), 1)
	started := deployments()[0].ID

	h.Emu.ResetCounts()
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	assert.Equal(t, started, created.ID, "the deployment the interrupted create started, adopted")
	assert.Zero(t, int(created.Properties.Get("uploaded").AsNumber()))
	assert.Zero(t, h.Emu.Counts()["POST "+emvercel.APIPrefix+"/v13/deployments"], "no deployment created")
	require.Len(t, deployments(), 1)
	assert.Equal(t, "READY", deployments()[0].State)
	assert.NotEmpty(t, deployments()[0].Aliases)
	assert.NotEmpty(t, created.Properties.Get("digest").AsString(), "recorded as deployed: no change next time")

	write("packages/web/src/app/page.tsx", `export default function Page() { return "changed" }`)
	changed, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	write("packages/web/src/app/page.tsx", `export default function Page() { return null }`)
	back, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: changed.Properties, Inputs: inputs})
	require.NoError(t, err)
	require.Len(t, deployments(), 3, "the first source's deployment is no longer production: deployed again")
	assert.Equal(t, deployments()[2].ID, back.Properties.Get("deploymentId").AsString())
	assert.NotEmpty(t, deployments()[2].Aliases, "the new one holds the production alias")
	assert.Equal(t, started, deployments()[0].ID)
	assert.Equal(t, deployments()[0].Meta, deployments()[2].Meta, "both carry the marker of the same digest")
}

func client(t *testing.T, h *providertest.Harness) *vercelapi.Client {
	t.Helper()
	cl, err := vercelapi.New(h.Emu.URL()+emvercel.APIPrefix, emvercel.DefaultToken, emvercel.DefaultTeamID)
	require.NoError(t, err)
	return cl
}

func vercelSettings(root string) vercelapi.ProjectSettings {
	return vercelapi.ProjectSettings{Framework: "nextjs", RootDirectory: root,
		InstallCommand: "cd ../.. && npm install && npm run build -w @open-inspect/shared", BuildCommand: "next build"}
}

func envPlain(v string) vercelapi.Env {
	return vercelapi.Env{Value: v, Type: "plain", Target: vercelapi.Targets}
}

// TestVercelProjectFinishesAfterAFailure: a create that fails after the
// project exists (a variable refused by a 500) leaves the project in state
// as partly created; the next update creates the variables left, none
// twice, and attaches the domain; a deployment of a project with a domain
// has https://<domain> as its production URL.
func TestVercelProjectFinishesAfterAFailure(t *testing.T) {
	h := harness(t)
	u := providertest.URN(vercel.VercelProjectToken, "project")
	inputs := providertest.Props(t, projectInputs(h, map[string]any{"domain": "inspect.example.com"}))
	h.Emu.InjectFault(emulator.Fault{Route: "POST " + emvercel.APIPrefix + "/v10/projects/{idOrName}/env",
		Kind: emulator.FaultServerError, Status: 500, After: 1, Times: 1})
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.Error(t, err)
	require.NotNil(t, created.PartialState, "partly created: the next up updates it")
	proj := project(h, "open-inspect-unit")
	require.NotNil(t, proj, "the project exists")
	require.Equal(t, created.ID, proj.ID)
	require.Len(t, proj.Env, 1, "one variable before the failure")
	// The engine keeps the partial state; the next up updates with it.
	finished, err := h.Server.Update(p.UpdateRequest{ID: proj.ID, Urn: u, State: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	proj = project(h, "open-inspect-unit")
	require.Len(t, proj.Env, 3, "every variable once: %+v", proj.Env)
	assert.Equal(t, []string{"inspect.example.com"}, proj.Domains)
	assert.Equal(t, 3, finished.Properties.Get("variableIds").AsMap().Len())
}
