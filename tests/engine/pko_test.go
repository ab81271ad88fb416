package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/providertest/pulumitest/assertpreview"
	"github.com/pulumi/providertest/pulumitest/opttest"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/kube"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// pkoCRDDir holds the Pulumi Kubernetes Operator's v2.9.0 CRDs, unmodified
// (see its README), in the shared reference directory: third-party files
// the repository does not carry.
const pkoCRDDir = "reference/pko-crds-v2.9.0"

// manifest is one Kubernetes object of a YAML file.
type manifest struct {
	file string
	obj  map[string]any
}

func (m manifest) kind() string { return m.obj["kind"].(string) }
func (m manifest) name() string { return m.obj["metadata"].(map[string]any)["name"].(string) }
func (m manifest) namespace() string {
	ns, _ := m.obj["metadata"].(map[string]any)["namespace"].(string)
	return ns
}

// readManifests decodes every document of the YAML files.
func readManifests(t *testing.T, files ...string) []manifest {
	t.Helper()
	var out []manifest
	for _, file := range files {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var obj map[string]any
			err := dec.Decode(&obj)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, file)
			if obj != nil {
				out = append(out, manifest{file: file, obj: obj})
			}
		}
	}
	return out
}

// pkoResourcePaths maps each kind examples/pko holds to its API path prefix
// and plural; an unknown kind fails the test.
var pkoResourcePaths = map[string]string{
	"Secret":         "/api/v1/namespaces/%s/secrets",
	"Program":        "/apis/pulumi.com/v1/namespaces/%s/programs",
	"Stack":          "/apis/pulumi.com/v1/namespaces/%s/stacks",
	"ExternalSecret": "/apis/external-secrets.io/v1/namespaces/%s/externalsecrets",
}

func collectionPath(t *testing.T, kind, namespace string) string {
	t.Helper()
	format, ok := pkoResourcePaths[kind]
	require.True(t, ok, "examples/pko holds a %s, which the test does not know how to create", kind)
	return fmt.Sprintf(format, namespace)
}

// createStrict creates obj with the API server's strict field validation, so
// an unknown or misspelled field is an error rather than silently pruned.
func createStrict(ctx context.Context, cp *kube.ControlPlane, path string, obj map[string]any, dryRun bool) error {
	query := "?fieldValidation=Strict"
	if dryRun {
		query += "&dryRun=All"
	}
	return cp.Do(ctx, http.MethodPost, path+query, obj, nil)
}

