package tenant_test

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/internal/web/vercelapi"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/opencomputer"
	emvercel "github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// fakePython writes an interpreter that answers the version probe with
// version.
func fakePython(t *testing.T, version string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "python3")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\necho "+version+"\n"), 0o755))
	return path
}

// The lock's preflight refuses, before any child exists, what the
// installation's first writes would otherwise meet: each credential the
// installation uses, read once (the sandbox backend's key among them), and
// the Python the Modal deploy runs with.
// It refuses in the lock's preview (a preview of the installation) and in
// its create (an up without a preview), with reads only, each problem
// naming its configuration key or field and what to set; a lock whose
// preflight did not change makes no call.
func TestNameLockPreflightRefusesBeforeAnyChild(t *testing.T) {
	h := providertest.NewHarness(t)
	vercelAPI := h.Emu.URL() + emvercel.APIPrefix
	goodPython := property.New(fakePython(t, "3.12.4"))
	u := providertest.URN("openinspect:index:NameLock", "names")
	lock := func(preflight map[string]any) property.Map {
		return providertest.Props(t, map[string]any{"namePrefix": "oi", "deploymentName": "prod", "preflight": preflight})
	}
	vercelWeb := func(token, team, project string) map[string]any {
		return map[string]any{"token": property.New(token).WithSecret(true), "teamId": team, "projectName": project, "apiUrl": vercelAPI}
	}
	// The sandbox backends' keys: each its own API on the emulator.
	daytonaKey := func(key string) map[string]any {
		return map[string]any{"sandbox": map[string]any{"provider": "daytona", "key": property.New(key).WithSecret(true),
			"apiUrl": h.Emu.URL() + daytona.APIPrefix}}
	}
	e2bKey := func(key string) map[string]any {
		return map[string]any{"sandbox": map[string]any{"provider": "e2b", "key": property.New(key).WithSecret(true),
			"apiUrl": h.Emu.URL() + e2b.APIPrefix}}
	}
	openComputerKey := func(key string) map[string]any {
		return map[string]any{"sandbox": map[string]any{"provider": "opencomputer", "key": property.New(key).WithSecret(true),
			"apiUrl": h.Emu.URL() + opencomputer.APIPrefix}}
	}
	vercelSandbox := func(token, team, project string) map[string]any {
		return map[string]any{"sandbox": map[string]any{"provider": "vercel", "key": property.New(token).WithSecret(true),
			"teamId": team, "projectId": project, "apiUrl": vercelAPI}}
	}
	everything := map[string]any{"cloudflare": true, "python": true, "modal": map[string]any{},
		"vercelWeb": vercelWeb(emvercel.DefaultToken, emvercel.DefaultTeamID, "oi-prod"),
		"sandbox":   daytonaKey(daytona.DefaultAPIKey)["sandbox"]}
	// The wrong secrets the cases give: none may be quoted.
	wrongSecrets := []string{"not-the-token", "not-a-vercel-token", "as-wrong", "dtn-not-the-key", "e2b_not_the_key",
		"oc_not_the_key", "vercel-sandbox-not-the-token"}
	// Modal's reads: the token's exchange, the environment's lookup (no
	// creation type: nothing is created) and the workspace's name.
	modalReads := []string{"AuthTokenGet", "EnvironmentGetOrCreate", "WorkspaceNameLookup"}
	onlyReads := func(what string) {
		t.Helper()
		for route, n := range h.Emu.Counts() {
			method, path, _ := strings.Cut(route, " ")
			if method == "grpc" {
				assert.Contains(t, modalReads, path[strings.LastIndex(path, "/")+1:], "%s: only reads were made: %s x%d", what, route, n)
				continue
			}
			assert.Contains(t, []string{"GET", "HEAD"}, method, "%s: only reads were made: %s x%d", what, route, n)
		}
	}

	// A taken project: one holding a variable, as another installation's would.
	vc, err := vercelapi.New(vercelAPI, emvercel.DefaultToken, emvercel.DefaultTeamID)
	require.NoError(t, err)
	taken, err := vc.CreateProject(t.Context(), "someone-elses", vercelapi.ProjectSettings{Framework: "nextjs"})
	require.NoError(t, err)
	_, err = vc.CreateEnv(t.Context(), taken.ID, vercelapi.Env{Key: "K", Value: "v", Type: "plain", Target: []string{"production"}})
	require.NoError(t, err)
	// The project Vercel Sandbox runs in, by its ID as the console shows it.
	sandboxProject, err := vc.CreateProject(t.Context(), "oi-sandboxes", vercelapi.ProjectSettings{})
	require.NoError(t, err)

	for _, tc := range []struct {
		name      string
		config    map[string]property.Value
		preflight map[string]any
		want      string
		noCall    bool
	}{
		{"malformed account ID", map[string]property.Value{"cloudflareAccountId": property.New("My-Account")},
			map[string]any{"cloudflare": true}, "openinspect:cloudflareAccountId (or CLOUDFLARE_ACCOUNT_ID): \"My-Account\" is not a Cloudflare account ID", true},
		{"wrong Cloudflare token", map[string]property.Value{"cloudflareApiToken": property.New("not-the-token").WithSecret(true)},
			map[string]any{"cloudflare": true}, "openinspect:cloudflareApiToken (or CLOUDFLARE_API_TOKEN): Cloudflare refused the token", false},
		{"account the token cannot reach", map[string]property.Value{"cloudflareAccountId": property.New(strings.Repeat("ab", 16))},
			map[string]any{"cloudflare": true}, "openinspect:cloudflareAccountId (or CLOUDFLARE_ACCOUNT_ID): the API token cannot reach account", false},
		{"wrong Modal token", map[string]property.Value{"modalTokenSecret": property.New("as-wrong").WithSecret(true), "pythonPath": goodPython},
			map[string]any{"python": true, "modal": map[string]any{}}, "openinspect:modalTokenId and openinspect:modalTokenSecret (or MODAL_TOKEN_ID and MODAL_TOKEN_SECRET): Modal refused the token", false},
		{"Modal environment name Modal refuses", map[string]property.Value{"pythonPath": goodPython},
			map[string]any{"modal": map[string]any{"environment": strings.Repeat("é", 300), "field": "sandbox.modal.environment"}},
			"sandbox.modal.environment: Modal refuses the environment name", false},
		{"Python too old", map[string]property.Value{"pythonPath": property.New(fakePython(t, "3.10.12"))},
			map[string]any{"python": true}, "openinspect:pythonPath (or OPENINSPECT_PYTHON): the sandbox's Modal deploy or image build runs with Python 3.12.0 or newer", true},
		{"Python missing", map[string]property.Value{"pythonPath": property.New(filepath.Join(t.TempDir(), "no-python"))},
			map[string]any{"python": true}, "set openinspect:pythonPath to the path of one", true},
		{"wrong Vercel token", nil, map[string]any{"vercelWeb": vercelWeb("not-a-vercel-token", emvercel.DefaultTeamID, "oi-prod")},
			"web.vercel.token: Vercel refused the token", false},
		{"Vercel team the token cannot reach", nil, map[string]any{"vercelWeb": vercelWeb(emvercel.DefaultToken, "team_other", "oi-prod")},
			"web.vercel.teamId: the token has no access to team team_other", false},
		{"taken Vercel project name", nil, map[string]any{"vercelWeb": vercelWeb(emvercel.DefaultToken, emvercel.DefaultTeamID, "someone-elses")},
			"web.vercel.projectName: team " + emvercel.DefaultTeamID + " already has a project named \"someone-elses\"", false},
		{"wrong Daytona key", nil, daytonaKey("dtn-not-the-key"),
			"sandbox.daytona.apiKey: Daytona at " + h.Emu.URL() + daytona.APIPrefix + " refused the API key", false},
		{"wrong E2B key", nil, e2bKey("e2b_not_the_key"),
			"sandbox.e2b.apiKey: E2B at " + h.Emu.URL() + e2b.APIPrefix + " refused the API key (401 Invalid API key", false},
		{"wrong OpenComputer key", nil, openComputerKey("oc_not_the_key"),
			"sandbox.opencomputer.apiKey: OpenComputer at " + h.Emu.URL() + opencomputer.APIPrefix + " refused the API key (401", false},
		{"wrong Vercel Sandbox token", nil, vercelSandbox("vercel-sandbox-not-the-token", emvercel.DefaultTeamID, sandboxProject.ID),
			"sandbox.vercel.token: Vercel refused the token", false},
		{"Vercel Sandbox team the token cannot reach", nil, vercelSandbox(emvercel.DefaultToken, "team_other", sandboxProject.ID),
			"sandbox.vercel.teamId: the token has no access to team team_other", false},
		{"Vercel Sandbox project the team lacks", nil, vercelSandbox(emvercel.DefaultToken, emvercel.DefaultTeamID, "prj_elsewhere"),
			"sandbox.vercel.projectId: Vercel has no project \"prj_elsewhere\" in team " + emvercel.DefaultTeamID, false},
		{"sandbox key over plain http to another host", nil, map[string]any{"sandbox": map[string]any{"provider": "e2b",
			"key": property.New("e2b_not_the_key").WithSecret(true), "apiUrl": "http://e2b.example.com"}},
			"preflight.sandbox.apiUrl: \"http://e2b.example.com\" is plain http to another host: the key would travel unencrypted", true},
		{"unknown sandbox backend", nil, map[string]any{"sandbox": map[string]any{"provider": "modal", "key": property.New("k").WithSecret(true)}},
			"preflight.sandbox.provider: \"modal\" is not a sandbox backend the lock checks", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := h.AnotherServer(t, tc.config)
			for _, preview := range []bool{true, false} {
				h.Emu.ResetCounts()
				_, err := server.Create(p.CreateRequest{Urn: u, Properties: lock(tc.preflight), DryRun: preview})
				require.Error(t, err, "preview %v", preview)
				assert.Contains(t, err.Error(), tc.want, "preview %v", preview)
				for _, s := range wrongSecrets {
					assert.NotContains(t, err.Error(), s, "no secret is quoted")
				}
				onlyReads(tc.name)
				if tc.noCall {
					assert.Empty(t, h.Emu.Counts(), "refused with no call")
					assert.Zero(t, h.Emu.Vercel().Calls(), "refused with no call")
				}
			}
		})
	}

	// Each sandbox backend's right key: one read of its own API, the lock
	// created.
	for name, tc := range map[string]struct {
		preflight map[string]any
		calls     func() int
	}{
		"daytona":                         {daytonaKey(daytona.DefaultAPIKey), h.Emu.Daytona().Calls},
		"e2b":                             {e2bKey(e2b.DefaultAPIKey), h.Emu.E2B().Calls},
		"opencomputer":                    {openComputerKey(opencomputer.DefaultAPIKey), h.Emu.OpenComputer().Calls},
		"vercel":                          {vercelSandbox(emvercel.DefaultToken, emvercel.DefaultTeamID, sandboxProject.ID), h.Emu.Vercel().Calls},
		"vercel by the token's own scope": {vercelSandbox(emvercel.DefaultToken, "", sandboxProject.ID), h.Emu.Vercel().Calls},
	} {
		server := h.AnotherServer(t, nil)
		for _, preview := range []bool{true, false} {
			h.Emu.ResetCounts()
			_, err := server.Create(p.CreateRequest{Urn: u, Properties: lock(tc.preflight), DryRun: preview})
			require.NoError(t, err, "%s's right key, preview %v", name, preview)
			assert.Equal(t, 1, tc.calls(), "%s: one read of its API", name)
			onlyReads(name)
		}
	}

	// Everything right: the lock is created; unchanged, it calls nothing;
	// a changed part is checked again, alone, in the update's preview.
	server := h.AnotherServer(t, map[string]property.Value{"pythonPath": goodPython})
	h.Emu.ResetCounts()
	_, err = server.Create(p.CreateRequest{Urn: u, Properties: lock(everything), DryRun: true})
	require.NoError(t, err)
	assert.Positive(t, h.Emu.CloudflareCalls(), "a create's preview reads the account")
	onlyReads("the preview of a good lock")
	created, err := server.Create(p.CreateRequest{Urn: u, Properties: lock(everything)})
	require.NoError(t, err)

	h.Emu.ResetCounts()
	diff, err := server.Diff(p.DiffRequest{Urn: u, ID: created.ID, State: created.Properties, Inputs: lock(everything)})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges, "the same preflight changes nothing")
	assert.Empty(t, h.Emu.Counts(), "an unchanged lock makes no call")
	assert.Zero(t, h.Emu.Vercel().Calls(), "an unchanged lock makes no call")

	moved := map[string]any{"cloudflare": true, "python": true, "modal": map[string]any{},
		"vercelWeb": vercelWeb("rotated-but-wrong", emvercel.DefaultTeamID, "oi-prod"), "sandbox": everything["sandbox"]}
	diff, err = server.Diff(p.DiffRequest{Urn: u, ID: created.ID, State: created.Properties, Inputs: lock(moved)})
	require.NoError(t, err)
	require.True(t, diff.HasChanges)
	assert.Equal(t, p.Update, diff.DetailedDiff["preflight"].Kind, "a changed credential updates the lock, never replaces it")
	_, err = server.Update(p.UpdateRequest{Urn: u, ID: created.ID, State: created.Properties, Inputs: lock(moved), DryRun: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "web.vercel.token: Vercel refused the token")
	assert.Zero(t, h.Emu.CloudflareCalls(), "what did not change is not read again")
	assert.Zero(t, h.Emu.Daytona().Calls(), "what did not change is not read again")

	// A rotated sandbox key is read again, alone.
	h.Emu.ResetCounts()
	rotated := maps.Clone(everything)
	rotated["sandbox"] = daytonaKey("dtn-not-the-key")["sandbox"]
	diff, err = server.Diff(p.DiffRequest{Urn: u, ID: created.ID, State: created.Properties, Inputs: lock(rotated)})
	require.NoError(t, err)
	require.True(t, diff.HasChanges, "a changed sandbox key changes the lock")
	assert.Equal(t, p.Update, diff.DetailedDiff["preflight"].Kind)
	_, err = server.Update(p.UpdateRequest{Urn: u, ID: created.ID, State: created.Properties, Inputs: lock(rotated), DryRun: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sandbox.daytona.apiKey: Daytona at "+h.Emu.URL()+daytona.APIPrefix+" refused the API key")
	assert.NotContains(t, err.Error(), "dtn-not-the-key")
	assert.Equal(t, 1, h.Emu.Daytona().Calls(), "the changed key alone is read")
	assert.Zero(t, h.Emu.CloudflareCalls(), "what did not change is not read again")
	assert.Zero(t, h.Emu.Vercel().Calls(), "what did not change is not read again")

	// A lock recorded before the preflight existed stays unchanged.
	old := providertest.Props(t, map[string]any{"namePrefix": "oi", "deploymentName": "prod", "installationId": "oi" + strings.Repeat("0", 32)})
	diff, err = server.Diff(p.DiffRequest{Urn: u, ID: created.ID, State: old, Inputs: lock(everything)})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges, "an upgraded plugin's first preview of an unchanged installation changes nothing")
}
