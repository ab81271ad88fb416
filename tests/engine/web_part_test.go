package engine

import (
	"context"
	"encoding/base64"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/tests/kube"
)

// The labels and names the web part documents (provider/installation/web),
// written out so the test checks the documented contract.
const (
	webLabelManagedBy    = "app.kubernetes.io/managed-by"
	webManagedByValue    = "pulumi-openinspect"
	webLabelInstallation = "openinspect.dev/installation"
	webLabelName         = "app.kubernetes.io/name"
	webNameValue         = "open-inspect-web"
	webLabelInstance     = "app.kubernetes.io/instance"
	webServiceAuthKey    = "SERVICE_AUTH_SECRET"
	webNamespaceShared   = "shared"
)

const (
	webTestSecret       = "web-service-auth-secret-5f1d0c7e9a"
	webTestInstallation = "oi-webtest"
	webTestName         = "oi-web-webtest"
	webTestCP           = "https://oi-control-plane.example.workers.dev"
	webTestWS           = "wss://oi-control-plane.example.workers.dev"
	webRegistryNS       = "oi-registry"
	webPullSecret       = "regcred"
	// the pull secret's password, inside its dockerconfigjson
	webRegistryPassword = "registry-password-0c4e6d2b"
)

// webCluster is the control plane shared by the engine subtests.
type webCluster struct {
	cp         *kube.ControlPlane
	cs         kubernetes.Interface
	kubeconfig string // contents
	pullData   []byte // the pull secret's .dockerconfigjson
}

// TestWebOnKubernetes deploys the web part through the real pulumi CLI and the
// pulumi-kubernetes plugin to a real control plane (kube-apiserver, etcd,
// controller-manager, scheduler and kwok) and reads back what the API server
// stores.
func TestWebOnKubernetes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a Kubernetes control plane and runs the pulumi CLI")
	}
	// The tools cache from .ci/tools.sh and .ci/kube-tools.sh, as the engine
	// tests do; missing tools fail the test, they never skip it.
	binDir := kube.DefaultBinDir()
	t.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, tool := range []string{"pulumi", "pulumi-resource-kubernetes"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH (looked in %s too): run `make test-tools`", tool, binDir)
		}
	}
	require.NoError(t, kube.CheckBinaries("", true, t.Logf))

	startCtx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	begin := time.Now()
	cp, err := kube.Start(startCtx, kube.Options{Full: true, Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cp.Stop() })
	t.Logf("control plane up in %s", time.Since(begin).Round(time.Millisecond))

	kc, err := os.ReadFile(cp.Kubeconfig())
	require.NoError(t, err)
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig())
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	cl := &webCluster{cp: cp, cs: cs, kubeconfig: string(kc)}

	// A registry namespace holding the pull secret the web copies.
	auth := base64.StdEncoding.EncodeToString([]byte("robot:" + webRegistryPassword))
	cl.pullData = []byte(`{"auths":{"registry.example.com":{"auth":"` + auth + `"}}}`)
	cl.createNamespace(t, webRegistryNS, nil)
	_, err = cs.CoreV1().Secrets(webRegistryNS).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: webPullSecret},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: cl.pullData},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	t.Run("managed", cl.testManaged)
	t.Run("existing namespace", cl.testForeign)
	t.Run("shared", cl.testShared)
}

// webStack is an Automation API inline program around deployWeb under a plain
// component, with a local backend. env goes to the pulumi CLI (and so to the
// kubernetes plugin).
func webStack(t *testing.T, project string, spec func() *web.Args, env map[string]string) auto.Stack {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"work", "backend", "home"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
	}
	program := func(ctx *pulumi.Context) error {
		comp := &pulumi.ResourceState{}
		if err := ctx.RegisterComponentResource("openinspect:test:Web", "oi", comp); err != nil {
			return err
		}
		in := web.Inputs{
			Installation: pulumi.String(webTestInstallation).ToStringOutput(), Name: webTestName,
			ServiceAuthSecret: pulumi.ToSecret(pulumi.String(webTestSecret)).(pulumi.StringOutput),
			SandboxProvider:   "modal", AppName: "Open-Inspect",
		}
		in.ControlPlaneURL, in.WebSocketURL = pulumi.String(webTestCP), pulumi.String(webTestWS)
		in.Opts = []pulumi.ResourceOption{pulumi.Parent(comp)}
		res, err := web.Deploy(ctx, "oi", spec(), in)
		if err != nil {
			return err
		}
		ctx.Export("url", res.URL)
		return nil
	}
	vars := map[string]string{
		"PULUMI_BACKEND_URL":                          "file://" + filepath.Join(dir, "backend"),
		"PULUMI_CONFIG_PASSPHRASE":                    "web-test",
		"PULUMI_SKIP_UPDATE_CHECK":                    "true",
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
	}
	maps.Copy(vars, env)
	proj := workspace.Project{Name: tokens.PackageName(project), Runtime: workspace.NewProjectRuntimeInfo("go", nil)}
	stack, err := auto.UpsertStackInlineSource(t.Context(), "test", project, program,
		auto.Project(proj), auto.WorkDir(filepath.Join(dir, "work")),
		auto.PulumiHome(filepath.Join(dir, "home")), auto.EnvVars(vars))
	require.NoError(t, err)
	return stack
}

