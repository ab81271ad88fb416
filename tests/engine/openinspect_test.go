package engine

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	// repoSecretsKey is base64 of 32 bytes, the form the control plane needs.
	repoSecretsKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	githubAppKey   = "-----BEGIN PRIVATE KEY-----engine-test-key"
)

// newInstallationTest prepares examples/yaml, the installation users copy,
// against a fresh emulator. edit rewrites the program's text first.
func newInstallationTest(t tb, emu *emulatorProcess) *pulumitest.PulumiTest {
	t.Helper()
	pt := newInstallationWithWebTest(t, emu)
	// The web on Cloudflare has its own tests (web_cloudflare_test.go); the
	// others deploy the rest of the installation, as they count its workers.
	editProgram(t, pt, func(program string) string { return strings.Replace(program, webOnCloudflare, "", 1) })
	return pt
}

// webOnCloudflare is examples/yaml's web part.
const webOnCloudflare = "      web:\n        platform: cloudflare\n"

// newInstallationWithWebTest is examples/yaml as it is, web UI included.
func newInstallationWithWebTest(t tb, emu *emulatorProcess) *pulumitest.PulumiTest {
	t.Helper()
	pt := newYAMLTest(t, filepath.Join(repoRoot(), "examples", "yaml"), emu)
	pt.SetConfig(t, "upstreamCheckout", filepath.Join(repoRoot(), "tests", "fixtures", "upstream"))
	setInstallationSecrets(t, pt.CurrentStack())
	return pt
}

// installationSecrets are the secret config values examples/yaml needs.
var installationSecrets = map[string]string{
	"anthropicApiKey":          anthropicKey,
	"githubAppPrivateKey":      githubAppKey,
	"browserAuthSecret":        "browser-auth-secret-with-at-least-32-characters",
	"tokenEncryptionKey":       "dG9rZW4tZW5jcnlwdGlvbi1rZXktb2YtMzItYnl0ZXM=",
	"repoSecretsEncryptionKey": repoSecretsKey,
	// examples/yaml defaults these to demo placeholders; the tests set their
	// own as secret config, as a real stack does.
	"githubOAuthClientSecret": "oi-test-oauth-client-secret",
	"slackBotToken":           "xoxb-oi-test-placeholder",
	"slackSigningSecret":      "oi-test-slack-signing-secret",
}

// editProgram rewrites the copied program's Pulumi.yaml.
func editProgram(t tb, pt *pulumitest.PulumiTest, edit func(string) string) {
	t.Helper()
	path := filepath.Join(pt.WorkingDir(), "Pulumi.yaml")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	edited := edit(string(raw))
	require.NotEqual(t, string(raw), edited, "the edit changed nothing")
	require.NoError(t, os.WriteFile(path, []byte(edited), 0o644))
}

const componentProperties = "      deploymentName: ${deploymentName}\n"

func withExtraKV(program string) string {
	return strings.Replace(program, componentProperties, componentProperties+"      kvNamespaces: [scratch]\n", 1)
}

func withoutExtraKV(program string) string {
	return strings.Replace(program, "      kvNamespaces: [scratch]\n", "", 1)
}

// workerBindings reads a script's bindings back through the emulator's
// Cloudflare API, as the provider uploaded them.
func (e *emulatorProcess) workerBindings(t *testing.T, script string) map[string]map[string]any {
	t.Helper()
	var settings struct {
		Bindings []map[string]any `json:"bindings"`
	}
	e.scriptSettings(t, script, &settings)
	out := map[string]map[string]any{}
	for _, b := range settings.Bindings {
		out[b["name"].(string)] = b
	}
	return out
}

// scriptSettings decodes a script's settings (GET .../settings, the
// envelope's result) into out, read as any Cloudflare client reads them.
func (e *emulatorProcess) scriptSettings(t *testing.T, script string, out any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.cloudflareBaseURL()+"accounts/"+emulatorAccount+"/workers/scripts/"+script+"/settings", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+emulatorToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body := struct {
		Result any `json:"result"`
	}{Result: out}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
}

