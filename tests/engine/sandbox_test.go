package engine

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	modal "github.com/modal-labs/libmodal/modal-go"
	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/providertest/pulumitest/assertpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
	emumodal "github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
)

// fixtureCopy copies the fixture checkout so a test can change its sources.
func fixtureCopy(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	copyFixture(t, dst)
	return dst
}

// copyFixture copies the fixture checkout, without Python's caches, to dst.
func copyFixture(t *testing.T, dst string) {
	t.Helper()
	src := filepath.Join(repoRoot(), "tests", "fixtures", "upstream")
	require.NoError(t, filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	}))
}

// touchRuntime changes the sandbox runtime, which both providers' change
// detection covers.
func touchRuntime(t *testing.T, checkout string) {
	t.Helper()
	path := filepath.Join(checkout, "packages", "sandbox-runtime", "src", "sandbox_runtime", "entrypoint.py")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(b, []byte("\n# changed by the test\n")...), 0o644))
}

// sandboxCalls counts the Modal (gRPC) and Daytona requests since the last reset.
func (e *emulatorProcess) sandboxCalls(t *testing.T) (int, map[string]int) {
	t.Helper()
	return e.callsWhere(t, func(route string) bool {
		return strings.HasPrefix(route, "grpc ") || strings.Contains(route, "/daytona/")
	})
}

// callsUnder counts the requests since the last reset to one sandbox
// family's routes, served under prefix ("/e2b/").
func (e *emulatorProcess) callsUnder(t *testing.T, prefix string) (int, map[string]int) {
	t.Helper()
	return e.callsWhere(t, func(route string) bool { return strings.Contains(route, " "+prefix) })
}

func (e *emulatorProcess) callsWhere(t *testing.T, match func(route string) bool) (int, map[string]int) {
	t.Helper()
	_, counts := e.cloudflareCalls(t)
	n, calls := 0, map[string]int{}
	for route, c := range counts {
		if match(route) {
			n += c
			calls[route] = c
		}
	}
	return n, calls
}

// adminPost sends a JSON body to the emulator's admin API.
func (e *emulatorProcess) adminPost(t *testing.T, path string, body, out any) {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	resp, err := http.Post(e.url+"/__emulator/"+path, "application/json", bytes.NewReader(raw))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "POST %s", path)
	if out != nil {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
}

// d1 runs SQL on a database through the emulator's Cloudflare API.
func (e *emulatorProcess) d1(t *testing.T, databaseID, sql string, params ...any) {
	t.Helper()
	e.d1Rows(t, databaseID, sql, params...)
}

// withSandbox adds a sandbox block to the component.
func withSandbox(block string) func(string) string {
	return func(program string) string {
		// A block turning the Slack bot off merges into the program's own
		// slack entry (which gives the bot's credentials): a YAML mapping
		// takes each key once.
		const slackOff = "      slack:\n        enabled: false\n"
		if strings.Contains(block, slackOff) && strings.Contains(program, "      slack:\n") {
			block = strings.Replace(block, slackOff, "", 1)
			program = strings.Replace(program, "      slack:\n", slackOff, 1)
		}
		return strings.Replace(program, componentProperties, componentProperties+block, 1)
	}
}

// secondInstallation is another installation of examples/yaml on the same
// emulator (same Cloudflare account, Modal workspace, Daytona organization).
func secondInstallation(t *testing.T, emu *emulatorProcess, checkout, sandbox string) *pulumitest.PulumiTest {
	t.Helper()
	pt := newInstallationTest(t, emu)
	pt.SetConfig(t, "deploymentName", "second")
	pt.SetConfig(t, "upstreamCheckout", checkout)
	if sandbox != "" {
		editProgram(t, pt, withSandbox(sandbox))
	}
	return pt
}

// recordModalImage builds an image in an installation's app, as its control
// plane would, and records it in the installation's D1 database.
func recordModalImage(t *testing.T, emu *emulatorProcess, env, databaseID string) string {
	t.Helper()
	t.Setenv("MODAL_SERVER_URL", emu.url)
	t.Setenv("MODAL_CONFIG_PATH", filepath.Join(t.TempDir(), "none.toml"))
	c, err := modal.NewClientWithOptions(&modal.ClientParams{TokenID: emumodal.DefaultTokenID,
		TokenSecret: emumodal.DefaultTokenSecret, Environment: env})
	require.NoError(t, err)
	defer c.Close()
	app, err := c.Apps.FromName(t.Context(), "open-inspect", &modal.AppFromNameParams{Environment: env})
	require.NoError(t, err)
	img, err := c.Images.FromRegistry("python:3.12-slim", nil).DockerfileCommands([]string{"RUN echo repo image of " + env}, nil).Build(t.Context(), app)
	require.NoError(t, err)
	emu.d1(t, databaseID, "INSERT INTO image_builds (id, provider, provider_image_id, status) VALUES (?, 'modal', ?, 'ready')", "build-"+env, img.ImageID)
	return img.ImageID
}

