package web

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	networkingv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/networking/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openinspect/pulumi-openinspect/provider/internal/kube"
)

// Args places the web UI (upstream's Next.js `packages/web`, as a container
// image) on Kubernetes.
type Args struct {
	Image            string             `pulumi:"image"`
	Namespace        string             `pulumi:"namespace"`
	NamespaceMode    *string            `pulumi:"namespaceMode,optional"`
	Kubeconfig       pulumi.StringInput `pulumi:"kubeconfig,optional" provider:"secret"`
	Replicas         *int               `pulumi:"replicas,optional"`
	Port             *int               `pulumi:"port,optional"`
	PublicURL        *string            `pulumi:"publicUrl,optional"`
	ImagePullSecrets []PullSecret       `pulumi:"imagePullSecrets,optional"`
	Env              map[string]string  `pulumi:"env,optional"`
}

// Annotate documents the web inputs.
func (w *Args) Annotate(a infer.Annotator) {
	a.SetToken("index", "Web")
	a.Describe(w, "The web UI on Kubernetes: a Deployment of the web image with a ClusterIP Service, and a Secret "+
		"holding the web's service-auth secret. Every object carries the labels `app.kubernetes.io/managed-by: "+
		"pulumi-openinspect` and `openinspect.dev/installation: <installation>`.")
	a.Describe(&w.Image, "The web UI container image (upstream `packages/web` built with `output: \"standalone\"`). "+
		"It must read the WebSocket URL at run time from `OI_WS_URL` (upstream bakes `NEXT_PUBLIC_WS_URL` in at "+
		"build time), so a rename needs no rebuild.")
	a.Describe(&w.Namespace, "The namespace the web UI runs in (a DNS-1123 label).")
	a.Describe(&w.NamespaceMode, "`managed` (default): the installation creates the namespace, labels it as its own, "+
		"admits ingress only on the web port (NetworkPolicies) and deletes it, with everything in it, on destroy. "+
		"A namespace that already exists is refused unless it carries this installation's "+
		"`openinspect.dev/installation` label. `shared`: the namespace must exist and is left alone; only the web's "+
		"own objects are created in it and removed on destroy.")
	a.Describe(&w.Kubeconfig, "The contents of a kubeconfig file, or the path of one. When set, an explicit "+
		"kubernetes provider using it places every web object; otherwise the default kubernetes provider does, and "+
		"the namespace check reads `kubernetes:kubeconfig` (stack configuration), then `$KUBECONFIG` and "+
		"`~/.kube/config`.")
	a.Describe(&w.Replicas, "The number of web pods (default 1).")
	a.Describe(&w.Port, "The port the web container listens on (`PORT`) and the Service exposes (default 3000).")
	a.Describe(&w.PublicURL, "The URL users reach the web UI at (an ingress or load balancer you manage), reported as "+
		"the web URL (and, unless webAppUrl is set, the control plane's web origin, which must be https or http on a "+
		"loopback host). Default: the Service's cluster-internal "+
		"URL, `http://<name>.<namespace>.svc.cluster.local:<port>`.")
	a.Describe(&w.ImagePullSecrets, "Existing `kubernetes.io/dockerconfigjson` Secrets in other namespaces, copied "+
		"(same name, type and data, ownership labels added) into the web namespace and referenced by the pods.")
	a.Describe(&w.Env, "Extra environment variables for the web container. The names the installation sets itself "+
		"(CONTROL_PLANE_URL, OI_CONTROL_PLANE_URL, OI_WS_URL, SANDBOX_PROVIDER, OI_SANDBOX_PROVIDER, OI_APP_NAME, "+
		"SERVICE_AUTH_SECRET, PORT, HOSTNAME) are refused.")
}

// PullSecret names an image-pull secret to copy into the web namespace.
type PullSecret struct {
	Name      string `pulumi:"name"`
	Namespace string `pulumi:"namespace"`
}

// Annotate documents a pull secret reference.
func (s *PullSecret) Annotate(a infer.Annotator) {
	a.SetToken("index", "ImagePullSecret")
	a.Describe(s, "An existing image-pull Secret to copy into the web namespace.")
	a.Describe(&s.Name, "The Secret's name; the copy has the same name.")
	a.Describe(&s.Namespace, "The namespace the Secret lives in.")
}

