package web

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	networkingv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/networking/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/internal/web/kube"
)

// Deploy registers the web UI's Kubernetes objects, in order: the cluster
// connection, the ownership checks and the namespace, the pull-secret copies,
// the service-auth Secret, the Deployment, the Service and, in managed mode,
// the NetworkPolicies. The spec was validated with the rest of the
// installation (Validate) before anything was registered.
func Deploy(ctx *pulumi.Context, name string, spec *Args, in Inputs) (*Result, error) {
	if spec == nil {
		return nil, errors.New("web: no spec")
	}
	d := &deployer{ctx: ctx, name: name, spec: spec, in: in, port: spec.port(), mode: spec.mode()}
	d.setLabels()
	steps := []func() error{d.cluster, d.namespace, d.pullSecrets, d.secret, d.deployment, d.service, d.networkPolicies}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	webURL := fmt.Sprintf("http://%s.%s.svc.cluster.local:%d", in.Name, spec.Namespace, d.port)
	if spec.PublicURL != nil && *spec.PublicURL != "" {
		webURL = *spec.PublicURL
	}
	return &Result{URL: pulumi.String(webURL).ToStringOutput()}, nil
}

// deployer carries what the steps of Deploy share.
type deployer struct {
	ctx  *pulumi.Context
	name string
	spec *Args
	in   Inputs
	port int
	mode string

	selector, labels pulumi.StringMap // the pods' selector; every object's labels

	kubeconfig  pulumi.StringOutput // what the ownership checks connect with
	kubeContext string
	k8sOpts     []pulumi.ResourceOption // the explicit kubernetes provider, if any

	ns         pulumi.StringOutput // resolves only once the checks passed
	pullRefs   corev1.LocalObjectReferenceArray
	pullCopies []pulumi.Resource
	authSecret *corev1.Secret
}

func (d *deployer) setLabels() {
	d.selector = pulumi.StringMap{webLabelName: pulumi.String(webNameValue), webLabelInstance: pulumi.String(d.in.Name)}
	d.labels = pulumi.StringMap{webLabelManagedBy: pulumi.String(webManagedByValue), webLabelInstallation: d.in.Installation}
	maps.Copy(d.labels, d.selector)
}

// opts are the options of every child (parent, dependsOn, retainOnDelete).
func (d *deployer) opts(extra ...pulumi.ResourceOption) []pulumi.ResourceOption {
	return slices.Concat(d.in.Opts, extra)
}

// objOpts are an object's options: fixed names, so a replacement must delete
// the old object first.
func (d *deployer) objOpts(extra ...pulumi.ResourceOption) []pulumi.ResourceOption {
	return d.opts(slices.Concat(d.k8sOpts, []pulumi.ResourceOption{pulumi.DeleteBeforeReplace(true)}, extra)...)
}

func (d *deployer) meta(objName string) metav1.ObjectMetaArgs {
	return metav1.ObjectMetaArgs{Name: pulumi.String(objName), Namespace: d.ns, Labels: d.labels}
}

// cluster picks the kubeconfig the checks read: the explicit provider's,
// else the default provider's stack configuration, else client-go's defaults
// (the same environment the default kubernetes provider sees).
func (d *deployer) cluster() error {
	if d.spec.Kubeconfig == nil {
		kc, _ := d.ctx.GetConfig("kubernetes:kubeconfig")
		d.kubeContext, _ = d.ctx.GetConfig("kubernetes:context")
		d.kubeconfig = pulumi.String(kc).ToStringOutput()
		return nil
	}
	d.kubeconfig = pulumi.ToSecret(d.spec.Kubeconfig).(pulumi.StringOutput)
	prov, err := kubernetes.NewProvider(d.ctx, d.name+"-web-k8s", &kubernetes.ProviderArgs{
		Kubeconfig: d.kubeconfig.ToStringPtrOutput(),
	}, d.opts()...)
	if err != nil {
		return fmt.Errorf("web: kubernetes provider: %w", err)
	}
	d.k8sOpts = []pulumi.ResourceOption{pulumi.Provider(prov)}
	return nil
}

