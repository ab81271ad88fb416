package engine

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
)

const (
	vercelWebProject   = "open-inspect-engine"
	vercelOtherProject = "open-inspect-other"
	vercelFilesRoute   = "POST /vercel/api/v2/files"
	vercelCreateRoute  = "POST /vercel/api/v13/deployments"
	vercelEnvPatch     = "PATCH /vercel/api/v9/projects/{idOrName}/env/{id}"
)

// newVercelWebTest is examples/yaml-vercel against the emulator's Vercel
// API, from the fixture checkout.
func newVercelWebTest(t tb, emu *emulatorProcess) *pulumitest.PulumiTest {
	t.Helper()
	pt := newYAMLTest(t, filepath.Join(repoRoot(), "examples", "yaml-vercel"), emu)
	pt.SetConfig(t, "upstreamCheckout", filepath.Join(repoRoot(), "tests", "fixtures", "upstream"))
	setInstallationSecrets(t, pt.CurrentStack())
	require.NoError(t, pt.CurrentStack().SetConfig(t.Context(), "vercelToken", auto.ConfigValue{Value: vercel.DefaultToken, Secret: true}))
	pt.SetConfig(t, "vercelTeamId", vercel.DefaultTeamID)
	pt.SetConfig(t, "vercelApiUrl", emu.url+vercel.APIPrefix)
	return pt
}

// fixtureWebSource counts the files of the fixture checkout Vercel's
// build needs: the web and shared packages (without the Cloudflare build
// under .open-next), the root manifest and lock.
func fixtureWebSource(t *testing.T) int {
	t.Helper()
	root := filepath.Join(repoRoot(), "tests", "fixtures", "upstream")
	n := 2 // package.json, package-lock.json
	for _, dir := range []string{"packages/shared", "packages/web"} {
		require.NoError(t, filepath.WalkDir(filepath.Join(root, dir), func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".open-next" {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				n++
			}
			return nil
		}))
	}
	return n
}

