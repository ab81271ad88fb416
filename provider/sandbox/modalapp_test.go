package sandbox_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapitest"

	modal "github.com/modal-labs/libmodal/modal-go"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	emumodal "github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

const (
	publishRoute = "grpc /modal.client.ModalClient/AppPublish"
	upsertRoute  = "grpc /modal.client.ModalClient/SecretGetOrCreate"
	apiSecret    = "modal-api-secret-7f3a9c0e5b1d"
)

// checkoutCopy copies the fixture checkout's two Modal packages into a
// temporary checkout, so a test can change a source file.
func checkoutCopy(t *testing.T) string {
	t.Helper()
	src := filepath.Join(providertest.FixtureCheckout(t), "packages")
	root := t.TempDir()
	for _, pkg := range []string{"modal-infra", "sandbox-runtime"} {
		base := filepath.Join(src, pkg)
		require.NoError(t, filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, path)
			dst := filepath.Join(root, "packages", rel)
			if d.IsDir() {
				if d.Name() == "__pycache__" {
					return filepath.SkipDir
				}
				return os.MkdirAll(dst, 0o755)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		}))
	}
	return root
}

func modalInputs(t *testing.T, checkout, dbID, anthropicKey string) property.Map {
	t.Helper()
	secret := func(values map[string]string) property.Value {
		m := map[string]property.Value{}
		for k, v := range values {
			m[k] = property.New(v).WithSecret(true)
		}
		return property.New(m)
	}
	secrets := property.New([]property.Value{
		property.New(map[string]property.Value{"name": property.New("llm-api-keys"),
			"values": secret(map[string]string{"ANTHROPIC_API_KEY": anthropicKey})}),
		property.New(map[string]property.Value{"name": property.New("github-app"),
			"values": secret(map[string]string{"GITHUB_APP_ID": "123", "GITHUB_APP_INSTALLATION_ID": "456", "GITHUB_APP_PRIVATE_KEY": "pem"})}),
		property.New(map[string]property.Value{"name": property.New("internal-api"),
			"values": secret(map[string]string{"MODAL_API_SECRET": apiSecret, "ALLOWED_CONTROL_PLANE_HOSTS": "cp.example.workers.dev"})}),
	})
	return providertest.Props(t, map[string]any{"source": checkout, "d1DatabaseId": dbID}).Set("secrets", secrets)
}

// recordImage builds an image in the app as the control plane would and
// records it in the installation's D1 database.
func recordImage(t *testing.T, h *providertest.Harness, env, dbID string) string {
	t.Helper()
	t.Setenv("MODAL_SERVER_URL", h.Emu.URL())
	t.Setenv("MODAL_CONFIG_PATH", filepath.Join(t.TempDir(), "none.toml"))
	c, err := modal.NewClientWithOptions(&modal.ClientParams{TokenID: emumodal.DefaultTokenID,
		TokenSecret: emumodal.DefaultTokenSecret, Environment: env})
	require.NoError(t, err)
	defer c.Close()
	app, err := c.Apps.FromName(t.Context(), "open-inspect", &modal.AppFromNameParams{Environment: env})
	require.NoError(t, err)
	img, err := c.Images.FromRegistry("python:3.12-slim", nil).DockerfileCommands([]string{"RUN echo " + env + dbID}, nil).Build(t.Context(), app)
	require.NoError(t, err)
	_, err = cfapitest.Client(t, h).Query(t.Context(), dbID, "INSERT INTO image_builds (id, provider, provider_image_id) VALUES (?, 'modal', ?)", "b-"+env, img.ImageID)
	require.NoError(t, err)
	return img.ImageID
}

func newInstallationDB(t *testing.T, h *providertest.Harness) string {
	t.Helper()
	client, dbID := cfapitest.NewDatabase(t, h)
	_, err := client.Query(t.Context(), dbID, "CREATE TABLE image_builds (id TEXT PRIMARY KEY, provider TEXT NOT NULL, provider_image_id TEXT)")
	require.NoError(t, err)
	return dbID
}

