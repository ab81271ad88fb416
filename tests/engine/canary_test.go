package engine

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/debug"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/stretchr/testify/require"
)

// secretSig marks a secret value in an exported deployment.
const secretSig = "4dabf18193072939515e22adb298388d"

// stateSecrets exports the stack with its secrets shown and returns every
// secret's plaintext: the user's inputs and everything the installation
// generated or derived (service keys, the pepper, MODAL_API_SECRET, ...),
// each with the URN of a resource that holds it. A string that the state,
// the program or the stack's plain configuration also holds unmarked (a host
// inside a secret map, a plain installation id that a worker stores as a
// secret) is public and left out: finding it in a log proves nothing.
func stateSecrets(t *testing.T, pt *pulumitest.PulumiTest) map[string]string {
	t.Helper()
	stack := pt.CurrentStack()
	cmd := exec.Command("pulumi", "stack", "export", "--show-secrets", "--stack", stack.Name())
	cmd.Dir = pt.WorkingDir()
	cmd.Env = os.Environ()
	for k, v := range stack.Workspace().GetEnvVars() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "pulumi stack export: %s", stderr.String())
	var deployment struct {
		Deployment struct {
			Resources []struct {
				URN     string         `json:"urn"`
				Inputs  map[string]any `json:"inputs"`
				Outputs map[string]any `json:"outputs"`
			} `json:"resources"`
		} `json:"deployment"`
	}
	require.NoError(t, json.Unmarshal(out, &deployment))
	secret := map[string]string{}
	program, err := os.ReadFile(filepath.Join(pt.WorkingDir(), "Pulumi.yaml"))
	require.NoError(t, err)
	public := []string{string(program)}
	config, err := stack.GetAllConfig(t.Context())
	require.NoError(t, err)
	for _, value := range config {
		if !value.Secret {
			public = append(public, value.Value)
		}
	}
	for _, r := range deployment.Deployment.Resources {
		for _, props := range []map[string]any{r.Inputs, r.Outputs} {
			collectStrings(props, false, func(s string, isSecret bool) {
				if isSecret {
					secret[s] = r.URN
				} else {
					public = append(public, s)
				}
			})
		}
	}
	for s := range secret {
		for _, text := range public {
			if strings.Contains(text, s) {
				delete(secret, s)
				break
			}
		}
	}
	return secret
}

// collectStrings calls found for every string of a state value long enough
// to be recognisable (short ones, like "1", occur in any log by chance),
// saying whether it sits inside a secret.
func collectStrings(v any, inSecret bool, found func(s string, secret bool)) {
	switch v := v.(type) {
	case string:
		if len(v) >= 12 || !inSecret {
			found(v, inSecret)
		}
	case map[string]any:
		if v[secretSig] != nil {
			var plain any
			if s, ok := v["plaintext"].(string); ok && json.Unmarshal([]byte(s), &plain) == nil {
				collectStrings(plain, true, found)
			}
			return
		}
		for _, e := range v {
			collectStrings(e, inSecret, found)
		}
	case []any:
		for _, e := range v {
			collectStrings(e, inSecret, found)
		}
	}
}

// verboseUp runs `pulumi up -v=9 --logflow --logtostderr` and returns what
// the engine and the plugins logged.
func verboseUp(t *testing.T, pt *pulumitest.PulumiTest) string {
	t.Helper()
	level := uint(9)
	var logs bytes.Buffer
	// Up directly: the test reads this one update's verbose log, and a
	// preview's lines would be mixed into what it measures.
	_, err := pt.CurrentStack().Up(t.Context(), optup.DebugLogging(debug.LoggingOptions{
		LogLevel: &level, LogToStdErr: true, FlowToPlugins: true,
	}), optup.ErrorProgressStreams(&logs), optup.ProgressStreams(&logs))
	require.NoError(t, err)
	require.Greater(t, logs.Len(), 100_000, "the verbose log is really verbose")
	return logs.String()
}

// requireNoCanary fails when any secret appears in the log, naming the
// resource that holds it and the log line with the value masked: the failure
// itself must not leak it.
func requireNoCanary(t *testing.T, what, log string, secrets map[string]string) {
	t.Helper()
	require.NotEmpty(t, secrets)
	for s, urn := range secrets {
		at := strings.Index(log, s)
		if at < 0 {
			continue
		}
		start := strings.LastIndexByte(log[:at], '\n') + 1
		end := strings.IndexByte(log[at:], '\n')
		if end < 0 {
			end = len(log) - at
		}
		line := strings.ReplaceAll(log[start:at+end], s, "[CANARY]")
		if len(line) > 400 {
			line = line[:400] + "..."
		}
		t.Errorf("%s: a secret of %s (%d characters) appears in plaintext in the -v=9 --logflow log:\n%s", what, urn, len(s), line)
	}
}

// TestNoSecretInVerboseLogs: every secret of a full installation (the user's
// inputs and every generated or derived one) stays out of the engine's most
// verbose log with plugin log flow, through an install and a rotation.
func TestNoSecretInVerboseLogs(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	pt := newInstallationTest(t, emu)

	install := verboseUp(t, pt)
	secrets := stateSecrets(t, pt)
	require.Greater(t, len(secrets), 10, "the user's secrets and the generated ones are all found in state")
	requireNoCanary(t, "install", install, secrets)

	require.NoError(t, pt.CurrentStack().SetConfig(t.Context(), "anthropicApiKey",
		auto.ConfigValue{Value: "sk-rotated-canary-0f9e8d7c6b5a", Secret: true}))
	rotation := verboseUp(t, pt)
	rotated := stateSecrets(t, pt)
	for s, urn := range secrets {
		rotated[s] = urn
	}
	requireNoCanary(t, "rotation", rotation, rotated)

	pt.Destroy(t)
	emu.requireEmpty(t)
}