// check refuses a foreign namespace (managed mode) and foreign objects under
// the web's names, before pulumi-kubernetes would upsert them.
func (d *deployer) check(c context.Context, kc, installation string, managed bool) error {
	objects := []webObject{{kube.KindDeployment, d.in.Name}, {kube.KindService, d.in.Name}, {kube.KindSecret, d.in.Name}}
	for _, ps := range d.spec.ImagePullSecrets {
		objects = append(objects, webObject{kube.KindSecret, ps.Name})
	}
	if managed {
		objects = append(objects, webObject{kube.KindNetworkPolicy, d.in.Name}, webObject{kube.KindNetworkPolicy, d.in.Name + "-default-deny"})
	}
	connect := d.in.Connect
	if connect == nil {
		connect = func(kubeconfig, kubeContext string) (kube.Reader, error) { return kube.New(kubeconfig, kubeContext) }
	}
	reader, err := connect(kc, d.kubeContext)
	if err != nil {
		return fmt.Errorf("web.namespace: checking whether namespace %q already exists: %w", d.spec.Namespace, err)
	}
	if err := checkWebNamespace(c, reader, d.spec.Namespace, installation, managed); err != nil {
		return err
	}
	return checkWebObjects(c, reader, d.spec.Namespace, installation, objects)
}

// namespace is where every object goes: an output that resolves only once
// the checks passed, so nothing is placed before (in managed mode the
// Namespace's own output).
func (d *deployer) namespace() error {
	// The checks need the cluster and the identity: they run once both are
	// known (at the first preview the identity is not yet).
	cluster := pulumi.All(d.kubeconfig, d.in.Installation)
	if d.mode != webNamespaceManaged {
		checked := cluster.ApplyTWithContext(d.ctx.Context(), func(c context.Context, v []any) (string, error) {
			return d.spec.Namespace, d.check(c, v[0].(string), v[1].(string), false)
		}).(pulumi.StringOutput)
		// The name derives from the (secret) kubeconfig only in timing.
		d.ns = pulumi.Unsecret(checked).(pulumi.StringOutput)
		return nil
	}
	nsLabels := cluster.ApplyTWithContext(d.ctx.Context(), func(c context.Context, v []any) (map[string]string, error) {
		installation := v[1].(string)
		if err := d.check(c, v[0].(string), installation, true); err != nil {
			return nil, err
		}
		return map[string]string{webLabelManagedBy: webManagedByValue, webLabelInstallation: installation}, nil
	}).(pulumi.StringMapOutput)
	// The labels derive from the (secret) kubeconfig only in timing.
	nsLabels = pulumi.Unsecret(nsLabels).(pulumi.StringMapOutput)
	ns, err := corev1.NewNamespace(d.ctx, d.name+"-web-ns", &corev1.NamespaceArgs{
		Metadata: metav1.ObjectMetaArgs{Name: pulumi.String(d.spec.Namespace), Labels: nsLabels},
	}, d.objOpts()...)
	if err != nil {
		return fmt.Errorf("web: namespace: %w", err)
	}
	d.ns = ns.Metadata.Name().Elem()
	return nil
}