func (e *emulatorProcess) modalImages(t *testing.T) []string {
	t.Helper()
	var body struct {
		Images []emumodal.ImageEntry `json:"images"`
	}
	e.admin(t, http.MethodGet, "modal/images", &body)
	var ids []string
	for _, img := range body.Images {
		ids = append(ids, img.ID)
	}
	return ids
}

// modalSecrets splits the emulator's Modal secrets into upstream's
// ("<environment>/<name>") and the environments holding an ownership record.
func modalSecrets(all []emumodal.SecretEntry) (secrets, owners []string) {
	for _, s := range all {
		if strings.HasPrefix(s.Name, "openinspect-owner-") {
			owners = append(owners, s.Environment)
			continue
		}
		secrets = append(secrets, s.Environment+"/"+s.Name)
	}
	return secrets, owners
}

// TestModalInstallation deploys the default installation (Modal, managed)
// with the real Modal CLI into the emulator, next to a second installation
// in another Modal environment of the same workspace, and checks: the three
// named secrets and a healthy app; the control plane carries what the app
// reported; a second preview is empty with zero sandbox calls; a changed
// runtime redeploys; destroying one installation leaves the other's app,
// secrets, sandboxes and images; destroy empties what each owned.
func TestModalInstallation(t *testing.T) {
	requirePulumi(t)
	emu := startEmulator(t)
	checkout := fixtureCopy(t)
	pt := newInstallationTest(t, emu)
	pt.SetConfig(t, "upstreamCheckout", checkout)

	up := previewUp(t, pt)
	assert.Contains(t, up.Outputs["sandboxStatus"].Value, "api_health healthy")
	assert.False(t, up.Outputs["sandboxStatus"].Secret, "the Modal app's status is not hidden by the secret token")
	assert.Contains(t, up.Outputs["sandboxStatus"].Value, "environment main of workspace "+emumodal.DefaultWorkspace)
	inv := emu.inventory(t).Modal
	require.Len(t, inv.Apps, 1)
	assert.Equal(t, "deployed", inv.Apps[0].State)
	assert.Len(t, inv.Apps[0].Functions, 9)
	secrets, owners := modalSecrets(inv.Secrets)
	assert.ElementsMatch(t, []string{"main/llm-api-keys", "main/github-app", "main/internal-api"}, secrets)
	assert.Equal(t, []string{"main"}, owners, "the environment records the installation (openinspect-owner-<id>)")
	cp := emu.workerBindings(t, "open-inspect-control-plane-engine")
	assert.Equal(t, emumodal.DefaultWorkspace, cp["MODAL_WORKSPACE"]["text"])
	assert.Equal(t, "main", cp["MODAL_ENVIRONMENT"]["text"])
	assert.Equal(t, "", cp["MODAL_ENVIRONMENT_WEB_SUFFIX"]["text"])
	assert.Equal(t, "secret_text", cp["MODAL_API_SECRET"]["type"])
	for _, secret := range []string{anthropicKey, githubAppKey} {
		requireNoPlaintext(t, pt.CurrentStack(), secret)
	}

	emu.resetCounts(t)
	assertpreview.HasNoChanges(t, pt.Preview(t))
	calls, counts := emu.sandboxCalls(t)
	assert.Zero(t, calls, "a no-op preview makes no sandbox call: %v", counts)

	// Upstream's app and secret names are fixed: a second installation in the
	// same environment is refused; in another environment it coexists.
	twin := secondInstallation(t, emu, checkout, "")
	// Up directly: this update is about being refused.
	_, err := twin.CurrentStack().Up(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "adoptExisting")
	twin.Destroy(t)
	other := secondInstallation(t, emu, checkout, "      sandbox:\n        modal:\n          environment: staging\n")
	otherUp := previewUp(t, other)
	assert.Contains(t, otherUp.Outputs["sandboxStatus"].Value, "environment staging")

	touchRuntime(t, checkout)
	previewUp(t, pt, func() { emu.resetCounts(t) })
	_, counts = emu.cloudflareCalls(t)
	assert.Equal(t, 1, counts["grpc /modal.client.ModalClient/AppPublish"], "the changed runtime is deployed once: %v", counts)
	assert.Zero(t, counts[uploadRoute], "nothing else churns")

	// Each installation's sandbox and recorded image.
	var mine, theirs struct{ ID string }
	emu.adminPost(t, "modal/sandboxes", map[string]any{"environment": "main", "app": "open-inspect"}, &mine)
	emu.adminPost(t, "modal/sandboxes", map[string]any{"environment": "staging", "app": "open-inspect"}, &theirs)
	myImage := recordModalImage(t, emu, "main", up.Outputs["databaseId"].Value.(string))
	theirImage := recordModalImage(t, emu, "staging", otherUp.Outputs["databaseId"].Value.(string))

	pt.Destroy(t)
	inv = emu.inventory(t).Modal
	for _, s := range inv.Sandboxes {
		switch s.ID {
		case mine.ID:
			assert.False(t, s.Running, "this installation's sandbox is terminated")
		case theirs.ID:
			assert.True(t, s.Running, "the other installation's sandbox runs on")
		}
	}
	images := emu.modalImages(t)
	assert.NotContains(t, images, myImage)
	assert.Contains(t, images, theirImage)
	secrets, owners = modalSecrets(inv.Secrets)
	assert.ElementsMatch(t, []string{"staging/llm-api-keys", "staging/github-app", "staging/internal-api"}, secrets)
	assert.Equal(t, []string{"staging"}, owners, "the destroyed installation's evidence is gone, the other's stays")
	for _, a := range inv.Apps {
		assert.Equal(t, map[string]string{"main": "stopped", "staging": "deployed"}[a.Environment], a.State, a.Environment)
	}
	other.Destroy(t)
	emu.requireEmpty(t)
}