// applyCRDs creates the CRDs of the files and waits until each is Established
// and its resource is served.
func applyCRDs(t *testing.T, cp *kube.ControlPlane, files ...string) {
	t.Helper()
	ctx := t.Context()
	for _, crd := range readManifests(t, files...) {
		require.Equal(t, "CustomResourceDefinition", crd.kind(), crd.file)
		require.NoError(t, cp.Do(ctx, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd.obj, nil), crd.file)
	}
	for _, crd := range readManifests(t, files...) {
		deadline := time.Now().Add(60 * time.Second)
		for {
			var got struct {
				Status struct {
					Conditions []struct{ Type, Status string } `json:"conditions"`
				} `json:"status"`
			}
			require.NoError(t, cp.Do(ctx, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+crd.name(), nil, &got))
			established := false
			for _, c := range got.Status.Conditions {
				established = established || (c.Type == "Established" && c.Status == "True")
			}
			if established {
				break
			}
			require.True(t, time.Now().Before(deadline), "CRD %s not Established within 60s", crd.name())
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestPKOExample validates every object of examples/pko against the Pulumi
// Kubernetes Operator's v2.9.0 CRDs (and a minimal ExternalSecret CRD written
// here) on a real kube-apiserver, checks that a deliberately broken copy of
// each is rejected, and then runs the Program as the operator would: its YAML,
// read back from the API server, becomes the project's Pulumi.yaml; the
// Stack's config, secretsRef and envRefs, resolved through the API server's
// Secrets (updated to the emulator's credentials), become stack config and the
// engine's environment. Up, a no-change preview and destroy run through the
// real CLI and the provider binary against the emulator.
func TestPKOExample(t *testing.T) {
	t.Parallel()
	crdDir := toolchain.SharedDir(t, pkoCRDDir) // first: outside CI, this is what is missing
	requirePulumi(t)
	require.NoError(t, kube.CheckBinaries("", false, t.Logf))
	ctx := t.Context()
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cp, err := kube.Start(startCtx, kube.Options{Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cp.Stop() })

	crds, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	require.NoError(t, err)
	require.Len(t, crds, 4, "the operator's four CRDs in %s", crdDir)
	applyCRDs(t, cp, append(crds, filepath.Join(repoRoot(), "tests", "engine", "testdata", "pko", "externalsecret-crd.yaml"))...)

	example := filepath.Join(repoRoot(), "examples", "pko")
	files, err := filepath.Glob(filepath.Join(example, "*.yaml"))
	require.NoError(t, err)
	eso, err := filepath.Glob(filepath.Join(example, "external-secrets", "*.yaml"))
	require.NoError(t, err)
	objects := readManifests(t, append(files, eso...)...)
	kinds := map[string]int{}
	for _, m := range objects {
		kinds[m.kind()]++
	}
	assert.Equal(t, map[string]int{"Program": 1, "Stack": 2, "Secret": 2, "ExternalSecret": 2}, kinds)

	require.NoError(t, cp.Do(ctx, http.MethodPost, "/api/v1/namespaces",
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "openinspect"}}, nil))
	for _, m := range objects {
		require.Equal(t, "openinspect", m.namespace(), "%s %s", m.kind(), m.name())
		err := createStrict(ctx, cp, collectionPath(t, m.kind(), m.namespace()), m.obj, false)
		require.NoError(t, err, "%s: %s %s", m.file, m.kind(), m.name())
	}

	// A dry run: nothing is stored, everything is validated.
	t.Run("broken copies are rejected", func(t *testing.T) {
		for _, tc := range brokenPKOObjects(t, objects) {
			t.Run(tc.name, func(t *testing.T) {
				err := createStrict(ctx, cp, collectionPath(t, tc.obj.kind(), tc.obj.namespace()), tc.obj.obj, true)
				var apiErr *kube.APIError
				require.ErrorAs(t, err, &apiErr, "the API server accepted %s", tc.name)
				assert.Contains(t, []int{http.StatusBadRequest, http.StatusUnprocessableEntity}, apiErr.StatusCode)
				assert.Contains(t, apiErr.Body, tc.field, "the rejection names the field")
			})
		}
	})

	runPKOStack(t, cp, "openinspect-prod")
}

type brokenObject struct {
	name  string
	field string // what the API server's rejection must name
	obj   manifest
}

// brokenPKOObjects are copies of the example's objects, each with one
// mistake a user could make.
func brokenPKOObjects(t *testing.T, objects []manifest) []brokenObject {
	t.Helper()
	find := func(kind string) manifest {
		for _, m := range objects {
			if m.kind() == kind {
				return copyManifest(t, m)
			}
		}
		t.Fatalf("examples/pko has no %s", kind)
		return manifest{}
	}
	spec := func(m manifest) map[string]any { return m.obj["spec"].(map[string]any) }

	var out []brokenObject
	p := find("Program")
	res := p.obj["program"].(map[string]any)["resources"].(map[string]any)["openinspect"].(map[string]any)
	delete(res, "type")
	out = append(out, brokenObject{"Program resource without a type", "type", p})

	p = find("Program")
	p.obj["program"].(map[string]any)["configuration"].(map[string]any)["deploymentName"] = map[string]any{"type": "string"}
	out = append(out, brokenObject{"Program configuration type in lower case", "configuration", p})

	s := find("Stack")
	envRefs := spec(s)["envRefs"].(map[string]any)
	for _, ref := range envRefs {
		delete(ref.(map[string]any), "type")
		break
	}
	out = append(out, brokenObject{"Stack envRef without a type", "type", s})

	s = find("Stack")
	for _, ref := range spec(s)["secretsRef"].(map[string]any) {
		delete(ref.(map[string]any)["secret"].(map[string]any), "key")
		break
	}
	out = append(out, brokenObject{"Stack secretsRef without the Secret's key", "key", s})

	s = find("Stack")
	spec(s)["envRef"] = spec(s)["envRefs"]
	delete(spec(s), "envRefs")
	out = append(out, brokenObject{"Stack with envRefs misspelled", "envRef", s})

	s = find("Stack")
	spec(s)["destroyOnFinalize"] = "yes"
	out = append(out, brokenObject{"Stack destroyOnFinalize as a string", "destroyOnFinalize", s})

	e := find("ExternalSecret")
	delete(spec(e)["data"].([]any)[0].(map[string]any)["remoteRef"].(map[string]any), "key")
	out = append(out, brokenObject{"ExternalSecret remoteRef without a key", "key", e})
	return out
}

// copyManifest deep-copies m through YAML.
func copyManifest(t *testing.T, m manifest) manifest {
	t.Helper()
	raw, err := yaml.Marshal(m.obj)
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &obj))
	return manifest{file: m.file, obj: obj}
}