// pullSecrets copies each image-pull Secret next to the pods.
func (d *deployer) pullSecrets() error {
	for i, ps := range d.spec.ImagePullSecrets {
		src, err := corev1.GetSecret(d.ctx, d.name+"-web-pull-"+ps.Name+"-source",
			pulumi.ID(ps.Namespace+"/"+ps.Name), nil, d.opts(d.k8sOpts...)...)
		if err != nil {
			return fmt.Errorf("web.imagePullSecrets[%d]: reading Secret %s/%s: %w", i, ps.Namespace, ps.Name, err)
		}
		field, ref := fmt.Sprintf("web.imagePullSecrets[%d]", i), ps.Namespace+"/"+ps.Name
		srcType := src.Type.ApplyT(func(t string) (*string, error) {
			if !webPullSecretTypes[t] {
				return nil, fmt.Errorf("%s: Secret %s has type %q, want kubernetes.io/dockerconfigjson", field, ref, t)
			}
			return &t, nil
		}).(pulumi.StringPtrOutput)
		cp, err := corev1.NewSecret(d.ctx, d.name+"-web-pull-"+ps.Name, &corev1.SecretArgs{
			Metadata: d.meta(ps.Name),
			Type:     srcType,
			Data:     src.Data,
		}, d.objOpts()...)
		if err != nil {
			return fmt.Errorf("%s: copying Secret %s: %w", field, ref, err)
		}
		d.pullRefs = append(d.pullRefs, corev1.LocalObjectReferenceArgs{Name: cp.Metadata.Name()})
		d.pullCopies = append(d.pullCopies, cp)
	}
	return nil
}

// secret holds the web's service-auth key, which the pod reads by reference.
func (d *deployer) secret() error {
	var err error
	d.authSecret, err = corev1.NewSecret(d.ctx, d.name+"-web-secret", &corev1.SecretArgs{
		Metadata:   d.meta(d.in.Name),
		Type:       pulumi.String("Opaque"),
		StringData: pulumi.StringMap{webServiceAuthKey: pulumi.ToSecret(d.in.ServiceAuthSecret).(pulumi.StringOutput)},
	}, d.objOpts()...)
	if err != nil {
		return fmt.Errorf("web: secret: %w", err)
	}
	return nil
}

func (d *deployer) env() corev1.EnvVarArray {
	in := d.in
	env := corev1.EnvVarArray{
		// What upstream's web reads at run time (server code) ...
		corev1.EnvVarArgs{Name: pulumi.String("CONTROL_PLANE_URL"), Value: in.ControlPlaneURL},
		corev1.EnvVarArgs{Name: pulumi.String("SANDBOX_PROVIDER"), Value: pulumi.String(in.SandboxProvider)},
		// ... and what its build inlines (NEXT_PUBLIC_*): here they reach the
		// server code only; the browser code has the values the image was
		// built with, so the image must be built with this installation's.
		corev1.EnvVarArgs{Name: pulumi.String("NEXT_PUBLIC_WS_URL"), Value: in.WebSocketURL},
		corev1.EnvVarArgs{Name: pulumi.String("NEXT_PUBLIC_SANDBOX_PROVIDER"), Value: pulumi.String(in.SandboxProvider)},
		corev1.EnvVarArgs{Name: pulumi.String("NEXT_PUBLIC_APP_NAME"), Value: pulumi.String(in.AppName)},
		corev1.EnvVarArgs{Name: pulumi.String("NEXT_PUBLIC_APP_ICON_URL"), Value: pulumi.String(in.AppIconURL)},
		corev1.EnvVarArgs{Name: pulumi.String(webServiceAuthKey), ValueFrom: corev1.EnvVarSourceArgs{
			SecretKeyRef: corev1.SecretKeySelectorArgs{Name: d.authSecret.Metadata.Name(), Key: pulumi.String(webServiceAuthKey)},
		}},
		corev1.EnvVarArgs{Name: pulumi.String("PORT"), Value: pulumi.String(strconv.Itoa(d.port))},
		corev1.EnvVarArgs{Name: pulumi.String("HOSTNAME"), Value: pulumi.String("0.0.0.0")},
	}
	for _, k := range slices.Sorted(maps.Keys(d.spec.Env)) {
		env = append(env, corev1.EnvVarArgs{Name: pulumi.String(k), Value: pulumi.String(d.spec.Env[k])})
	}
	return env
}