func imageExists(h *providertest.Harness, id string) bool {
	for _, img := range h.Emu.Modal().Images() {
		if img.ID == id {
			return true
		}
	}
	return false
}

// TestModalAppLifecycle deploys the fixture app with the real Modal CLI into
// the emulator twice (two installations, two environments of one
// workspace), then walks one through no-op, secret rotation, source change
// and teardown, and checks the other is never touched.
func TestModalAppLifecycle(t *testing.T) {
	h := providertest.NewHarness(t, provider.WithModalApp(&sandbox.ModalApp{HealthPoll: 100 * time.Millisecond}))
	h.EnableModalDeploys(t)
	checkout := checkoutCopy(t)
	u := providertest.URN(sandbox.ModalAppToken, "modal")

	// The other installation, in its own environment.
	otherDB := newInstallationDB(t, h)
	other := h.AnotherServer(t, map[string]property.Value{"modalEnvironment": property.New("staging")})
	otherCreated, err := other.Create(p.CreateRequest{Urn: u, Properties: modalInputs(t, checkout, otherDB, "sk-other")})
	require.NoError(t, err)
	otherImage := recordImage(t, h, "staging", otherDB)
	otherSandbox, err := h.Emu.Modal().CreateSandbox("", "staging", "open-inspect", map[string]string{"openinspect_kind": "session"})
	require.NoError(t, err)

	dbID := newInstallationDB(t, h)
	inputs := modalInputs(t, checkout, dbID, "sk-first")
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	state := created.Properties
	assert.Equal(t, emumodal.DefaultWorkspace, state.Get("workspace").AsString())
	assert.Equal(t, "main", state.Get("deployedEnvironment").AsString())
	assert.Empty(t, state.Get("webSuffix").AsString())
	assert.Equal(t, "1.4.3", state.Get("cliVersion").AsString())
	assert.Len(t, state.Get("endpoints").AsMap().AsMap(), 9)
	assert.Contains(t, state.Get("health").AsString(), "healthy")
	assert.Contains(t, state.Get("healthUrl").AsString(), "--open-inspect-api-health")
	assert.True(t, state.Get("secretHashes").Secret(), "digests of secret values stay secret")
	values, ok := h.Emu.Modal().SecretValues("", "main", "internal-api")
	require.True(t, ok)
	assert.Equal(t, apiSecret, values["MODAL_API_SECRET"])

	// Unchanged: no change and no Modal call.
	h.Emu.ResetCounts()
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges, "%v", diff.DetailedDiff)
	assert.Zero(t, h.Emu.Modal().Calls())

	// A second installation in the same environment is refused before anything.
	_, err = h.Server.Create(p.CreateRequest{Urn: providertest.URN(sandbox.ModalAppToken, "twin"), Properties: inputs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "adoptExisting")
	assert.Contains(t, err.Error(), `environment "main"`)

	// A rotated secret writes that secret and deploys nothing.
	rotated := modalInputs(t, checkout, dbID, "sk-rotated")
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: state, Inputs: rotated})
	require.NoError(t, err)
	assert.Equal(t, map[string]p.PropertyDiff{"secrets": {Kind: p.Update, InputDiff: true}}, diff.DetailedDiff)
	h.Emu.ResetCounts()
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: state, Inputs: rotated})
	require.NoError(t, err)
	assert.Equal(t, 1, h.Emu.Counts()[upsertRoute], "only the changed secret is written")
	assert.Zero(t, h.Emu.Counts()[publishRoute], "no redeploy")
	values, _ = h.Emu.Modal().SecretValues("", "main", "llm-api-keys")
	assert.Equal(t, "sk-rotated", values["ANTHROPIC_API_KEY"])
	state = updated.Properties

	// A changed source redeploys.
	appSource := filepath.Join(checkout, "packages", "modal-infra", "src", "app.py")
	b, err := os.ReadFile(appSource)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(appSource, append(b, []byte("\n# changed\n")...), 0o644))
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: state, Inputs: rotated})
	require.NoError(t, err)
	assert.Equal(t, map[string]p.PropertyDiff{"source": {Kind: p.Update, InputDiff: true}}, diff.DetailedDiff)
	h.Emu.ResetCounts()
	updated, err = h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: state, Inputs: rotated})
	require.NoError(t, err)
	// (The CLI itself looks the secrets up through SecretGetOrCreate, so
	// that count says nothing here.)
	assert.Equal(t, 1, h.Emu.Counts()[publishRoute], "one new version")
	assert.NotEqual(t, state.Get("sourceDigest").AsString(), updated.Properties.Get("sourceDigest").AsString())
	state = updated.Properties

	// Refresh finds it as recorded.
	read, err := h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: state, Inputs: rotated})
	require.NoError(t, err)
	assert.Equal(t, state.Get("sourceDigest"), read.Properties.Get("sourceDigest"))

	// A provider configured for another environment refuses to delete it.
	wrong := h.AnotherServer(t, map[string]property.Value{"modalEnvironment": property.New("staging")})
	err = wrong.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: state})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"main"`)

	// Teardown: this installation's sandbox and recorded image go, the app
	// stops, the secrets are deleted; the other installation keeps all.
	mine := recordImage(t, h, "main", dbID)
	sb, err := h.Emu.Modal().CreateSandbox("", "main", "open-inspect", map[string]string{"openinspect_kind": "session"})
	require.NoError(t, err)
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: state}))
	inv := h.Emu.Inventory().Modal
	for _, s := range inv.Sandboxes {
		switch s.ID {
		case sb:
			assert.False(t, s.Running, "this installation's sandbox is terminated")
		case otherSandbox:
			assert.True(t, s.Running, "the other installation's sandbox runs on")
		}
	}
	assert.False(t, imageExists(h, mine), "the recorded image is deleted")
	assert.True(t, imageExists(h, otherImage), "the other installation's image survives")
	for _, a := range inv.Apps {
		want := map[string]string{"main": "stopped", "staging": "deployed"}[a.Environment]
		assert.Equal(t, want, a.State, "app in %s", a.Environment)
	}
	var secrets []string
	for _, s := range inv.Secrets {
		secrets = append(secrets, s.Environment+"/"+s.Name)
	}
	assert.ElementsMatch(t, []string{"staging/llm-api-keys", "staging/github-app", "staging/internal-api"}, secrets)

	require.NoError(t, other.Delete(p.DeleteRequest{ID: otherCreated.ID, Urn: u, Properties: otherCreated.Properties}))
	assert.True(t, h.Emu.Inventory().Modal.Empty())
}

// TestModalAppCheckNamesFields refuses bad inputs before any remote call.
func TestModalAppCheckNamesFields(t *testing.T) {
	h := providertest.NewHarness(t)
	inputs := providertest.Props(t, map[string]any{"source": t.TempDir(), "environment": "my env", "secrets": []any{
		map[string]any{"name": "bad name", "values": map[string]any{"1X": "v"}},
	}})
	check, err := h.Server.Check(p.CheckRequest{Urn: providertest.URN(sandbox.ModalAppToken, "m"), Inputs: inputs})
	require.NoError(t, err)
	var fields []string
	for _, f := range check.Failures {
		fields = append(fields, family.FailureField(f))
		assert.NotContains(t, f.Reason, "{", "no Go value printed")
	}
	assert.ElementsMatch(t, []string{"source", "environment", "secrets[0].name", "secrets[0].values.1X"}, fields)
	assert.Zero(t, h.Emu.Modal().Calls())
	for _, f := range check.Failures {
		if family.FailureField(f) == "source" {
			assert.True(t, strings.Contains(f.Reason, "packages"), f.Reason)
		}
		if family.FailureField(f) == "environment" {
			assert.Contains(t, f.Reason, `"my env" is not a name Modal accepts: Modal environment names are 2 to 64 characters`)
		}
	}
}

// ownerSecrets lists the environment's ownership evidence secrets.
func ownerSecrets(h *providertest.Harness) []string {
	var out []string
	for _, s := range h.Emu.Inventory().Modal.Secrets {
		if strings.HasPrefix(s.Name, "openinspect-owner-") {
			out = append(out, s.Environment+"/"+s.Name)
		}
	}
	return out
}

// TestModalAppOwnership: the environment records its installation before
// the deploy; a create finding the app with this installation's evidence
// (a killed run's deploy) adopts it, another installation is refused even
// with adoptExisting unless takeOverFrom names the owner, and delete
// removes only its own evidence.
func TestModalAppOwnership(t *testing.T) {
	h := providertest.NewHarness(t, provider.WithModalApp(&sandbox.ModalApp{HealthPoll: 100 * time.Millisecond}))
	h.EnableModalDeploys(t)
	checkout := checkoutCopy(t)
	dbID := newInstallationDB(t, h)
	const mine, theirs = "oi0123456789abcdef0123456789abcdef", "oifedcba9876543210fedcba9876543210"
	owned := func(owner string, extra map[string]string) property.Map {
		in := modalInputs(t, checkout, dbID, "sk").Set("owner", property.New(owner))
		for k, v := range extra {
			in = in.Set(k, property.New(v))
		}
		return in
	}

	first, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(sandbox.ModalAppToken, "first"), Properties: owned(mine, nil)})
	require.NoError(t, err)
	assert.Equal(t, []string{"main/openinspect-owner-" + mine}, ownerSecrets(h))
	assert.False(t, first.Properties.Get("adopted").AsBool())

	// The state of that create lost (a killed provider): the same
	// installation adopts the deployed app without adoptExisting.
	again, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(sandbox.ModalAppToken, "again"), Properties: owned(mine, nil)})
	require.NoError(t, err)
	assert.True(t, again.Properties.Get("adopted").AsBool())

	// Another installation is refused, naming the owner, adoptExisting or not.
	adopting := owned(theirs, nil).Set("adoptExisting", property.New(true))
	_, err = h.Server.Create(p.CreateRequest{Urn: providertest.URN(sandbox.ModalAppToken, "other"), Properties: adopting})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "belongs to installation "+mine)
	assert.Contains(t, err.Error(), "takeOverFrom: "+mine)
	assert.Equal(t, []string{"main/openinspect-owner-" + mine}, ownerSecrets(h), "nothing recorded by the refused create")

	// takeOverFrom moves it: the evidence names the new installation only.
	took, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(sandbox.ModalAppToken, "other"),
		Properties: owned(theirs, map[string]string{"takeOverFrom": mine})})
	require.NoError(t, err)
	assert.True(t, took.Properties.Get("adopted").AsBool())
	assert.Equal(t, []string{"main/openinspect-owner-" + theirs}, ownerSecrets(h))

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: took.ID, Urn: providertest.URN(sandbox.ModalAppToken, "other"), Properties: took.Properties}))
	assert.Empty(t, ownerSecrets(h), "delete removes its own evidence")
}

// TestModalAppUnownedHint: an app recording no installation is refused with
// the input that really takes it over.
func TestModalAppUnownedHint(t *testing.T) {
	h := providertest.NewHarness(t)
	// An app of that name, made by someone else.
	t.Setenv("MODAL_SERVER_URL", h.Emu.URL())
	t.Setenv("MODAL_CONFIG_PATH", filepath.Join(t.TempDir(), "none.toml"))
	c, err := modal.NewClientWithOptions(&modal.ClientParams{TokenID: emumodal.DefaultTokenID,
		TokenSecret: emumodal.DefaultTokenSecret})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Apps.FromName(t.Context(), "open-inspect", &modal.AppFromNameParams{CreateIfMissing: true})
	require.NoError(t, err)
	in := modalInputs(t, providertest.FixtureCheckout(t), "", "sk").Set("owner", property.New("oi0123456789abcdef0123456789abcdef"))
	_, err = h.Server.Create(p.CreateRequest{Urn: providertest.URN(sandbox.ModalAppToken, "m"), Properties: in})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "set adoptExisting: true on the OpenInspect component (or on the ModalApp")
	assert.Empty(t, ownerSecrets(h), "nothing recorded by the refused create")
}
