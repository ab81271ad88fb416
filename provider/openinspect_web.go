package provider

import (
	"errors"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// WebArgs places the web UI on Kubernetes. (Stub: being implemented.)
type WebArgs struct {
	Image            string             `pulumi:"image"`
	Namespace        string             `pulumi:"namespace"`
	NamespaceMode    *string            `pulumi:"namespaceMode,optional"`
	Kubeconfig       pulumi.StringInput `pulumi:"kubeconfig,optional" provider:"secret"`
	Replicas         *int               `pulumi:"replicas,optional"`
	Port             *int               `pulumi:"port,optional"`
	PublicURL        *string            `pulumi:"publicUrl,optional"`
	ImagePullSecrets []PullSecretArgs   `pulumi:"imagePullSecrets,optional"`
	Env              map[string]string  `pulumi:"env,optional"`
}

// PullSecretArgs names an image-pull secret to copy into the web namespace.
type PullSecretArgs struct {
	Name      string `pulumi:"name"`
	Namespace string `pulumi:"namespace"`
}

// webInputs is what the component hands the web part.
type webInputs struct {
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
}

// webResult is what the web part reports back.
type webResult struct {
	URL       pulumi.StringOutput
	Namespace string
}

// validateWeb checks a web spec before anything is registered; field paths start with prefix.
func validateWeb(prefix string, w *WebArgs) []error { return nil }

// deployWeb registers the web UI's Kubernetes objects.
func deployWeb(ctx *pulumi.Context, name string, spec *WebArgs, in webInputs) (*webResult, error) {
	return nil, errors.New("web UI on Kubernetes: not implemented yet")
}