func (cl *webCluster) createNamespace(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	_, err := cl.cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// waitGone polls until get answers 404.
func waitGone(t *testing.T, what string, get func() error) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := get()
		if apierrors.IsNotFound(err) {
			return
		}
		require.True(t, time.Now().Before(deadline), "%s still present 2 min after destroy (last error %v)", what, err)
		time.Sleep(250 * time.Millisecond)
	}
}

// userLabels drops the label the API server puts on every namespace.
func userLabels(l map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		if k != corev1.LabelMetadataName {
			out[k] = v
		}
	}
	return out
}

func assertOwned(t *testing.T, what string, labels map[string]string, web bool) {
	t.Helper()
	assert.Equal(t, webManagedByValue, labels[webLabelManagedBy], "%s: managed-by label", what)
	assert.Equal(t, webTestInstallation, labels[webLabelInstallation], "%s: installation label", what)
	if web {
		assert.Equal(t, webNameValue, labels[webLabelName], "%s: name label", what)
		assert.Equal(t, webTestName, labels[webLabelInstance], "%s: instance label", what)
	}
}

// requireNoWebPlaintext checks the stack's state as stored (the backend
// directory) and as `pulumi stack export` prints it for the secrets'
// plaintext and base64 forms; the export with --show-secrets must hold them,
// so the scan looks where they are.
func requireNoWebPlaintext(t *testing.T, stack auto.Stack, secrets ...string) {
	t.Helper()
	ws := stack.Workspace()
	env := os.Environ()
	for k, v := range ws.GetEnvVars() {
		env = append(env, k+"="+v)
	}
	env = append(env, "PULUMI_HOME="+filepath.Join(filepath.Dir(ws.WorkDir()), "home"))
	export := func(args ...string) string {
		cmd := exec.CommandContext(t.Context(), "pulumi", append([]string{"stack", "export", "--stack", "test"}, args...)...)
		cmd.Dir, cmd.Env = ws.WorkDir(), env
		out, err := cmd.Output()
		require.NoError(t, err, "pulumi stack export %v", args)
		return string(out)
	}
	texts := map[string]string{"pulumi stack export": export()}
	backend := strings.TrimPrefix(ws.GetEnvVars()["PULUMI_BACKEND_URL"], "file://")
	require.NoError(t, filepath.WalkDir(backend, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		texts[path] = string(raw)
		return err
	}))
	require.Greater(t, len(texts), 1, "no state files under %s", backend)
	shown := export("--show-secrets")
	for _, s := range secrets {
		b64 := base64.StdEncoding.EncodeToString([]byte(s))
		// pulumi-kubernetes keeps a Secret's stringData as base64 data.
		require.True(t, strings.Contains(shown, s) || strings.Contains(shown, b64),
			"the state holds the secret %.12s... (encrypted)", s)
		for where, text := range texts {
			require.NotContains(t, text, s, "%s holds a secret in plaintext", where)
			require.NotContains(t, text, b64, "%s holds a secret in base64", where)
		}
	}
}

// kubeconfigClientKey is the admin key embedded in the kubeconfig.
func kubeconfigClientKey(t *testing.T, kubeconfig string) string {
	for line := range strings.SplitSeq(kubeconfig, "\n") {
		if k, ok := strings.CutPrefix(strings.TrimSpace(line), "client-key-data:"); ok {
			return strings.TrimSpace(k)
		}
	}
	t.Fatal("kubeconfig has no client-key-data")
	return ""
}