// Inputs is what the component hands the web part.
type Inputs struct {
	// Installation is the value of the ownership label: <prefix>-<deploymentName>.
	Installation string
	// Name is the Deployment/Service/Secret name: <prefix>-web-<deploymentName>.
	Name              string
	ControlPlaneURL   pulumi.StringInput
	WebSocketURL      pulumi.StringInput
	ServiceAuthSecret pulumi.StringInput
	SandboxProvider   string
	AppName           string
	// Opts go on every child (parent, dependsOn, retainOnDelete).
	Opts []pulumi.ResourceOption
	// Connect reaches the cluster the web objects go to, for the ownership
	// checks; nil means kube.New. Tests answer without a cluster.
	Connect func(kubeconfig, kubeContext string) (kube.Reader, error)
}

// Result is what the web part reports back.
type Result struct {
	URL pulumi.StringOutput
}

const (
	webNamespaceManaged = "managed"
	webNamespaceShared  = "shared"
	webDefaultReplicas  = 1
	webDefaultPort      = 3000

	webLabelManagedBy    = "app.kubernetes.io/managed-by"
	webManagedByValue    = "pulumi-openinspect"
	webLabelInstallation = "openinspect.dev/installation"
	webLabelName         = "app.kubernetes.io/name"
	webNameValue         = "open-inspect-web"
	webLabelInstance     = "app.kubernetes.io/instance"

	webServiceAuthKey = "SERVICE_AUTH_SECRET"
	webContainerName  = "web"
	webPortName       = "http"
)

// webManagedEnv are the container variables the installation sets itself.
// HOSTNAME: Next.js' standalone server binds to $HOSTNAME, which Kubernetes
// sets to the pod name; 0.0.0.0 makes it listen on every address.
var webManagedEnv = []string{
	"CONTROL_PLANE_URL", "OI_CONTROL_PLANE_URL", "OI_WS_URL", "SANDBOX_PROVIDER", "OI_SANDBOX_PROVIDER",
	"OI_APP_NAME", webServiceAuthKey, "PORT", "HOSTNAME",
}

// webSystemNamespaces are never created or deleted by an installation.
var webSystemNamespaces = map[string]bool{
	"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true,
}

// webPullSecretTypes are the Secret types the kubelet accepts as pull secrets.
var webPullSecretTypes = map[string]bool{
	"kubernetes.io/dockerconfigjson": true,
	"kubernetes.io/dockercfg":        true,
}

func (w *Args) mode() string {
	if w.NamespaceMode == nil || *w.NamespaceMode == "" {
		return webNamespaceManaged
	}
	return *w.NamespaceMode
}

func (w *Args) replicas() int {
	if w.Replicas == nil {
		return webDefaultReplicas
	}
	return *w.Replicas
}

func (w *Args) port() int {
	if w.Port == nil {
		return webDefaultPort
	}
	return *w.Port
}