const daytonaProgramKey = "  daytonaApiKey:\n    type: string\n    secret: true\n"

// daytonaSandbox is the component's sandbox block for the emulator's Daytona.
func daytonaSandbox(emu *emulatorProcess) string {
	return "      sandbox:\n        provider: daytona\n        daytona:\n          apiUrl: " + emu.url + "/daytona/api\n" +
		"          apiKey: ${daytonaApiKey}\n"
}

func withDaytona(t *testing.T, pt *pulumitest.PulumiTest, emu *emulatorProcess) {
	t.Helper()
	editProgram(t, pt, func(program string) string {
		program = strings.Replace(program, "config:\n", "config:\n"+daytonaProgramKey, 1)
		return withSandbox(daytonaSandbox(emu))(program)
	})
	require.NoError(t, pt.CurrentStack().SetConfig(t.Context(), "daytonaApiKey", auto.ConfigValue{Value: daytona.DefaultAPIKey, Secret: true}))
	// Credentials given once: the component's sandbox.daytona settings
	// build the snapshot too, without the provider's daytona* keys.
	for _, key := range []string{"openinspect:daytonaApiKey", "openinspect:daytonaApiUrl"} {
		require.NoError(t, pt.CurrentStack().RemoveConfig(t.Context(), key))
	}
}

