package web

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/internal/web/kube"
)

func TestValidateWebMessages(t *testing.T) {
	valid := func() *Args {
		return &Args{Image: "ghcr.io/example/web:1", Namespace: "open-inspect"}
	}
	for _, tc := range []struct {
		name   string
		modify func(*Args)
		want   []string
	}{
		{"valid", func(*Args) {}, nil},
		{"valid with everything", func(w *Args) {
			w.NamespaceMode, w.Replicas, w.Port = new("shared"), new(0), new(65535)
			w.PublicURL = new("https://inspect.example.com")
			w.ImagePullSecrets = []PullSecret{{Name: "regcred", Namespace: "registry"}, {Name: "other", Namespace: "registry"}}
			w.Env = map[string]string{"NODE_OPTIONS": "--max-old-space-size=512"}
		}, nil},
		{"mode", func(w *Args) { w.NamespaceMode = new("x") },
			[]string{`web.namespaceMode: must be "managed" or "shared", got "x"`}},
		{"image", func(w *Args) { w.Image = " " }, []string{"web.image: required"}},
		{"image whitespace", func(w *Args) { w.Image = "a b" },
			[]string{`web.image: must not contain whitespace, got "a b"`}},
		{"namespace", func(w *Args) { w.Namespace = "" }, []string{"web.namespace: required"}},
		{"namespace dns", func(w *Args) { w.Namespace = "Open_Inspect" },
			[]string{`web.namespace: "Open_Inspect" is not a valid namespace name: a lowercase RFC 1123 label`}},
		{"system namespace managed", func(w *Args) { w.Namespace = "kube-system" },
			[]string{`web.namespace: "kube-system" is a system namespace`}},
		{"system namespace shared is fine", func(w *Args) { w.Namespace, w.NamespaceMode = "default", new("shared") }, nil},
		{"port low", func(w *Args) { w.Port = new(0) }, []string{"web.port: must be between 1 and 65535, got 0"}},
		{"port high", func(w *Args) { w.Port = new(65536) }, []string{"web.port: must be between 1 and 65535, got 65536"}},
		{"replicas", func(w *Args) { w.Replicas = new(-1) }, []string{"web.replicas: must be 0 or more, got -1"}},
		{"pull secrets", func(w *Args) {
			w.ImagePullSecrets = []PullSecret{
				{Name: "ok", Namespace: "registry"}, {Name: "", Namespace: ""}, {Name: "Bad_Name", Namespace: "Bad_NS"},
				{Name: "ok", Namespace: "elsewhere"},
			}
		}, []string{
			"web.imagePullSecrets[1].name: required",
			"web.imagePullSecrets[1].namespace: required",
			`web.imagePullSecrets[2].name: "Bad_Name" is not a valid Secret name`,
			`web.imagePullSecrets[2].namespace: "Bad_NS" is not a valid namespace name`,
			`web.imagePullSecrets[3].name: "ok" is also imagePullSecrets[0]'s name`,
		}},
		{"env clashes", func(w *Args) {
			w.Env = map[string]string{"NEXT_PUBLIC_WS_URL": "x", "CONTROL_PLANE_URL": "y", "FINE": "z", "1BAD": "w", "PORT": "1"}
		}, []string{
			"web.env.1BAD: not a valid environment variable name",
			"web.env.CONTROL_PLANE_URL: set by the installation itself; remove it from env",
			"web.env.NEXT_PUBLIC_WS_URL: set by the installation itself; remove it from env",
			"web.env.PORT: set by the installation itself; remove it from env",
		}},
		{"all at once", func(w *Args) {
			*w = Args{NamespaceMode: new("x"), Port: new(-1), Replicas: new(-2),
				ImagePullSecrets: []PullSecret{{}}, Env: map[string]string{"SERVICE_AUTH_SECRET": "s"}}
		}, []string{
			"web.image: required",
			`web.namespaceMode: must be "managed" or "shared", got "x"`,
			"web.namespace: required",
			"web.replicas: must be 0 or more, got -2",
			"web.port: must be between 1 and 65535, got -1",
			"web.imagePullSecrets[0].name: required",
			"web.imagePullSecrets[0].namespace: required",
			"web.env.SERVICE_AUTH_SECRET: set by the installation itself; remove it from env",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := valid()
			tc.modify(w)
			errs := Validate("web", w)
			require.Len(t, errs, len(tc.want), "%v", errs)
			for i, want := range tc.want {
				assert.True(t, strings.HasPrefix(errs[i].Error(), want), "error %d:\n got  %s\n want %s...", i, errs[i], want)
			}
		})
	}
	assert.Nil(t, Validate("web", nil))
	errs := Validate("spec.web", &Args{Namespace: "ns"})
	require.Len(t, errs, 1)
	assert.True(t, strings.HasPrefix(errs[0].Error(), "spec.web.image: required on platform kubernetes: "), "the prefix starts every path: %s", errs[0])
}