// Validate checks a web spec before anything is registered; field paths start with prefix.
// It reports every problem, in field order. publicUrl is the installation's
// web origin and is checked with the other URLs (validate in openinspect_validate.go).
func Validate(prefix string, w *Args) []error {
	if w == nil {
		return nil
	}
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: "+format, append([]any{prefix, field}, args...)...))
	}

	if strings.TrimSpace(w.Image) == "" {
		add("image", "required")
	} else if strings.ContainsAny(w.Image, " \t\n") {
		add("image", "must not contain whitespace, got %q", w.Image)
	}

	mode := w.mode()
	if mode != webNamespaceManaged && mode != webNamespaceShared {
		add("namespaceMode", "must be %q or %q, got %q", webNamespaceManaged, webNamespaceShared, mode)
	}
	switch {
	case w.Namespace == "":
		add("namespace", "required")
	case len(validation.IsDNS1123Label(w.Namespace)) > 0:
		add("namespace", "%q is not a valid namespace name: %s", w.Namespace,
			strings.Join(validation.IsDNS1123Label(w.Namespace), "; "))
	case mode == webNamespaceManaged && webSystemNamespaces[w.Namespace]:
		add("namespace", "%q is a system namespace, which namespaceMode %q would take over and delete on destroy; "+
			"pick another name, or set namespaceMode to %q", w.Namespace, webNamespaceManaged, webNamespaceShared)
	}

	if w.Replicas != nil && *w.Replicas < 0 {
		add("replicas", "must be 0 or more, got %d", *w.Replicas)
	}
	if w.Port != nil && (*w.Port < 1 || *w.Port > 65535) {
		add("port", "must be between 1 and 65535, got %d", *w.Port)
	}
	seen := map[string]int{}
	for i, ps := range w.ImagePullSecrets {
		field := fmt.Sprintf("imagePullSecrets[%d]", i)
		switch {
		case ps.Name == "":
			add(field+".name", "required")
		case len(validation.IsDNS1123Subdomain(ps.Name)) > 0:
			add(field+".name", "%q is not a valid Secret name: %s", ps.Name,
				strings.Join(validation.IsDNS1123Subdomain(ps.Name), "; "))
		default:
			if j, dup := seen[ps.Name]; dup {
				add(field+".name", "%q is also imagePullSecrets[%d]'s name; the copies in the web namespace "+
					"would collide", ps.Name, j)
			} else {
				seen[ps.Name] = i
			}
		}
		switch {
		case ps.Namespace == "":
			add(field+".namespace", "required")
		case len(validation.IsDNS1123Label(ps.Namespace)) > 0:
			add(field+".namespace", "%q is not a valid namespace name", ps.Namespace)
		}
	}

	managed := map[string]bool{}
	for _, k := range webManagedEnv {
		managed[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(w.Env)) {
		switch {
		case managed[k]:
			add("env."+k, "set by the installation itself; remove it from env")
		case len(validation.IsEnvVarName(k)) > 0:
			add("env."+k, "not a valid environment variable name: %s", strings.Join(validation.IsEnvVarName(k), "; "))
		}
	}
	return errs
}

// checkWebNamespace refuses, in managed mode, a namespace that exists and is
// not this installation's. pulumi-kubernetes creates with server-side apply,
// which upserts: registering the Namespace would silently take over (and on
// destroy delete) a namespace someone else made.
func checkWebNamespace(ctx context.Context, r kube.NamespaceReader, namespace, installation string) error {
	ns, err := r.Namespace(ctx, namespace)
	if err != nil {
		return fmt.Errorf("web.namespace: checking whether namespace %q already exists: %w", namespace, err)
	}
	if !ns.Exists {
		return nil
	}
	owner, labelled := ns.Labels[webLabelInstallation]
	if owner != installation {
		found := "has no " + webLabelInstallation + " label"
		if labelled {
			found = fmt.Sprintf("belongs to installation %q (label %s)", owner, webLabelInstallation)
		}
		return fmt.Errorf("web.namespace: namespace %q already exists and %s, so it is not this installation's "+
			"(%q): namespaceMode %q creates the namespace and deletes it, with everything in it, on destroy, and "+
			"will not take over a foreign one; pick a namespace name that does not exist yet, or set "+
			"web.namespaceMode to %q to deploy into this namespace without managing it",
			namespace, found, installation, webNamespaceManaged, webNamespaceShared)
	}
	if ns.Phase == "Terminating" {
		return fmt.Errorf("web.namespace: namespace %q is being deleted; wait until it is gone and run again", namespace)
	}
	return nil
}

// webObject names one object the web part creates.
type webObject struct{ kind, name string }

// checkWebObjects refuses objects that exist under the web's names without
// this installation's label: pulumi-kubernetes would upsert them, taking over
// (and on destroy deleting) what another tool or installation made.
func checkWebObjects(ctx context.Context, r kube.ObjectReader, namespace, installation string, objects []webObject) error {
	for _, o := range objects {
		obj, err := r.Object(ctx, o.kind, namespace, o.name)
		if err != nil {
			return fmt.Errorf("web.namespace: checking whether %s %s/%s already exists: %w", o.kind, namespace, o.name, err)
		}
		if obj.Exists && obj.Labels[webLabelInstallation] != installation {
			return fmt.Errorf("web.namespace: %s %s/%s already exists and is not this installation's (%q; label %s): "+
				"the web part will not take it over; remove or rename it, or deploy the web into another namespace",
				o.kind, namespace, o.name, installation, webLabelInstallation)
		}
	}
	return nil
}

