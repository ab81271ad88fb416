package sandbox_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// e2bRecoveryCase is the start each recovery test shares: a harness whose
// emulator runs with opts, and the URN and inputs of a template built from
// the fixture checkout. The build installs the e2b SDK from PyPI on a cold
// cache, so -short skips it.
func e2bRecoveryCase(t *testing.T, opts emulator.Options) (*providertest.Harness, resource.URN, property.Map) {
	t.Helper()
	if testing.Short() {
		t.Skip("installs the e2b SDK from PyPI on a cold cache; -short skips it")
	}
	h := providertest.NewHarnessWith(t, opts)
	u := providertest.URN(sandbox.E2bTemplateToken, "sandbox")
	inputs := providertest.Props(t, map[string]any{"source": fixturePackages(t, "e2b-infra", "sandbox-runtime"),
		"namePrefix": "oi-a-sandbox", "apiUrl": h.Emu.URL() + e2b.APIPrefix, "apiKey": e2b.DefaultAPIKey})
	return h, u, inputs
}

// A create whose state was never written (the engine killed after the
// build, or the state lost) finds the ready template of its own digest
// name and adopts it: the same template, no second build. A pre-warm
// sandbox the killed builder left running is killed; a session's sandbox
// of the template is not.
func TestE2bTemplateAdoptsItsOwnReadyTemplate(t *testing.T) {
	h, u, inputs := e2bRecoveryCase(t, emulator.Options{})

	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	templates := h.Emu.Inventory().E2B.Templates
	require.Len(t, templates, 1)
	require.Len(t, templates[0].Builds, 1)

	assert.Empty(t, h.Emu.Inventory().E2B.Sandboxes, "the builder killed its own pre-warm")
	name := created.Properties.Get("name").AsString()
	prewarm, err := h.Emu.E2B().CreateSandbox(e2b.SandboxSpec{Template: name, Metadata: map[string]string{"purpose": "template-prewarm"}})
	require.NoError(t, err)
	session, err := h.Emu.E2B().CreateSandbox(e2b.SandboxSpec{Template: name, Metadata: map[string]string{"openinspect_session_id": "s-1"}})
	require.NoError(t, err)

	again, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	assert.Equal(t, created.ID, again.ID)
	var left []string
	for _, sb := range h.Emu.Inventory().E2B.Sandboxes {
		left = append(left, sb.ID)
	}
	assert.Equal(t, []string{session}, left, "the pre-warm %s killed, the session's kept", prewarm)
	assert.Equal(t, created.Properties.Get("e2bTemplateId").AsString(), again.Properties.Get("e2bTemplateId").AsString())
	assert.Equal(t, "ready", again.Properties.Get("status").AsString())
	templates = h.Emu.Inventory().E2B.Templates
	require.Len(t, templates, 1)
	assert.Len(t, templates[0].Builds, 1, "adopted, not built a second time")
}

// A create that finds its digest-named template still building (a killed
// up's build, which E2B goes on with) waits for that build and adopts it:
// no second build is requested.
func TestE2bTemplateWaitsForARunningBuild(t *testing.T) {
	h, u, inputs := e2bRecoveryCase(t, emulator.Options{E2B: e2b.Options{BuildTime: 4 * time.Second}})
	preview, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs, DryRun: true})
	require.NoError(t, err)
	name := preview.Properties.Get("name").AsString()

	// The earlier run's build: requested and started, then left to E2B.
	call := func(path, body string) map[string]any {
		req, err := http.NewRequest("POST", h.Emu.URL()+e2b.APIPrefix+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-API-Key", e2b.DefaultAPIKey)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Less(t, resp.StatusCode, 300, "%s answered %s", path, resp.Status)
		out := map[string]any{}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return out
	}
	build := call("/v3/templates", `{"name":"`+name+`"}`)
	call(fmt.Sprintf("/v2/templates/%s/builds/%s", build["templateID"], build["buildID"]),
		`{"fromImage":"ubuntu:22.04","steps":[{"type":"RUN","args":["true"]}]}`)
	require.Equal(t, "building", h.Emu.Inventory().E2B.Templates[0].Builds[0].Status)

	createNamed(t, h, u, inputs, name, "ready")
	templates := h.Emu.Inventory().E2B.Templates
	require.Len(t, templates, 1)
	assert.Len(t, templates[0].Builds, 1, "the earlier run's build adopted, none requested again")
	assert.Equal(t, 1, h.Emu.Counts()["POST "+e2b.APIPrefix+"/v3/templates"], "only the earlier run's request")
}

// A create that finds its digest-named template with a build requested and
// never started (a killed up's builder died uploading the files; E2B keeps
// such a build waiting) deletes that template, which never built, and
// builds it anew: one build, ready.
func TestE2bTemplateReplacesABuildThatNeverStarted(t *testing.T) {
	h, u, inputs := e2bRecoveryCase(t, emulator.Options{})
	preview, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs, DryRun: true})
	require.NoError(t, err)
	name := preview.Properties.Get("name").AsString()
	req, err := http.NewRequest("POST", h.Emu.URL()+e2b.APIPrefix+"/v3/templates", strings.NewReader(`{"name":"`+name+`"}`))
	require.NoError(t, err)
	req.Header.Set("X-API-Key", e2b.DefaultAPIKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.Equal(t, "waiting", h.Emu.Inventory().E2B.Templates[0].Builds[0].Status)

	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	assert.Equal(t, "ready", created.Properties.Get("status").AsString())
	templates := h.Emu.Inventory().E2B.Templates
	require.Len(t, templates, 1)
	require.Len(t, templates[0].Builds, 1, "the never-started build went with its template")
	assert.Equal(t, "ready", templates[0].Builds[0].Status)
	assert.Equal(t, templates[0].ID, created.Properties.Get("e2bTemplateId").AsString())
}