// pkoCredentials are what the test writes into the example's Secrets: the
// emulator's credentials and the installation's secret settings.
var pkoCredentials = map[string]map[string]string{
	"openinspect-credentials": {
		// The test's stack lives in a local backend; the token is mapped in
		// as the operator would, and unused.
		"pulumi-access-token":   "pul-engine-test-unused",
		"cloudflare-api-token":  emulatorToken,
		"cloudflare-account-id": emulatorAccount,
		"modal-token-id":        modal.DefaultTokenID,
		"modal-token-secret":    modal.DefaultTokenSecret,
	},
	"openinspect-config": {
		"github-app-private-key":      githubAppKey,
		"anthropic-api-key":           anthropicKey,
		"browser-auth-secret":         "browser-auth-secret-with-at-least-32-characters",
		"token-encryption-key":        installationSecrets["tokenEncryptionKey"], // 32 bytes: an AES key
		"repo-secrets-encryption-key": repoSecretsKey,
		"github-oauth-client-secret":  installationSecrets["githubOAuthClientSecret"],
		"slack-bot-token":             installationSecrets["slackBotToken"],
		"slack-signing-secret":        installationSecrets["slackSigningSecret"],
	},
}

// pkoSecretEnv are the mapped environment variables whose values are secret
// (the account and Modal token IDs are not, and are kept in state).
var pkoSecretEnv = map[string]bool{"PULUMI_ACCESS_TOKEN": true, "CLOUDFLARE_API_TOKEN": true, "MODAL_TOKEN_SECRET": true}