func (cl *webCluster) testManaged(t *testing.T) {
	const ns = "oi-web-managed"
	ctx := t.Context()
	// The explicit provider must be what reaches the cluster: the ambient
	// kubeconfig points nowhere, in this process and in the plugin's.
	nowhere := filepath.Join(t.TempDir(), "no-kubeconfig")
	t.Setenv("KUBECONFIG", nowhere)
	spec := func() *web.Args {
		return &web.Args{
			Image: "ghcr.io/example/open-inspect-web:1", Namespace: ns,
			Kubeconfig: pulumi.ToSecret(pulumi.String(cl.kubeconfig)).(pulumi.StringOutput),
			Replicas:   new(2), Port: new(8080),
			ImagePullSecrets: []web.PullSecret{{Name: webPullSecret, Namespace: webRegistryNS}},
			Env:              map[string]string{"NODE_OPTIONS": "--max-old-space-size=256"},
		}
	}
	stack := webStack(t, "oi-web-managed", spec, map[string]string{"KUBECONFIG": nowhere})

	// A first preview against an empty cluster plans the whole installation.
	begin := time.Now()
	first, err := stack.Preview(ctx, optpreview.SuppressProgress())
	require.NoError(t, err)
	// stack, component, provider, namespace, pull secret copy, secret,
	// deployment, service, two network policies (and the pull secret's source
	// is read, which the summary leaves out on a first preview).
	assert.Equal(t, 10, first.ChangeSummary[apitype.OpCreate], "%v", first.ChangeSummary)
	for op := range first.ChangeSummary {
		assert.Contains(t, []apitype.OpType{apitype.OpCreate, apitype.OpRead}, op, "%v", first.ChangeSummary)
	}
	t.Logf("first preview in %s", time.Since(begin).Round(time.Millisecond))
	_, err = cl.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "a preview creates nothing (%v)", err)

	// The preview above was this update's: the CLI's `pulumi up` previews
	// once, as here.
	begin = time.Now()
	up, err := stack.Up(ctx, optup.SuppressProgress())
	require.NoError(t, err)
	t.Logf("up in %s", time.Since(begin).Round(time.Millisecond))
	// The engine ran the plugin from the tools cache (an ambient plugin on
	// $PATH wins over the version the SDK asks for; nothing is downloaded).
	assert.Contains(t, up.StdOut, "using pulumi-resource-kubernetes from $PATH at "+
		filepath.Join(kube.DefaultBinDir(), "pulumi-resource-kubernetes"))
	assert.Equal(t, "http://"+webTestName+"."+ns+".svc.cluster.local:8080", up.Outputs["url"].Value)

	// The namespace is the installation's.
	nsObj, err := cl.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err)
	assertOwned(t, "namespace", nsObj.Labels, false)

	// The Deployment: env as stored, pull secrets, Ready (kwok runs the pods).
	dep, err := cl.cs.AppsV1().Deployments(ns).Get(ctx, webTestName, metav1.GetOptions{})
	require.NoError(t, err)
	assertOwned(t, "deployment", dep.Labels, true)
	assertOwned(t, "pod template", dep.Spec.Template.Labels, true)
	require.NotNil(t, dep.Spec.Replicas)
	assert.EqualValues(t, 2, *dep.Spec.Replicas)
	assert.EqualValues(t, 2, dep.Status.ReadyReplicas, "pulumi-kubernetes waited for the rollout")
	assert.EqualValues(t, 2, dep.Status.AvailableReplicas)
	assert.Equal(t, []corev1.LocalObjectReference{{Name: webPullSecret}}, dep.Spec.Template.Spec.ImagePullSecrets)
	require.Len(t, dep.Spec.Template.Spec.Containers, 1)
	c := dep.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "ghcr.io/example/open-inspect-web:1", c.Image)
	require.Len(t, c.Ports, 1)
	assert.EqualValues(t, 8080, c.Ports[0].ContainerPort)
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for k, v := range map[string]string{
		"CONTROL_PLANE_URL": webTestCP, "NEXT_PUBLIC_WS_URL": webTestWS, "SANDBOX_PROVIDER": "modal",
		"NEXT_PUBLIC_SANDBOX_PROVIDER": "modal", "NEXT_PUBLIC_APP_NAME": "Open-Inspect", "NEXT_PUBLIC_APP_ICON_URL": "",
		"PORT": "8080", "HOSTNAME": "0.0.0.0", "NODE_OPTIONS": "--max-old-space-size=256",
	} {
		assert.Equal(t, v, env[k].Value, "env %s", k)
	}
	auth := env[webServiceAuthKey]
	assert.Empty(t, auth.Value, "the service secret is never a literal in the pod spec")
	require.NotNil(t, auth.ValueFrom)
	require.NotNil(t, auth.ValueFrom.SecretKeyRef)
	assert.Equal(t, webTestName, auth.ValueFrom.SecretKeyRef.Name)
	assert.Equal(t, webServiceAuthKey, auth.ValueFrom.SecretKeyRef.Key)
	assert.Len(t, env, 10)

	// The Secret the env refers to.
	sec, err := cl.cs.CoreV1().Secrets(ns).Get(ctx, webTestName, metav1.GetOptions{})
	require.NoError(t, err)
	assertOwned(t, "service secret", sec.Labels, true)
	assert.Equal(t, webTestSecret, string(sec.Data[webServiceAuthKey]))

	// The pull secret copy: same type and data, our labels.
	pull, err := cl.cs.CoreV1().Secrets(ns).Get(ctx, webPullSecret, metav1.GetOptions{})
	require.NoError(t, err)
	assertOwned(t, "pull secret copy", pull.Labels, true)
	assert.Equal(t, corev1.SecretTypeDockerConfigJson, pull.Type)
	assert.Equal(t, map[string][]byte{corev1.DockerConfigJsonKey: cl.pullData}, pull.Data)

	// The Service.
	svc, err := cl.cs.CoreV1().Services(ns).Get(ctx, webTestName, metav1.GetOptions{})
	require.NoError(t, err)
	assertOwned(t, "service", svc.Labels, true)
	assert.Equal(t, corev1.ServiceTypeClusterIP, svc.Spec.Type)
	assert.NotEmpty(t, svc.Spec.ClusterIP)
	require.Len(t, svc.Spec.Ports, 1)
	assert.EqualValues(t, 8080, svc.Spec.Ports[0].Port)
	assert.Equal(t, intstr.FromString("http"), svc.Spec.Ports[0].TargetPort)
	assert.Equal(t, map[string]string{webLabelName: webNameValue, webLabelInstance: webTestName}, svc.Spec.Selector)

	// NetworkPolicies: everything in the namespace denied, the web port admitted.
	pols, err := cl.cs.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, pols.Items, 2)
	byName := map[string]int{}
	for i, p := range pols.Items {
		byName[p.Name] = i
		assertOwned(t, "network policy "+p.Name, p.Labels, true)
	}
	deny := pols.Items[byName[webTestName+"-default-deny"]].Spec
	assert.Empty(t, deny.PodSelector.MatchLabels, "the deny policy selects every pod")
	assert.Empty(t, deny.PodSelector.MatchExpressions)
	assert.Equal(t, []string{"Ingress"}, policyTypes(deny.PolicyTypes))
	assert.Empty(t, deny.Ingress, "no ingress rule: all ingress denied")
	allow := pols.Items[byName[webTestName]].Spec
	assert.Equal(t, map[string]string{webLabelName: webNameValue, webLabelInstance: webTestName}, allow.PodSelector.MatchLabels)
	assert.Equal(t, []string{"Ingress"}, policyTypes(allow.PolicyTypes))
	require.Len(t, allow.Ingress, 1)
	assert.Empty(t, allow.Ingress[0].From, "from anywhere")
	require.Len(t, allow.Ingress[0].Ports, 1)
	p := allow.Ingress[0].Ports[0]
	require.NotNil(t, p.Protocol)
	require.NotNil(t, p.Port)
	assert.Equal(t, corev1.ProtocolTCP, *p.Protocol)
	assert.Equal(t, intstr.FromInt32(8080), *p.Port)

	// Secrets stay secret in state: the service secret, the kubeconfig's key,
	// the registry password.
	requireNoWebPlaintext(t, stack, webTestSecret, kubeconfigClientKey(t, cl.kubeconfig), string(cl.pullData))

	begin = time.Now()
	preview, err := stack.Preview(ctx, optpreview.SuppressProgress())
	require.NoError(t, err)
	assertNoChanges(t, preview)
	t.Logf("no-op preview in %s", time.Since(begin).Round(time.Millisecond))

	begin = time.Now()
	stop := cl.reapPods(ns)
	_, err = stack.Destroy(ctx)
	stop()
	require.NoError(t, err)
	waitGone(t, "namespace "+ns, func() error {
		_, err := cl.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err
	})
	t.Logf("destroyed (namespace gone) in %s", time.Since(begin).Round(time.Millisecond))
	_, err = cl.cs.CoreV1().Secrets(webRegistryNS).Get(ctx, webPullSecret, metav1.GetOptions{})
	require.NoError(t, err, "the source pull secret is only read, never deleted")
}