func (e *emulatorProcess) snapshots(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, s := range e.inventory(t).Daytona.Snapshots {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names
}

// TestDaytonaInstallation deploys an installation with the daytona provider
// and no base snapshot, next to a second one in the same organization: the
// digest-named snapshot is built and wired into the control plane; a second
// preview is empty with zero sandbox calls; a changed runtime builds a new
// snapshot while the old one is kept for its grace period; destroying one
// installation deletes only its snapshots and the sandboxes of its own
// sessions.
func TestDaytonaInstallation(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	checkout := fixtureCopy(t)
	pt := newInstallationTest(t, emu)
	pt.SetConfig(t, "upstreamCheckout", checkout)
	withDaytona(t, pt, emu)

	up := previewUp(t, pt)
	snapshotName := regexp.MustCompile(`^open-inspect-sandbox-base-engine-[0-9a-f]{12}$`)
	first := emu.snapshots(t)
	require.Len(t, first, 1)
	assert.Regexp(t, snapshotName, first[0])
	assert.Equal(t, "daytona: base snapshot "+first[0]+" (active)", up.Outputs["sandboxStatus"].Value)
	assert.False(t, up.Outputs["sandboxStatus"].Secret, "which snapshot runs is not hidden by the secret API key")
	built := emu.inventory(t).Daytona.Snapshots[0]
	assert.Contains(t, built.Dockerfile, "ENV SANDBOX_VERSION=fixture-daytona-1", "built by the fixture's builder")
	assert.Contains(t, built.Dockerfile, strings.TrimPrefix(filepath.Join(checkout, "packages/sandbox-runtime/src/sandbox_runtime"), "/")+" /app/sandbox_runtime",
		"from the checkout's runtime")
	assert.Len(t, built.ContextHashes, 1)
	cp := emu.workerBindings(t, "open-inspect-control-plane-engine")
	assert.Equal(t, first[0], cp["DAYTONA_BASE_SNAPSHOT"]["text"])
	assert.False(t, controlPlaneVarIsSecret(t, pt, "DAYTONA_BASE_SNAPSHOT"), "the snapshot name is stored plain: it is not derived from the API key")
	assert.Equal(t, emu.url+"/daytona/api", cp["DAYTONA_API_URL"]["text"])

	emu.resetCounts(t)
	assertpreview.HasNoChanges(t, pt.Preview(t))
	calls, counts := emu.sandboxCalls(t)
	assert.Zero(t, calls, "a no-op preview makes no sandbox call: %v", counts)

	other := secondInstallation(t, emu, fixtureCopy(t), "")
	withDaytona(t, other, emu)
	otherUp := previewUp(t, other)
	theirSnapshot := otherUp.Outputs["sandboxStatus"].Value.(string)

	// A changed runtime whose build fails: the up fails with the builder's
	// own message, and the next up deletes the failed snapshot and retries.
	touchRuntime(t, checkout)
	const reason = "npm ERR! 404 opencode-ai not found (arranged by the test)"
	emu.adminPost(t, "daytona/build-failures", map[string]any{"reason": reason}, nil)
	// Up directly: this update is about failing (the build runs at create).
	_, err := pt.CurrentStack().Up(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "daytona: python -m src.bootstrap failed")
	assert.Contains(t, err.Error(), reason)
	assert.NotContains(t, err.Error(), daytona.DefaultAPIKey)
	changed := previewUp(t, pt)
	now := emu.snapshots(t)
	assert.Len(t, now, 3, "a new snapshot beside the old one and the other installation's: %v", now)
	assert.Contains(t, now, first[0], "the superseded snapshot is kept through its grace period")
	assert.NotEqual(t, up.Outputs["sandboxStatus"].Value, changed.Outputs["sandboxStatus"].Value)

	// Sessions each installation recorded, and their sandboxes.
	sandbox := func(session string) string {
		var out struct{ ID string }
		emu.adminPost(t, "daytona/sandboxes", map[string]any{"labels": map[string]string{
			"openinspect_framework": "open-inspect", "openinspect_session_id": session}}, &out)
		return out.ID
	}
	emu.d1(t, up.Outputs["databaseId"].Value.(string), "INSERT INTO sessions (id, title) VALUES ('s-mine', 'mine')")
	emu.d1(t, otherUp.Outputs["databaseId"].Value.(string), "INSERT INTO sessions (id, title) VALUES ('s-theirs', 'theirs')")
	mine, theirs, nobody := sandbox("s-mine"), sandbox("s-theirs"), sandbox("s-nobody")

	pt.Destroy(t)
	var left []string
	for _, sb := range emu.inventory(t).Daytona.Sandboxes {
		left = append(left, sb.ID)
	}
	assert.NotContains(t, left, mine)
	assert.Contains(t, left, theirs, "another installation's sandbox survives")
	assert.Contains(t, left, nobody, "a sandbox no installation recorded is left alone")
	remaining := emu.snapshots(t)
	require.Len(t, remaining, 1, "only the other installation's snapshot is left: %v", remaining)
	assert.Contains(t, theirSnapshot, remaining[0])

	other.Destroy(t)
	assert.Empty(t, emu.snapshots(t))
	left = nil
	for _, sb := range emu.inventory(t).Daytona.Sandboxes {
		left = append(left, sb.ID)
	}
	assert.Equal(t, []string{nobody}, left)
}

// controlPlaneVarIsSecret reports whether the stack's state stores the
// control plane Worker's var key as a secret (the var itself or the whole
// map), failing when the state has no such var.
func controlPlaneVarIsSecret(t *testing.T, pt *pulumitest.PulumiTest, key string) bool {
	t.Helper()
	exported, err := pt.CurrentStack().Export(t.Context())
	require.NoError(t, err)
	var d struct {
		Resources []struct {
			URN     string         `json:"urn"`
			Outputs map[string]any `json:"outputs"`
		} `json:"resources"`
	}
	require.NoError(t, json.Unmarshal(exported.Deployment, &d))
	for _, r := range d.Resources {
		if !strings.HasSuffix(r.URN, "::openinspect-worker-control-plane") {
			continue
		}
		vars, _ := r.Outputs["vars"].(map[string]any)
		require.NotNil(t, vars, "the control plane's state has vars")
		if vars[secretSig] != nil {
			return true
		}
		v, ok := vars[key]
		require.True(t, ok, "the control plane's state has no var %s", key)
		m, isMap := v.(map[string]any)
		return isMap && m[secretSig] != nil
	}
	t.Fatalf("no control plane Worker in the state")
	return false
}