// Deploy registers the web UI's Kubernetes objects.
func Deploy(ctx *pulumi.Context, name string, spec *Args, in Inputs) (*Result, error) {
	if spec == nil {
		return nil, errors.New("web: no spec")
	}
	// The spec was validated with the rest of the installation (validateWeb,
	// validatePlan) before anything was registered.
	port, mode := spec.port(), spec.mode()

	ownership := map[string]string{
		webLabelManagedBy:    webManagedByValue,
		webLabelInstallation: in.Installation,
	}
	selector := pulumi.StringMap{
		webLabelName:     pulumi.String(webNameValue),
		webLabelInstance: pulumi.String(in.Name),
	}
	labels := pulumi.StringMap{}
	for k, v := range ownership {
		labels[k] = pulumi.String(v)
	}
	for k, v := range selector {
		labels[k] = v
	}
	opts := func(extra ...pulumi.ResourceOption) []pulumi.ResourceOption {
		return append(append([]pulumi.ResourceOption{}, in.Opts...), extra...)
	}

	// The kubeconfig the namespace check reads: the explicit provider's, else
	// the default provider's stack configuration, else client-go's defaults
	// (the same environment the default kubernetes provider sees).
	var kubeconfig pulumi.StringOutput
	kubeContext := ""
	var k8sOpts []pulumi.ResourceOption
	if spec.Kubeconfig != nil {
		kubeconfig = pulumi.ToSecret(spec.Kubeconfig).(pulumi.StringOutput)
		prov, err := kubernetes.NewProvider(ctx, name+"-web-k8s", &kubernetes.ProviderArgs{
			Kubeconfig: kubeconfig.ToStringPtrOutput(),
		}, opts()...)
		if err != nil {
			return nil, fmt.Errorf("web: kubernetes provider: %w", err)
		}
		k8sOpts = append(k8sOpts, pulumi.Provider(prov))
	} else {
		kc, _ := ctx.GetConfig("kubernetes:kubeconfig")
		kubeContext, _ = ctx.GetConfig("kubernetes:context")
		kubeconfig = pulumi.String(kc).ToStringOutput()
	}
	// Fixed names: a replacement must delete the old object first.
	objOpts := func(extra ...pulumi.ResourceOption) []pulumi.ResourceOption {
		return opts(append(append(append([]pulumi.ResourceOption{}, k8sOpts...), pulumi.DeleteBeforeReplace(true)), extra...)...)
	}

	// Every object the web part creates, checked for a foreign owner first.
	objects := []webObject{{kube.KindDeployment, in.Name}, {kube.KindService, in.Name}, {kube.KindSecret, in.Name}}
	for _, ps := range spec.ImagePullSecrets {
		objects = append(objects, webObject{kube.KindSecret, ps.Name})
	}
	if mode == webNamespaceManaged {
		objects = append(objects, webObject{kube.KindNetworkPolicy, in.Name}, webObject{kube.KindNetworkPolicy, in.Name + "-default-deny"})
	}
	installation, nsName := in.Installation, spec.Namespace
	check := func(c context.Context, kc string, managed bool) error {
		connect := in.Connect
		if connect == nil {
			connect = func(kubeconfig, kubeContext string) (kube.Reader, error) { return kube.New(kubeconfig, kubeContext) }
		}
		reader, err := connect(kc, kubeContext)
		if err != nil {
			return fmt.Errorf("web.namespace: checking whether namespace %q already exists: %w", nsName, err)
		}
		if managed {
			if err := checkWebNamespace(c, reader, nsName, installation); err != nil {
				return err
			}
		}
		return checkWebObjects(c, reader, nsName, installation, objects)
	}

	// The namespace every object goes to: an output that resolves only once
	// the checks passed, so nothing is placed before (in managed mode the
	// Namespace's own output).
	var namespace pulumi.StringOutput
	if mode == webNamespaceManaged {
		nsLabels := kubeconfig.ApplyTWithContext(ctx.Context(), func(c context.Context, kc string) (map[string]string, error) {
			if err := check(c, kc, true); err != nil {
				return nil, err
			}
			return ownership, nil
		}).(pulumi.StringMapOutput)
		// The labels derive from the (secret) kubeconfig only in timing.
		nsLabels = pulumi.Unsecret(nsLabels).(pulumi.StringMapOutput)
		ns, err := corev1.NewNamespace(ctx, name+"-web-ns", &corev1.NamespaceArgs{
			Metadata: metav1.ObjectMetaArgs{Name: pulumi.String(nsName), Labels: nsLabels},
		}, objOpts()...)
		if err != nil {
			return nil, fmt.Errorf("web: namespace: %w", err)
		}
		namespace = ns.Metadata.Name().Elem()
	} else {
		checked := kubeconfig.ApplyTWithContext(ctx.Context(), func(c context.Context, kc string) (string, error) {
			return nsName, check(c, kc, false)
		}).(pulumi.StringOutput)
		// The name derives from the (secret) kubeconfig only in timing.
		namespace = pulumi.Unsecret(checked).(pulumi.StringOutput)
	}
	meta := func(objName string, l pulumi.StringMap) metav1.ObjectMetaArgs {
		return metav1.ObjectMetaArgs{Name: pulumi.String(objName), Namespace: namespace, Labels: l}
	}

	// Image-pull secrets: read where they live, copied next to the pods.
	var pullRefs corev1.LocalObjectReferenceArray
	var pullCopies []pulumi.Resource
	for i, ps := range spec.ImagePullSecrets {
		src, err := corev1.GetSecret(ctx, name+"-web-pull-"+ps.Name+"-source",
			pulumi.ID(ps.Namespace+"/"+ps.Name), nil, opts(k8sOpts...)...)
		if err != nil {
			return nil, fmt.Errorf("web.imagePullSecrets[%d]: reading Secret %s/%s: %w", i, ps.Namespace, ps.Name, err)
		}
		field, ref := fmt.Sprintf("web.imagePullSecrets[%d]", i), ps.Namespace+"/"+ps.Name
		srcType := src.Type.ApplyT(func(t string) (*string, error) {
			if !webPullSecretTypes[t] {
				return nil, fmt.Errorf("%s: Secret %s has type %q, want kubernetes.io/dockerconfigjson", field, ref, t)
			}
			return &t, nil
		}).(pulumi.StringPtrOutput)
		cp, err := corev1.NewSecret(ctx, name+"-web-pull-"+ps.Name, &corev1.SecretArgs{
			Metadata: meta(ps.Name, labels),
			Type:     srcType,
			Data:     src.Data,
		}, objOpts()...)
		if err != nil {
			return nil, fmt.Errorf("%s: copying Secret %s: %w", field, ref, err)
		}
		pullRefs = append(pullRefs, corev1.LocalObjectReferenceArgs{Name: cp.Metadata.Name()})
		pullCopies = append(pullCopies, cp)
	}

	secret, err := corev1.NewSecret(ctx, name+"-web-secret", &corev1.SecretArgs{
		Metadata:   meta(in.Name, labels),
		Type:       pulumi.String("Opaque"),
		StringData: pulumi.StringMap{webServiceAuthKey: pulumi.ToSecret(in.ServiceAuthSecret).(pulumi.StringOutput)},
	}, objOpts()...)
	if err != nil {
		return nil, fmt.Errorf("web: secret: %w", err)
	}

	env := corev1.EnvVarArray{
		corev1.EnvVarArgs{Name: pulumi.String("CONTROL_PLANE_URL"), Value: in.ControlPlaneURL},
		corev1.EnvVarArgs{Name: pulumi.String("OI_CONTROL_PLANE_URL"), Value: in.ControlPlaneURL},
		corev1.EnvVarArgs{Name: pulumi.String("OI_WS_URL"), Value: in.WebSocketURL},
		corev1.EnvVarArgs{Name: pulumi.String("SANDBOX_PROVIDER"), Value: pulumi.String(in.SandboxProvider)},
		corev1.EnvVarArgs{Name: pulumi.String("OI_SANDBOX_PROVIDER"), Value: pulumi.String(in.SandboxProvider)},
		corev1.EnvVarArgs{Name: pulumi.String("OI_APP_NAME"), Value: pulumi.String(in.AppName)},
		corev1.EnvVarArgs{Name: pulumi.String(webServiceAuthKey), ValueFrom: corev1.EnvVarSourceArgs{
			SecretKeyRef: corev1.SecretKeySelectorArgs{Name: secret.Metadata.Name(), Key: pulumi.String(webServiceAuthKey)},
		}},
		corev1.EnvVarArgs{Name: pulumi.String("PORT"), Value: pulumi.String(strconv.Itoa(port))},
		corev1.EnvVarArgs{Name: pulumi.String("HOSTNAME"), Value: pulumi.String("0.0.0.0")},
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		env = append(env, corev1.EnvVarArgs{Name: pulumi.String(k), Value: pulumi.String(spec.Env[k])})
	}

	podSpec := corev1.PodSpecArgs{
		// The web talks to the control plane over HTTP, never to the Kubernetes API.
		AutomountServiceAccountToken: pulumi.Bool(false),
		Containers: corev1.ContainerArray{corev1.ContainerArgs{
			Name:  pulumi.String(webContainerName),
			Image: pulumi.String(spec.Image),
			Ports: corev1.ContainerPortArray{corev1.ContainerPortArgs{
				Name: pulumi.String(webPortName), ContainerPort: pulumi.Int(port), Protocol: pulumi.String("TCP"),
			}},
			Env: env,
		}},
	}
	if len(pullRefs) > 0 {
		podSpec.ImagePullSecrets = pullRefs
	}
	_, err = appsv1.NewDeployment(ctx, name+"-web", &appsv1.DeploymentArgs{
		Metadata: meta(in.Name, labels),
		Spec: appsv1.DeploymentSpecArgs{
			Replicas: pulumi.Int(spec.replicas()),
			Selector: metav1.LabelSelectorArgs{MatchLabels: selector},
			Template: corev1.PodTemplateSpecArgs{
				Metadata: metav1.ObjectMetaArgs{Labels: labels},
				Spec:     podSpec,
			},
		},
	}, objOpts(pulumi.DependsOn(pullCopies))...)
	if err != nil {
		return nil, fmt.Errorf("web: deployment: %w", err)
	}

	_, err = corev1.NewService(ctx, name+"-web-svc", &corev1.ServiceArgs{
		Metadata: meta(in.Name, labels),
		Spec: corev1.ServiceSpecArgs{
			Type:     pulumi.String("ClusterIP"),
			Selector: selector,
			Ports: corev1.ServicePortArray{corev1.ServicePortArgs{
				Name: pulumi.String(webPortName), Port: pulumi.Int(port),
				TargetPort: pulumi.String(webPortName), Protocol: pulumi.String("TCP"),
			}},
		},
	}, objOpts()...)
	if err != nil {
		return nil, fmt.Errorf("web: service: %w", err)
	}

	if mode == webNamespaceManaged {
		// The namespace is the installation's: nothing in it takes ingress
		// except the web pods, and those only on their port.
		_, err = networkingv1.NewNetworkPolicy(ctx, name+"-web-deny", &networkingv1.NetworkPolicyArgs{
			Metadata: meta(in.Name+"-default-deny", labels),
			Spec: networkingv1.NetworkPolicySpecArgs{
				PodSelector: metav1.LabelSelectorArgs{},
				PolicyTypes: pulumi.StringArray{pulumi.String("Ingress")},
			},
		}, objOpts()...)
		if err != nil {
			return nil, fmt.Errorf("web: network policy: %w", err)
		}
		_, err = networkingv1.NewNetworkPolicy(ctx, name+"-web-allow", &networkingv1.NetworkPolicyArgs{
			Metadata: meta(in.Name, labels),
			Spec: networkingv1.NetworkPolicySpecArgs{
				PodSelector: metav1.LabelSelectorArgs{MatchLabels: selector},
				PolicyTypes: pulumi.StringArray{pulumi.String("Ingress")},
				Ingress: networkingv1.NetworkPolicyIngressRuleArray{networkingv1.NetworkPolicyIngressRuleArgs{
					Ports: networkingv1.NetworkPolicyPortArray{networkingv1.NetworkPolicyPortArgs{
						Protocol: pulumi.String("TCP"), Port: pulumi.Int(port),
					}},
				}},
			},
		}, objOpts()...)
		if err != nil {
			return nil, fmt.Errorf("web: network policy: %w", err)
		}
	}

	webURL := fmt.Sprintf("http://%s.%s.svc.cluster.local:%d", in.Name, spec.Namespace, port)
	if spec.PublicURL != nil && *spec.PublicURL != "" {
		webURL = *spec.PublicURL
	}
	return &Result{URL: pulumi.String(webURL).ToStringOutput()}, nil
}