func policyTypes(ts []networkingv1.PolicyType) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

// testForeign points managed mode at namespaces the installation does not own
// (through the default provider and $KUBECONFIG): preview and up fail on
// web.namespace and nothing lands in the namespace.
func (cl *webCluster) testForeign(t *testing.T) {
	ctx := t.Context()
	t.Setenv("KUBECONFIG", cl.cp.Kubeconfig())
	for _, tc := range []struct {
		ns     string
		labels map[string]string
		want   string
	}{
		{"oi-web-foreign-bare", map[string]string{"team": "payments"}, "has no openinspect.dev/installation label"},
		{"oi-web-foreign-other", map[string]string{webLabelInstallation: "oi-someone-else", webLabelManagedBy: webManagedByValue},
			`belongs to installation "oi-someone-else"`},
	} {
		t.Run(tc.ns, func(t *testing.T) {
			cl.createNamespace(t, tc.ns, tc.labels)
			spec := func() *web.Args { return &web.Args{Image: "web:1", Namespace: tc.ns} }
			stack := webStack(t, "oi-web-foreign", spec, map[string]string{"KUBECONFIG": cl.cp.Kubeconfig()})

			_, err := stack.Preview(ctx, optpreview.SuppressProgress())
			require.Error(t, err)
			msg := err.Error()
			t.Logf("preview error: %s", msg)
			assert.Contains(t, msg, `web.namespace: namespace "`+tc.ns+`" already exists and `+tc.want)
			assert.Contains(t, msg, `set web.namespaceMode to "shared"`)

			// Up directly: the preview above already failed, and this is
			// about the update failing the same way.
			_, err = stack.Up(ctx, optup.SuppressProgress())
			require.Error(t, err, "up fails like the preview")
			assert.Contains(t, err.Error(), "web.namespace: namespace \""+tc.ns+"\" already exists")

			nsObj, err := cl.cs.CoreV1().Namespaces().Get(ctx, tc.ns, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.labels, userLabels(nsObj.Labels), "the foreign namespace's labels are untouched")
			cl.requireNoWebObjects(t, tc.ns)

			_, err = stack.Destroy(ctx)
			require.NoError(t, err)
			_, err = cl.cs.CoreV1().Namespaces().Get(ctx, tc.ns, metav1.GetOptions{})
			require.NoError(t, err, "destroy never touches a namespace it did not create")
		})
	}

	// A namespace carrying this installation's label (say, after the state
	// was lost) is adopted: the preview passes the check.
	t.Run("own label", func(t *testing.T) {
		const ns = "oi-web-own-label"
		cl.createNamespace(t, ns, map[string]string{webLabelInstallation: webTestInstallation})
		spec := func() *web.Args { return &web.Args{Image: "web:1", Namespace: ns} }
		stack := webStack(t, "oi-web-own", spec, map[string]string{"KUBECONFIG": cl.cp.Kubeconfig()})
		preview, err := stack.Preview(ctx, optpreview.SuppressProgress())
		require.NoError(t, err)
		assert.Positive(t, preview.ChangeSummary[apitype.OpCreate])
	})
}