type fakeNamespaces map[string]kube.Namespace

// Object answers that no object exists: the namespace tests are about namespaces.
func (f fakeNamespaces) Object(context.Context, string, string, string) (kube.Object, error) {
	return kube.Object{}, nil
}

func (f fakeNamespaces) Namespace(_ context.Context, name string) (kube.Namespace, error) {
	if name == "broken" {
		return kube.Namespace{}, errors.New("connection refused")
	}
	return f[name], nil
}

func TestCheckWebNamespace(t *testing.T) {
	ns := fakeNamespaces{
		"ours":        {Exists: true, Phase: "Active", Labels: map[string]string{webLabelInstallation: "oi-prod"}},
		"bare":        {Exists: true, Phase: "Active", Labels: map[string]string{}},
		"other":       {Exists: true, Phase: "Active", Labels: map[string]string{webLabelInstallation: "oi-dev"}},
		"terminating": {Exists: true, Phase: "Terminating", Labels: map[string]string{webLabelInstallation: "oi-prod"}},
	}
	ctx := t.Context()
	require.NoError(t, checkWebNamespace(ctx, ns, "missing", "oi-prod", true), "a namespace that does not exist is created")
	require.NoError(t, checkWebNamespace(ctx, ns, "ours", "oi-prod", true), "our own namespace is adopted")

	err := checkWebNamespace(ctx, ns, "bare", "oi-prod", true)
	require.Error(t, err)
	assert.Equal(t, `web.namespace: namespace "bare" already exists and has no openinspect.dev/installation label, `+
		`so it is not this installation's ("oi-prod"): namespaceMode "managed" creates the namespace and deletes it, `+
		`with everything in it, on destroy, and will not take over a foreign one; pick a namespace name that does not `+
		`exist yet, or set web.namespaceMode to "shared" to deploy into this namespace without managing it`, err.Error())

	err = checkWebNamespace(ctx, ns, "other", "oi-prod", true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `namespace "other" already exists and belongs to installation "oi-dev"`)

	err = checkWebNamespace(ctx, ns, "terminating", "oi-prod", true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `web.namespace: namespace "terminating" is being deleted`)

	err = checkWebNamespace(ctx, ns, "broken", "oi-prod", true)
	require.Error(t, err)
	assert.Equal(t, `web.namespace: checking whether namespace "broken" already exists: connection refused`, err.Error())

	// Shared mode leaves an unlabelled or own namespace alone but refuses
	// another installation's: that installation's destroy deletes it.
	require.NoError(t, checkWebNamespace(ctx, ns, "bare", "oi-prod", false))
	require.NoError(t, checkWebNamespace(ctx, ns, "ours", "oi-prod", false))
	require.NoError(t, checkWebNamespace(ctx, ns, "missing", "oi-prod", false))
	err = checkWebNamespace(ctx, ns, "other", "oi-prod", false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `namespace "other" belongs to installation "oi-dev" (label openinspect.dev/installation), not this one ("oi-prod")`)
}

// webMocks records what deployWeb registers, without a cluster.
type webMocks struct {
	mu   sync.Mutex
	regs map[string]pulumi.MockResourceArgs // by name
}

func (m *webMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.regs[args.Name] = args
	out := args.Inputs.Copy()
	id := args.Name + "-id"
	if args.ReadRPC != nil { // a read pull secret
		id = args.ID
		out = resource.NewPropertyMapFromMap(map[string]any{
			"type": "kubernetes.io/dockerconfigjson",
			"data": map[string]any{".dockerconfigjson": "e30="},
		})
	}
	return id, out, nil
}

func (m *webMocks) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

const webTestSecret = "web-service-auth-secret-5f1d0c7e9a"

func testWebInputs(installation, name string) Inputs {
	return Inputs{
		Installation:      pulumi.String(installation).ToStringOutput(),
		Name:              name,
		ControlPlaneURL:   pulumi.String("https://cp.example.workers.dev"),
		WebSocketURL:      pulumi.String("wss://cp.example.workers.dev"),
		ServiceAuthSecret: pulumi.ToSecret(pulumi.String(webTestSecret)).(pulumi.StringOutput),
		SandboxProvider:   "modal",
		AppName:           "Open-Inspect",
	}
}