func (d *deployer) deployment() error {
	podSpec := corev1.PodSpecArgs{
		// The web talks to the control plane over HTTP, never to the Kubernetes API.
		AutomountServiceAccountToken: pulumi.Bool(false),
		Containers: corev1.ContainerArray{corev1.ContainerArgs{
			Name:  pulumi.String(webContainerName),
			Image: pulumi.String(d.spec.Image),
			Ports: corev1.ContainerPortArray{corev1.ContainerPortArgs{
				Name: pulumi.String(webPortName), ContainerPort: pulumi.Int(d.port), Protocol: pulumi.String("TCP"),
			}},
			Env: d.env(),
		}},
	}
	if len(d.pullRefs) > 0 {
		podSpec.ImagePullSecrets = d.pullRefs
	}
	_, err := appsv1.NewDeployment(d.ctx, d.name+"-web", &appsv1.DeploymentArgs{
		Metadata: d.meta(d.in.Name),
		Spec: appsv1.DeploymentSpecArgs{
			Replicas: pulumi.Int(d.spec.replicas()),
			Selector: metav1.LabelSelectorArgs{MatchLabels: d.selector},
			Template: corev1.PodTemplateSpecArgs{
				Metadata: metav1.ObjectMetaArgs{Labels: d.labels},
				Spec:     podSpec,
			},
		},
	}, d.objOpts(pulumi.DependsOn(d.pullCopies))...)
	if err != nil {
		return fmt.Errorf("web: deployment: %w", err)
	}
	return nil
}

func (d *deployer) service() error {
	_, err := corev1.NewService(d.ctx, d.name+"-web-svc", &corev1.ServiceArgs{
		Metadata: d.meta(d.in.Name),
		Spec: corev1.ServiceSpecArgs{
			Type:     pulumi.String("ClusterIP"),
			Selector: d.selector,
			Ports: corev1.ServicePortArray{corev1.ServicePortArgs{
				Name: pulumi.String(webPortName), Port: pulumi.Int(d.port),
				TargetPort: pulumi.String(webPortName), Protocol: pulumi.String("TCP"),
			}},
		},
	}, d.objOpts()...)
	if err != nil {
		return fmt.Errorf("web: service: %w", err)
	}
	return nil
}

// networkPolicies: the managed namespace is the installation's, so nothing in
// it takes ingress except the web pods, and those only on their port.
func (d *deployer) networkPolicies() error {
	if d.mode != webNamespaceManaged {
		return nil
	}
	_, err := networkingv1.NewNetworkPolicy(d.ctx, d.name+"-web-deny", &networkingv1.NetworkPolicyArgs{
		Metadata: d.meta(d.in.Name + "-default-deny"),
		Spec: networkingv1.NetworkPolicySpecArgs{
			PodSelector: metav1.LabelSelectorArgs{},
			PolicyTypes: pulumi.StringArray{pulumi.String("Ingress")},
		},
	}, d.objOpts()...)
	if err != nil {
		return fmt.Errorf("web: network policy: %w", err)
	}
	_, err = networkingv1.NewNetworkPolicy(d.ctx, d.name+"-web-allow", &networkingv1.NetworkPolicyArgs{
		Metadata: d.meta(d.in.Name),
		Spec: networkingv1.NetworkPolicySpecArgs{
			PodSelector: metav1.LabelSelectorArgs{MatchLabels: d.selector},
			PolicyTypes: pulumi.StringArray{pulumi.String("Ingress")},
			Ingress: networkingv1.NetworkPolicyIngressRuleArray{networkingv1.NetworkPolicyIngressRuleArgs{
				Ports: networkingv1.NetworkPolicyPortArray{networkingv1.NetworkPolicyPortArgs{
					Protocol: pulumi.String("TCP"), Port: pulumi.Int(d.port),
				}},
			}},
		},
	}, d.objOpts()...)
	if err != nil {
		return fmt.Errorf("web: network policy: %w", err)
	}
	return nil
}