// vercelProject is the emulator's record of one project.
func (e *emulatorProcess) vercelProject(t *testing.T, name string) vercel.ProjectEntry {
	t.Helper()
	for _, p := range e.inventory(t).Vercel.Projects {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no Vercel project %s in the emulator", name)
	return vercel.ProjectEntry{}
}

// vercelPost calls the emulator's Vercel API as another client would.
func (e *emulatorProcess) vercelPost(t *testing.T, path string, body any) int {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, e.url+vercel.APIPrefix+path, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+vercel.DefaultToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode
}

// TestOpenInspectWebOnVercel deploys examples/yaml-vercel, the full
// installation with web.platform vercel, to the emulator: the project
// open-inspect-engine has upstream's settings and its six variables (one
// sensitive) for production and preview; the fixture's web source is
// uploaded once; the production deployment is ready, and its URL is webUrl
// and the control plane's WEB_APP_URL and answers the page Vercel's build
// made with this installation's values. A second up makes zero Vercel
// calls; a new appName updates that one variable in place (the preview
// names it) and makes one new deployment that uploads no file; destroy
// removes the project and leaves another installation's project in the
// same team.
func TestOpenInspectWebOnVercel(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	require.Equal(t, http.StatusOK, emu.vercelPost(t, "/v11/projects", map[string]any{"name": vercelOtherProject, "framework": "nextjs"}),
		"another installation's project in the same team")
	require.Equal(t, http.StatusCreated, emu.vercelPost(t, "/v10/projects/"+vercelOtherProject+"/env", map[string]any{
		"key": "NEXT_PUBLIC_APP_NAME", "value": "Other", "type": "plain", "target": []string{"production", "preview"}}))
	pt := newVercelWebTest(t, emu)
	pt.SetConfig(t, "openinspect:cacheDir", t.TempDir())

	up := previewUp(t, pt, func() { emu.resetCounts(t) })
	_, counts := emu.callsUnder(t, "/vercel/")
	files := fixtureWebSource(t)

	p := emu.vercelProject(t, vercelWebProject)
	assert.Equal(t, vercel.DefaultTeamID, p.Team)
	assert.Equal(t, "nextjs", p.Framework)
	assert.Equal(t, "packages/web", p.RootDirectory)
	assert.Equal(t, "cd ../.. && npm install && npm run build -w @open-inspect/shared", p.InstallCommand)
	assert.Equal(t, "next build", p.BuildCommand)
	env := map[string]vercel.EnvEntry{}
	for _, e := range p.Env {
		env[e.Key] = e
		assert.ElementsMatch(t, []string{"production", "preview"}, e.Targets, e.Key)
	}
	require.Len(t, env, 6, "%+v", p.Env)
	wsURL := workerWebSocket(emu.url, controlPlaneScript)
	for key, want := range map[string]string{
		"CONTROL_PLANE_URL":            emu.workerURL(controlPlaneScript),
		"NEXT_PUBLIC_WS_URL":           wsURL,
		"NEXT_PUBLIC_SANDBOX_PROVIDER": "modal",
		"NEXT_PUBLIC_APP_NAME":         "Open-Inspect",
		"NEXT_PUBLIC_APP_ICON_URL":     "",
	} {
		assert.Equal(t, "plain", env[key].Type, key)
		assert.Equal(t, want, env[key].Value, key)
	}
	assert.Equal(t, "sensitive", env["SERVICE_AUTH_SECRET"].Type)
	assert.Empty(t, env["SERVICE_AUTH_SECRET"].Value, "a sensitive value is never shown")

	require.Len(t, p.Deployments, 1)
	d := p.Deployments[0]
	assert.Equal(t, "READY", d.State)
	assert.Equal(t, "production", d.Target)
	assert.Equal(t, files, d.Files)
	assert.Equal(t, files, emu.inventory(t).Vercel.Uploads[vercel.DefaultTeamID], "every source file uploaded once")
	assert.Equal(t, files, counts[vercelFilesRoute], "%v", counts)
	assert.Equal(t, 2, counts[vercelCreateRoute], "one create answered missing_files, one after the uploads: %v", counts)

	webURL := up.Outputs["webUrl"].Value.(string)
	require.NotEmpty(t, d.Aliases)
	assert.Equal(t, "http://"+d.Aliases[0], webURL, "webUrl is the production alias")
	assert.True(t, strings.HasPrefix(webURL, "http://"+vercelWebProject+vercel.LocalSuffix+":"), webURL)
	assert.Equal(t, webURL, emu.workerBindings(t, controlPlaneScript)["WEB_APP_URL"]["text"],
		"the control plane's web origin is the Vercel production URL")
	assert.Equal(t, "vercel", webPlatform(t, pt))
	status, page := get(t, webURL)
	require.Equal(t, http.StatusOK, status, "%s", page)
	assert.Contains(t, page, "<title>Open-Inspect</title>")
	assert.Contains(t, page, `data-ws-url="`+wsURL+`"`, "Vercel's build inlined this installation's WebSocket URL")
	requireNoPlaintext(t, pt.CurrentStack(), vercel.DefaultToken)

	previewUp(t, pt, func() { emu.resetCounts(t) })
	calls, counts := emu.callsUnder(t, "/vercel/")
	assert.Zero(t, calls, "an unchanged installation makes no Vercel call: %v", counts)

	editProgram(t, pt, func(program string) string {
		return strings.Replace(program, componentProperties, componentProperties+"      appName: Acme Inspect\n", 1)
	})
	preview := pt.Preview(t)
	assert.Contains(t, preview.StdOut, "vercel project "+vercelWebProject+": updated in place: variables NEXT_PUBLIC_APP_NAME")
	assert.Contains(t, preview.StdOut, "a new production deployment because of the variables")
	emu.resetCounts(t)
	pt.Up(t)
	_, counts = emu.callsUnder(t, "/vercel/")
	assert.Equal(t, 1, counts[vercelEnvPatch], "one variable updated in place: %v", counts)
	assert.Zero(t, counts[vercelFilesRoute], "no unchanged file uploaded again: %v", counts)
	assert.Equal(t, 1, counts[vercelCreateRoute], "one new deployment, nothing missing: %v", counts)
	after := emu.vercelProject(t, vercelWebProject)
	require.Len(t, after.Deployments, 2)
	assert.Equal(t, "READY", after.Deployments[1].State)
	for _, e := range after.Env {
		assert.Equal(t, env[e.Key].ID, e.ID, "%s keeps its ID: updated in place", e.Key)
		if e.Key == "NEXT_PUBLIC_APP_NAME" {
			assert.Equal(t, "Acme Inspect", e.Value)
		} else {
			assert.Equal(t, env[e.Key].UpdatedAt, e.UpdatedAt, "%s is not touched", e.Key)
		}
	}
	assert.Equal(t, files, emu.inventory(t).Vercel.Uploads[vercel.DefaultTeamID])
	_, page = get(t, webURL)
	assert.Contains(t, page, "<title>Acme Inspect</title>", "the production URL serves the new deployment")

	// A failed build fails the up with Vercel's message; the last good
	// deployment keeps serving, and the next up deploys again.
	const reason = "Type error: Cannot find name 'x' (arranged by the test)"
	emu.adminPost(t, "vercel/deployments/build-failures", map[string]any{"reason": reason}, nil)
	editProgram(t, pt, func(program string) string {
		return strings.Replace(program, "appName: Acme Inspect", "appName: Beta Inspect", 1)
	})
	_, err := pt.CurrentStack().Up(t.Context()) // up directly: this update is about failing
	require.Error(t, err)
	assert.Contains(t, err.Error(), reason)
	assert.NotContains(t, err.Error(), vercel.DefaultToken)
	_, page = get(t, webURL)
	assert.Contains(t, page, "<title>Acme Inspect</title>", "the last good deployment keeps serving")
	previewUp(t, pt)
	_, page = get(t, webURL)
	assert.Contains(t, page, "<title>Beta Inspect</title>", "the next up deployed again")

	pt.Destroy(t)
	var left []string
	for _, p := range emu.inventory(t).Vercel.Projects {
		left = append(left, p.Name)
	}
	assert.Equal(t, []string{vercelOtherProject}, left, "destroy removed this installation's project, not the other's")
	assert.False(t, slices.Contains(left, vercelWebProject))
	other := emu.vercelProject(t, vercelOtherProject)
	require.Len(t, other.Env, 1, "the other installation's variables are untouched")
	assert.Equal(t, "Other", other.Env[0].Value)
}

// TestOpenInspectWebOnVercelFromEmbeddedArtefacts: with no upstream input,
// the web source Vercel builds comes from the artefacts the plugin embeds
// (the release step carried the fixture's web source), and the production
// deployment is ready with every file of it.
func TestOpenInspectWebOnVercelFromEmbeddedArtefacts(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	plugins := buildEmbeddingPlugin(t)
	emu := startEmulator(t)
	pt := newYAMLTestWith(t, filepath.Join(repoRoot(), "examples", "yaml-vercel"), emu, plugins)
	setInstallationSecrets(t, pt.CurrentStack())
	require.NoError(t, pt.CurrentStack().SetConfig(t.Context(), "vercelToken", auto.ConfigValue{Value: vercel.DefaultToken, Secret: true}))
	pt.SetConfig(t, "vercelTeamId", vercel.DefaultTeamID)
	pt.SetConfig(t, "vercelApiUrl", emu.url+vercel.APIPrefix)
	pt.SetConfig(t, "openinspect:cacheDir", t.TempDir())
	editProgram(t, pt, func(program string) string {
		return strings.Replace(program, "      upstream:\n        checkout: ${upstreamCheckout}\n        allowUnverified: ${allowUnverified}\n", "", 1)
	})
	up := previewUp(t, pt)
	p := emu.vercelProject(t, vercelWebProject)
	require.Len(t, p.Deployments, 1)
	assert.Equal(t, "READY", p.Deployments[0].State)
	assert.Equal(t, fixtureWebSource(t), p.Deployments[0].Files, "every web source file, from the embedded set")
	status, page := get(t, up.Outputs["webUrl"].Value.(string))
	assert.Equal(t, http.StatusOK, status, "%s", page)
	pt.Destroy(t)
	assert.Empty(t, emu.inventory(t).Vercel.Projects)
}