// TestOpenInspectInstallation deploys the full default installation from the
// fixtures in ONE `pulumi up`, then: the second preview is empty and calls
// Cloudflare zero times; a refresh finds nothing changed; one changed var re-uploads only its worker; removing
// a KV namespace from the spec deletes it remotely; a changed deploymentName is
// refused at preview; destroy empties the emulator.
func TestOpenInspectInstallation(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	pt := newInstallationTest(t, emu)
	editProgram(t, pt, withExtraKV)

	up := previewUp(t, pt)
	assert.Equal(t, 6.0, up.Outputs["appliedMigrations"].Value)
	assert.Equal(t, emu.workerURL("open-inspect-control-plane-engine"), up.Outputs["controlPlaneUrl"].Value)
	assert.Equal(t, map[string]any{"control-plane": "open-inspect-control-plane-engine", "slack-bot": "open-inspect-slack-bot-engine"},
		up.Outputs["workerNames"].Value)

	inv := emu.inventory(t)
	names := func(n int, name func(i int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = name(i)
		}
		slices.Sort(out)
		return out
	}
	assert.Equal(t, []string{"open-inspect-engine"}, names(len(inv.D1), func(i int) string { return inv.D1[i].Name }))
	assert.Equal(t, []string{"open-inspect-scratch-engine", "open-inspect-session-index-engine", "open-inspect-slack-kv-engine"},
		names(len(inv.KV), func(i int) string { return inv.KV[i].Title }))
	assert.Equal(t, []string{"open-inspect-media-engine"}, names(len(inv.R2), func(i int) string { return inv.R2[i].Name }))
	consumers := map[string][]string{}
	for _, q := range inv.Queues {
		consumers[q.Name] = q.Consumers
	}
	assert.Equal(t, map[string][]string{
		"open-inspect-image-build-finalization-engine":     {"open-inspect-control-plane-engine"},
		"open-inspect-image-build-finalization-dlq-engine": {},
		"open-inspect-slack-completion-engine":             {"open-inspect-slack-bot-engine"},
		"open-inspect-slack-completion-dlq-engine":         {},
	}, consumers)
	require.Len(t, inv.Workers, 2)
	for _, w := range inv.Workers {
		assert.True(t, w.WorkersDev, w.Name)
		if w.Name == "open-inspect-control-plane-engine" {
			assert.Equal(t, []string{"SessionDO"}, w.Classes)
			assert.Equal(t, "v1", w.MigrationTag)
			assert.ElementsMatch(t, []string{"* * * * *", "7,37 * * * *", "23 * * * *"}, w.Crons)
			assert.Equal(t, 1, w.AppSecrets, "ANTHROPIC_API_KEY seeded through the signed API")
		}
	}
	cp := emu.workerBindings(t, "open-inspect-control-plane-engine")
	for name, kind := range map[string]string{
		"DB": "d1", "REPOS_CACHE": "kv_namespace", "MEDIA_BUCKET": "r2_bucket", "IMAGE_BUILD_FINALIZATION_QUEUE": "queue",
		"SESSION": "durable_object_namespace", "SLACK_BOT": "service", "WORKER_URL": "plain_text",
		"SERVICE_AUTH_SECRET_SLACK_BOT": "secret_text", "PROVIDER_ACCOUNTS_ENCRYPTION_KEY": "secret_text", "GITHUB_APP_PRIVATE_KEY": "secret_text",
	} {
		require.Contains(t, cp, name)
		assert.Equal(t, kind, cp[name]["type"], name)
	}
	assert.Equal(t, emu.workerURL("open-inspect-control-plane-engine"), cp["WORKER_URL"]["text"])
	assert.Equal(t, "open-inspect-slack-bot-engine", cp["SLACK_BOT"]["service"])
	assert.Equal(t, "open-inspect-media-engine", cp["MEDIA_BUCKET"]["bucket_name"])
	bot := emu.workerBindings(t, "open-inspect-slack-bot-engine")
	assert.Equal(t, "open-inspect-control-plane-engine", bot["CONTROL_PLANE"]["service"])
	assert.Equal(t, emu.workerURL("open-inspect-control-plane-engine"), bot["CONTROL_PLANE_URL"]["text"])
	for _, secret := range []string{anthropicKey, githubAppKey, repoSecretsKey} {
		requireNoPlaintext(t, pt.CurrentStack(), secret)
	}

	requireSteadyState(t, pt, emu)

	pt.SetConfig(t, "allowedUsers", "octocat")
	changed := previewUp(t, pt, func() { emu.resetCounts(t) })
	_, counts := emu.cloudflareCalls(t)
	assert.Equal(t, 1, counts[uploadRoute], "one var of the control plane re-uploads exactly that worker: %v", counts)
	before, after := up.Outputs["workerHashes"].Value.(map[string]any), changed.Outputs["workerHashes"].Value.(map[string]any)
	assert.NotEqual(t, before["control-plane"], after["control-plane"])
	assert.Equal(t, before["slack-bot"], after["slack-bot"])
	assert.Equal(t, "octocat", emu.workerBindings(t, "open-inspect-control-plane-engine")["ALLOWED_USERS"]["text"])

	editProgram(t, pt, withoutExtraKV)
	previewUp(t, pt, func() { emu.resetCounts(t) })
	_, counts = emu.cloudflareCalls(t)
	assert.Zero(t, counts[uploadRoute], "no worker bound the removed namespace: %v", counts)
	inv = emu.inventory(t)
	assert.Equal(t, []string{"open-inspect-session-index-engine", "open-inspect-slack-kv-engine"},
		names(len(inv.KV), func(i int) string { return inv.KV[i].Title }), "the removed namespace is deleted remotely")

	emu.resetCounts(t)
	pt.SetConfig(t, "deploymentName", "renamed")
	_, err := pt.CurrentStack().Preview(t.Context(), optpreview.Diff())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `deploymentName cannot change ("engine" -> "renamed")`)
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "the refused rename touched nothing: %v", counts)
	pt.SetConfig(t, "deploymentName", "engine")

	pt.Destroy(t)
	emu.requireEmpty(t)
}