// requireNoWebObjects: no object of the web's kinds exists in ns.
func (cl *webCluster) requireNoWebObjects(t *testing.T, ns string) {
	t.Helper()
	ctx := t.Context()
	deps, err := cl.cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, deps.Items, "deployments in %s", ns)
	svcs, err := cl.cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, svcs.Items, "services in %s", ns)
	secs, err := cl.cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, secs.Items, "secrets in %s", ns)
	pols, err := cl.cs.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, pols.Items, "network policies in %s", ns)
}

// testShared deploys into a namespace someone else owns (explicit provider,
// kubeconfig given as a path): a foreign object under the web's name is
// refused; no Namespace, no NetworkPolicy; destroy removes only the web's objects.
func (cl *webCluster) testShared(t *testing.T) {
	const ns = "oi-web-shared"
	ctx := t.Context()
	nowhere := filepath.Join(t.TempDir(), "no-kubeconfig")
	t.Setenv("KUBECONFIG", nowhere)
	nsLabels := map[string]string{"team": "platform"}
	cl.createNamespace(t, ns, nsLabels)
	_, err := cl.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}, Data: map[string]string{"a": "b"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	spec := func() *web.Args {
		return &web.Args{
			Image: "ghcr.io/example/open-inspect-web:1", Namespace: ns, NamespaceMode: new(webNamespaceShared),
			Kubeconfig: pulumi.String(cl.cp.Kubeconfig()), PublicURL: new("https://inspect.example.com"),
		}
	}
	stack := webStack(t, "oi-web-shared", spec, map[string]string{"KUBECONFIG": nowhere})

	// An object under the web's name that is not the installation's is
	// refused at preview, not upserted.
	_, err = cl.cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: webTestName}, StringData: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = stack.Preview(ctx, optpreview.SuppressProgress())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "web.namespace: Secret "+ns+"/"+webTestName+" already exists and is not this installation's")
	require.NoError(t, cl.cs.CoreV1().Secrets(ns).Delete(ctx, webTestName, metav1.DeleteOptions{}))

	begin := time.Now()
	up, err := previewUpStack(ctx, t, stack, optup.SuppressProgress())
	require.NoError(t, err)
	t.Logf("up in %s", time.Since(begin).Round(time.Millisecond))
	assert.Equal(t, "https://inspect.example.com", up.Outputs["url"].Value)

	nsObj, err := cl.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, nsLabels, userLabels(nsObj.Labels), "a shared namespace is not labelled")
	pols, err := cl.cs.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, pols.Items, "no network policy in a shared namespace")
	dep, err := cl.cs.AppsV1().Deployments(ns).Get(ctx, webTestName, metav1.GetOptions{})
	require.NoError(t, err)
	assertOwned(t, "deployment", dep.Labels, true)
	assert.EqualValues(t, 1, dep.Status.ReadyReplicas)
	assert.EqualValues(t, 3000, dep.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort)
	assert.Empty(t, dep.Spec.Template.Spec.ImagePullSecrets)
	svc, err := cl.cs.CoreV1().Services(ns).Get(ctx, webTestName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 3000, svc.Spec.Ports[0].Port)
	sec, err := cl.cs.CoreV1().Secrets(ns).Get(ctx, webTestName, metav1.GetOptions{})
	require.NoError(t, err)
	assertOwned(t, "service secret", sec.Labels, true)

	begin = time.Now()
	preview, err := stack.Preview(ctx, optpreview.SuppressProgress())
	require.NoError(t, err)
	assertNoChanges(t, preview)
	t.Logf("no-op preview in %s", time.Since(begin).Round(time.Millisecond))

	begin = time.Now()
	stop := cl.reapPods(ns)
	_, err = stack.Destroy(ctx)
	stop()
	require.NoError(t, err)
	t.Logf("destroyed in %s", time.Since(begin).Round(time.Millisecond))
	nsObj, err = cl.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err, "destroy leaves the shared namespace")
	assert.Equal(t, corev1.NamespaceActive, nsObj.Status.Phase)
	_, err = cl.cs.CoreV1().ConfigMaps(ns).Get(ctx, "someone-elses", metav1.GetOptions{})
	require.NoError(t, err, "and what else is in it")
	waitGone(t, "deployment", func() error {
		_, err := cl.cs.AppsV1().Deployments(ns).Get(ctx, webTestName, metav1.GetOptions{})
		return err
	})
	cl.requireNoWebObjects(t, ns)
}

// reapPods plays the kubelet's last step for pods being deleted in ns:
// once a kubelet has stopped a pod's containers it removes the pod at once,
// but kwok's default pod-delete stage waits a random time up to the pod's
// grace period (30 s), which would only slow the destroys down. Call the
// returned function to stop.
func (cl *webCluster) reapPods(ns string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		zero := int64(0)
		for ctx.Err() == nil {
			pods, err := cl.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, p := range pods.Items {
					if p.DeletionTimestamp != nil {
						_ = cl.cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// assertNoChanges: a preview that only re-reads (the pull secrets' sources)
// and leaves everything else the same.
func assertNoChanges(t *testing.T, preview auto.PreviewResult) {
	t.Helper()
	for op, n := range preview.ChangeSummary {
		if op != apitype.OpSame && op != apitype.OpRead {
			t.Errorf("preview plans %d %s:\n%s", n, op, preview.StdOut)
		}
	}
}

// fakeObjects answers Object from a map keyed "<kind>/<name>".