// runPKOStack runs the named Stack's Program through the engine.
func runPKOStack(t *testing.T, cp *kube.ControlPlane, stackName string) {
	ctx := t.Context()
	const ns = "openinspect"

	// The Secrets, as a user would fill them in.
	for name, values := range pkoCredentials {
		var secret map[string]any
		path := "/api/v1/namespaces/" + ns + "/secrets/" + name
		require.NoError(t, cp.Do(ctx, http.MethodGet, path, nil, &secret))
		data := map[string]any{}
		for k, v := range values {
			data[k] = base64.StdEncoding.EncodeToString([]byte(v))
		}
		require.Len(t, secret["data"], len(data), "the test fills in every key of Secret %s", name)
		secret["data"] = data
		require.NoError(t, cp.Do(ctx, http.MethodPut, path, secret, nil))
	}

	var stack struct {
		Spec struct {
			Stack      string                 `json:"stack"`
			ProgramRef struct{ Name string }  `json:"programRef"`
			Config     map[string]any         `json:"config"`
			EnvRefs    map[string]resourceRef `json:"envRefs"`
			SecretsRef map[string]resourceRef `json:"secretsRef"`
		} `json:"spec"`
	}
	require.NoError(t, cp.Do(ctx, http.MethodGet, "/apis/pulumi.com/v1/namespaces/"+ns+"/stacks/"+stackName, nil, &stack))
	var program struct {
		Metadata struct{ Name string } `json:"metadata"`
		Program  map[string]any        `json:"program"`
	}
	require.NoError(t, cp.Do(ctx, http.MethodGet, "/apis/pulumi.com/v1/namespaces/"+ns+"/programs/"+stack.Spec.ProgramRef.Name, nil, &program))

	// The project the operator serves the workspace: the Program's YAML as
	// the API server stored it (after its schema's pruning), named after it.
	project := map[string]any{"name": program.Metadata.Name, "runtime": "yaml"}
	for k, v := range program.Program {
		project[k] = v
	}
	// The one change for this test: the checkout it deploys is the project's
	// fixture, not the pinned commit's tree the example's image holds, so its
	// migrations are deployed unverified.
	component := project["resources"].(map[string]any)["openinspect"].(map[string]any)
	component["properties"].(map[string]any)["upstream"].(map[string]any)["allowUnverified"] = true
	dir := t.TempDir()
	raw, err := yaml.Marshal(project)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), raw, 0o644))

	emu := startEmulator(t)
	opts := []opttest.Option{
		opttest.LocalProviderPath("openinspect", binDir),
		opttest.SkipInstall(),
		opttest.DisableGrpcLog(),
		opttest.StackName(stack.Spec.Stack[strings.LastIndex(stack.Spec.Stack, "/")+1:]),
		opttest.Env("PULUMI_SKIP_UPDATE_CHECK", "true"),
		// Where the emulator stands in for Cloudflare and Modal, and the
		// Python and cache the workspace image provides: endpoints, not
		// credentials, so the Stack does not map them.
		opttest.Env("CLOUDFLARE_API_BASE_URL", emu.cloudflareBaseURL()),
		opttest.Env("OPENINSPECT_WORKERS_DEV_BASE_URL", emu.url+"/__workers"),
		opttest.Env("MODAL_SERVER_URL", emu.url),
		opttest.Env("OPENINSPECT_PYTHON", toolchain.Python(t)),
		opttest.Env("OPENINSPECT_CACHE_DIR", toolchain.CacheDir()),
	}
	var secrets []string
	for env, ref := range stack.Spec.EnvRefs {
		value := resolveRef(t, cp, ns, ref)
		opts = append(opts, opttest.Env(env, value))
		if pkoSecretEnv[env] {
			secrets = append(secrets, value)
		}
	}
	pt := pulumitest.NewPulumiTest(t, dir, opts...)
	st := pt.CurrentStack()
	for key, v := range stack.Spec.Config {
		require.NoError(t, st.SetConfig(ctx, key, auto.ConfigValue{Value: fmt.Sprint(v)}))
	}
	for key, ref := range stack.Spec.SecretsRef {
		value := resolveRef(t, cp, ns, ref)
		require.NoError(t, st.SetConfig(ctx, key, auto.ConfigValue{Value: value, Secret: true}))
		secrets = append(secrets, value)
	}
	// The image's checkout path, here the project's fixture checkout.
	require.NoError(t, st.SetConfig(ctx, "upstreamCheckout", auto.ConfigValue{Value: filepath.Join(repoRoot(), "tests", "fixtures", "upstream")}))

	up := previewUp(t, pt)
	assert.NotEmpty(t, up.Outputs["controlPlaneUrl"].Value)
	assert.Contains(t, up.Outputs["sandboxStatus"].Value, "api_health healthy", "the installation deployed its Modal app")
	emu.resetCounts(t)
	assertpreview.HasNoChanges(t, pt.Preview(t))
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "a no-op preview must not call Cloudflare: %v", counts)
	requireNoPlaintext(t, st, anthropicKey)
	pt.Destroy(t)
	emu.requireEmpty(t)
	assertNoPlaintextIn(t, strings.TrimPrefix(st.Workspace().GetEnvVars()["PULUMI_BACKEND_URL"], "file://"), secrets...)
}

// resourceRef is the operator's ResourceRef, as envRefs and secretsRef use it.
type resourceRef struct {
	Type    string `json:"type"`
	Literal *struct {
		Value string `json:"value"`
	} `json:"literal"`
	Secret *struct {
		Name, Key, Namespace string
	} `json:"secret"`
}

// resolveRef reads a ref's value as the operator does: a Secret's key (in
// the Stack's namespace unless it names one) or a literal.
func resolveRef(t *testing.T, cp *kube.ControlPlane, namespace string, ref resourceRef) string {
	t.Helper()
	switch {
	case ref.Type == "Secret" && ref.Secret != nil:
		if ref.Secret.Namespace != "" {
			namespace = ref.Secret.Namespace
		}
		var secret struct {
			Data map[string]string `json:"data"`
		}
		require.NoError(t, cp.Do(t.Context(), http.MethodGet, "/api/v1/namespaces/"+namespace+"/secrets/"+ref.Secret.Name, nil, &secret))
		enc, ok := secret.Data[ref.Secret.Key]
		require.True(t, ok, "Secret %s has no key %s", ref.Secret.Name, ref.Secret.Key)
		value, err := base64.StdEncoding.DecodeString(enc)
		require.NoError(t, err)
		return string(value)
	case ref.Type == "Literal" && ref.Literal != nil:
		return ref.Literal.Value
	default:
		t.Fatalf("the example uses a %s ref, which the test does not resolve", ref.Type)
		return ""
	}
}