// TestOpenInspectInvalidSpec: a bad spec fails at preview with field paths
// and makes no call.
func TestOpenInspectInvalidSpec(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	pt := newInstallationTest(t, emu)
	editProgram(t, pt, func(program string) string {
		return strings.Replace(program, componentProperties, componentProperties+
			"      workers:\n        - name: control-plane\n          bindings:\n            kv:\n              - binding: MISSING\n                target: nowhere\n", 1)
	})
	_, err := pt.CurrentStack().Preview(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `workers[0].bindings.kv[0].target: no KV namespace "nowhere" in this installation`)
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "an invalid spec makes no call: %v", counts)
}

// TestOpenInspectInvalidSpecSkipPreview: with no preview (`up --skip-preview`,
// what the Automation API runs) a bad spec still fails before any remote
// call, naming the field: the component refuses what its children's checks
// or Cloudflare would have refused only after other objects existed.
func TestOpenInspectInvalidSpecSkipPreview(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	pt := newInstallationTest(t, emu)
	path := filepath.Join(pt.WorkingDir(), "Pulumi.yaml")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	original := string(raw)
	extra := func(yaml string) string {
		return strings.Replace(original, componentProperties, componentProperties+yaml, 1)
	}
	escape := strings.Repeat("../", strings.Count(pt.WorkingDir(), string(filepath.Separator))) + "etc/passwd"
	for _, tc := range []struct{ name, program, want string }{
		{"empty secret", strings.Replace(original, "anthropicApiKey: ${anthropicApiKey}\n      browserAuthSecret", "anthropicApiKey: \"\"\n      browserAuthSecret", 1),
			"anthropicApiKey: the secret is empty"},
		{"repo key not base64", strings.Replace(original, "repoSecretsEncryptionKey: ${repoSecretsEncryptionKey}\n      access", "repoSecretsEncryptionKey: not-a-base64-key!\n      access", 1),
			"repoSecretsEncryptionKey: is not standard base64"},
		{"worker secret key", extra("      workers:\n        - name: slack-bot\n          secrets:\n            bad-key: ${anthropicApiKey}\n"),
			`workers[0].secrets.bad-key: "bad-key" is not a valid binding name`},
		{"var named like a binding", extra("      workers:\n        - name: control-plane\n          vars:\n            DB: x\n"),
			"workers[0].vars.DB: binding name DB is already used"},
		{"media location", extra("      media:\n        location: mars\n"), `media.location: "mars" is not an R2 location hint`},
		// Refused by the Worker's own rule, which the component applies
		// before registering any child.
		{"worker observability out of range", extra("      workers:\n        - name: control-plane\n          observability:\n            enabled: true\n            headSamplingRate: 2\n"),
			"workers[0].observability.headSamplingRate: 2 is not a sampling rate"},
		{"app icon javascript url", extra("      appIconUrl: \"javascript:alert(1)\"\n"), `appIconUrl: "javascript:alert(1)" is not an http(s) URL`},
		{"script outside the working directory", extra("      workers:\n        - name: control-plane\n          script: " + escape + "\n"),
			"resolves outside the checkout and the working directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NotEqual(t, original, tc.program, "the edit changed nothing")
			require.NoError(t, os.WriteFile(path, []byte(tc.program), 0o644))
			// Up directly: each case is about the update failing validation.
			_, err := pt.CurrentStack().Up(t.Context())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "not-a-base64-key!", "the message quotes the secret")
			calls, counts := emu.cloudflareCalls(t)
			assert.Zero(t, calls, "an invalid spec makes no call: %v", counts)
			emu.requireEmpty(t)
		})
	}
}

// TestTwoOpenInspectComponentsRefusedAtPreview: two components of one
// program with the same deployment name would build over each other's
// resources; the preview refuses the second, naming the first, and builds
// nothing. The claims are the plugin's, scoped to the engine's run.
func TestTwoOpenInspectComponentsRefusedAtPreview(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	pt := newInstallationTest(t, emu)
	editProgram(t, pt, func(program string) string {
		start := strings.Index(program, "  openinspect:\n    type: openinspect:index:OpenInspect\n")
		end := strings.Index(program, "\noutputs:")
		require.True(t, start >= 0 && end > start, "examples/yaml has one component before its outputs")
		second := strings.Replace(program[start:end], "  openinspect:\n", "  second:\n", 1)
		return program[:end] + "\n" + second + program[end:]
	})
	_, err := pt.CurrentStack().Preview(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "deploymentName: OpenInspect")
	assert.Contains(t, err.Error(), "of this program already claims the installation")
	emu.requireEmpty(t)
}