// TestDeployWebRegistrations checks, with mocks, that every Kubernetes child
// goes through the explicit provider, has a fixed name and
// delete-before-replace, and that the Deployment depends on the pull secret
// copies.
func TestDeployWebRegistrations(t *testing.T) {
	mocks := &webMocks{regs: map[string]pulumi.MockResourceArgs{}}
	urlCh := make(chan string, 1)
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		comp := &pulumi.ResourceState{}
		if err := ctx.RegisterComponentResource("test:index:Web", "oi", comp); err != nil {
			return err
		}
		in := testWebInputs("oi-prod", "oi-web-prod")
		in.Opts = []pulumi.ResourceOption{pulumi.Parent(comp)}
		in.Connect = func(kubeconfig, _ string) (kube.Reader, error) {
			if kubeconfig != "kc" {
				return nil, fmt.Errorf("check used kubeconfig %q", kubeconfig)
			}
			return fakeNamespaces{}, nil
		}
		res, err := Deploy(ctx, "oi", &Args{
			Image: "web:1", Namespace: "oi-prod", Kubeconfig: pulumi.String("kc"), Port: new(8080),
			ImagePullSecrets: []PullSecret{{Name: "regcred", Namespace: "registry"}},
		}, in)
		if err != nil {
			return err
		}
		res.URL.ApplyT(func(u string) string { urlCh <- u; return u })
		return nil
	}, pulumi.WithMocks("proj", "stack", mocks))
	require.NoError(t, err)
	select {
	case url := <-urlCh:
		assert.Equal(t, "http://oi-web-prod.oi-prod.svc.cluster.local:8080", url)
	case <-time.After(10 * time.Second):
		t.Fatal("the URL output never resolved")
	}

	names := make([]string, 0, len(mocks.regs))
	for n := range mocks.regs {
		names = append(names, n)
	}
	sort.Strings(names)
	assert.Equal(t, []string{"oi", "oi-web", "oi-web-allow", "oi-web-deny", "oi-web-k8s", "oi-web-ns",
		"oi-web-pull-regcred", "oi-web-pull-regcred-source", "oi-web-secret", "oi-web-svc"}, names)

	assert.Equal(t, "pulumi:providers:kubernetes", mocks.regs["oi-web-k8s"].TypeToken)
	assert.True(t, mocks.regs["oi-web-k8s"].Inputs["kubeconfig"].ContainsSecrets(), "the kubeconfig stays secret")
	for _, n := range names {
		r := mocks.regs[n]
		if !strings.HasPrefix(r.TypeToken, "kubernetes:") {
			continue
		}
		assert.Contains(t, r.Provider, "::oi-web-k8s::", "%s uses the explicit provider", n)
		if r.RegisterRPC != nil {
			assert.True(t, r.RegisterRPC.GetDeleteBeforeReplace(), "%s is delete-before-replace", n)
			assert.Equal(t, "urn:pulumi:stack::proj::test:index:Web::oi", r.RegisterRPC.GetParent(), "%s is the component's child", n)
			meta := r.Inputs["metadata"].ObjectValue()
			assert.True(t, meta["name"].IsString(), "%s is named explicitly", n)
			labels := meta["labels"].ObjectValue()
			assert.Equal(t, "pulumi-openinspect", labels[webLabelManagedBy].StringValue(), n)
			assert.Equal(t, "oi-prod", labels[webLabelInstallation].StringValue(), n)
		}
	}
	dep := mocks.regs["oi-web"].RegisterRPC
	assert.Contains(t, dep.GetDependencies(), "urn:pulumi:stack::proj::test:index:Web$kubernetes:core/v1:Secret::oi-web-pull-regcred")
	assert.Equal(t, "oi-web-prod", mocks.regs["oi-web-secret"].Inputs["metadata"].ObjectValue()["name"].StringValue())
	for _, n := range []string{"oi-web", "oi-web-svc", "oi-web-secret", "oi-web-pull-regcred", "oi-web-allow", "oi-web-deny"} {
		assert.Equal(t, "oi-prod", mocks.regs[n].Inputs["metadata"].ObjectValue()["namespace"].StringValue(),
			"%s is placed in the web namespace", n)
	}
	assert.True(t, mocks.regs["oi-web-secret"].Inputs["stringData"].ContainsSecrets(), "the service secret stays secret")
}

type fakeObjects map[string]kube.Object

func (f fakeObjects) Object(_ context.Context, kind, _, name string) (kube.Object, error) {
	return f[kind+"/"+name], nil
}

func TestCheckWebObjects(t *testing.T) {
	objects := []webObject{{kube.KindDeployment, "web"}, {kube.KindSecret, "web"}}
	ctx := t.Context()
	require.NoError(t, checkWebObjects(ctx, fakeObjects{}, "ns", "oi-a", objects), "nothing exists yet")
	own := kube.Object{Exists: true, Labels: map[string]string{webLabelInstallation: "oi-a"}}
	require.NoError(t, checkWebObjects(ctx, fakeObjects{"Deployment/web": own, "Secret/web": own}, "ns", "oi-a", objects),
		"the installation's own objects pass")
	for name, obj := range map[string]kube.Object{
		"unlabelled": {Exists: true, Labels: map[string]string{}},
		"another":    {Exists: true, Labels: map[string]string{webLabelInstallation: "oi-b"}},
	} {
		err := checkWebObjects(ctx, fakeObjects{"Deployment/web": own, "Secret/web": obj}, "ns", "oi-a", objects)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), `web.namespace: Secret ns/web already exists and is not this installation's ("oi-a"`)
	}
}
