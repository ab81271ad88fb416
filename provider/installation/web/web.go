package web

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openinspect/pulumi-openinspect/provider/internal/web/kube"
)

// Args places the web UI: upstream's Next.js `packages/web` as a container
// image on Kubernetes (platform kubernetes, the default), or upstream's
// OpenNext build as a Worker with static assets (platform cloudflare, which
// the installation package registers; this package only checks its fields).
type Args struct {
	Platform         *string            `pulumi:"platform,optional"`
	BundleDir        *string            `pulumi:"bundleDir,optional"`
	CustomDomain     *CustomDomain      `pulumi:"customDomain,optional"`
	Vercel           *Vercel            `pulumi:"vercel,optional"`
	Image            string             `pulumi:"image,optional"`
	Namespace        string             `pulumi:"namespace,optional"`
	NamespaceMode    *string            `pulumi:"namespaceMode,optional"`
	Kubeconfig       pulumi.StringInput `pulumi:"kubeconfig,optional" provider:"secret"`
	Replicas         *int               `pulumi:"replicas,optional"`
	Port             *int               `pulumi:"port,optional"`
	PublicURL        *string            `pulumi:"publicUrl,optional"`
	ImagePullSecrets []PullSecret       `pulumi:"imagePullSecrets,optional"`
	Env              map[string]string  `pulumi:"env,optional"`
}

// Vercel places the web UI on Vercel (platform vercel): the credentials,
// the team and, optionally, the project's name, the API and a domain.
type Vercel struct {
	Token       pulumi.StringInput `pulumi:"token" provider:"secret"`
	TeamID      string             `pulumi:"teamId"`
	ProjectName *string            `pulumi:"projectName,optional"`
	APIURL      *string            `pulumi:"apiUrl,optional"`
	Domain      *string            `pulumi:"domain,optional"`
	SourceDir   *string            `pulumi:"sourceDir,optional"`
}

// Annotate documents the Vercel settings.
func (v *Vercel) Annotate(a infer.Annotator) {
	a.SetToken("index", "WebVercel")
	a.Describe(v, "The web UI on Vercel (platform vercel, upstream's default web_platform): the project upstream's Terraform "+
		"creates, with its six environment variables, and a production deployment of upstream's web source built by Vercel.")
	a.Describe(&v.Token, "A Vercel access token with access to the team (upstream's vercel_api_token); the Vercel sandbox "+
		"backend's token may be the same.")
	a.Describe(&v.TeamID, "The Vercel team (team_...) the project is created in (upstream's vercel_team_id).")
	a.Describe(&v.ProjectName, "The project's name (default <namePrefix>-<deploymentName>, as upstream's open-inspect-<suffix>).")
	a.Describe(&v.APIURL, "Vercel's REST API (default https://api.vercel.com).")
	a.Describe(&v.Domain, "A domain attached to the project; https://<domain> becomes the web URL and the control plane's "+
		"WEB_APP_URL. Its DNS is yours to point at Vercel.")
	a.Describe(&v.SourceDir, "The directory holding upstream's web source to deploy (package.json, package-lock.json, "+
		"packages/shared, packages/web). Default: upstream.checkout, else the artefacts embedded in the plugin.")
}

// CustomDomain is the hostname the web Worker serves as its origin.
type CustomDomain struct {
	Hostname string `pulumi:"hostname"`
	ZoneID   string `pulumi:"zoneId"`
}

// Annotate documents the custom domain.
func (d *CustomDomain) Annotate(a infer.Annotator) {
	a.SetToken("index", "WebCustomDomain")
	a.Describe(d, "A custom domain for the web UI on Cloudflare (upstream's cloudflare_custom_domain and cloudflare_zone_id).")
	a.Describe(&d.Hostname, "The hostname, e.g. inspect.example.com: attached to the web Worker, whose workers.dev URL is "+
		"turned off; https://<hostname> becomes the installation's web URL (the control plane's WEB_APP_URL).")
	a.Describe(&d.ZoneID, "The ID (32 hex digits) of the Cloudflare zone the hostname is in.")
}

// Annotate documents the web inputs.
func (w *Args) Annotate(a infer.Annotator) {
	a.SetToken("index", "Web")
	a.Describe(w, "The web UI. On Kubernetes (platform kubernetes, the default): a Deployment of the web image with a "+
		"ClusterIP Service, and a Secret holding the web's service-auth secret; every object carries the labels "+
		"`app.kubernetes.io/managed-by: pulumi-openinspect` and `openinspect.dev/installation: <installation>`. "+
		"On Cloudflare (platform cloudflare): upstream's OpenNext build as the Worker <namePrefix>-web-<deploymentName> "+
		"with static assets, made right for this installation without building anything. On Vercel (platform vercel): "+
		"a project built and served by Vercel.")
	a.Describe(&w.Platform, "kubernetes (default), cloudflare or vercel. With vercel the web is a Vercel project with "+
		"upstream's settings and variables, deployed from upstream's source and built by Vercel (which inlines the "+
		"NEXT_PUBLIC_* values itself); only vercel applies. With cloudflare the web runs as a Worker with static assets, "+
		"as upstream's web_platform \"cloudflare\": its NEXT_PUBLIC_* values are substituted into the placeholder build for this "+
		"installation, with its own server-actions and preview-mode keys (generated once, kept as Pulumi secrets); "+
		"only bundleDir and customDomain apply.")
	a.Describe(&w.BundleDir, "Platform cloudflare: the placeholder OpenNext build to deploy (a directory holding "+
		"openinspect-web.json, the worker module and the assets). Default: packages/web/.open-next of upstream.checkout, "+
		"or of the artefacts embedded in the plugin.")
	a.Describe(&w.CustomDomain, "Platform cloudflare: serve the web UI at this hostname instead of its workers.dev URL.")
	a.Describe(&w.Vercel, "Platform vercel, required: the Vercel token, team and project; the web's source is uploaded from "+
		"upstream.checkout or the artefacts embedded in the plugin and built by Vercel.")
	a.Describe(&w.Image, "Platform kubernetes, required: the web UI container image: upstream `packages/web` built with `output: \"standalone\"` and "+
		"with this installation's `NEXT_PUBLIC_WS_URL` (the control plane's wss:// URL), `NEXT_PUBLIC_APP_NAME`, "+
		"`NEXT_PUBLIC_SANDBOX_PROVIDER` and `NEXT_PUBLIC_APP_ICON_URL`: Next inlines them into the browser code at "+
		"build time, so the environment the container gets (the same names, plus CONTROL_PLANE_URL, "+
		"SANDBOX_PROVIDER and SERVICE_AUTH_SECRET, which the server code reads at run time) cannot change them.")
	a.Describe(&w.Namespace, "Platform kubernetes, required: the namespace the web UI runs in (a DNS-1123 label).")
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
		"(CONTROL_PLANE_URL, SANDBOX_PROVIDER, NEXT_PUBLIC_WS_URL, NEXT_PUBLIC_SANDBOX_PROVIDER, NEXT_PUBLIC_APP_NAME, "+
		"NEXT_PUBLIC_APP_ICON_URL, SERVICE_AUTH_SECRET, PORT, HOSTNAME) are refused.")
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
	// Installation is the value of the ownership label: the installation's
	// identity (NameLock's installationId), random and so unique across
	// names and accounts, where <prefix>-<deploymentName> was ambiguous.
	Installation pulumi.StringOutput
	// Name is the Deployment/Service/Secret name: <prefix>-web-<deploymentName>.
	Name              string
	ControlPlaneURL   pulumi.StringInput
	WebSocketURL      pulumi.StringInput
	ServiceAuthSecret pulumi.StringInput
	SandboxProvider   string
	AppName           string
	AppIconURL        string
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
	"CONTROL_PLANE_URL", "SANDBOX_PROVIDER", "NEXT_PUBLIC_WS_URL", "NEXT_PUBLIC_SANDBOX_PROVIDER",
	"NEXT_PUBLIC_APP_NAME", "NEXT_PUBLIC_APP_ICON_URL", webServiceAuthKey, "PORT", "HOSTNAME",
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

// The platforms the web UI runs on.
const (
	PlatformKubernetes = "kubernetes"
	PlatformCloudflare = "cloudflare"
	PlatformVercel     = "vercel"
)

// OnPlatform is the platform the spec places the web on (kubernetes when
// unset, as before platform existed).
func (w *Args) OnPlatform() string {
	if w.Platform == nil || *w.Platform == "" {
		return PlatformKubernetes
	}
	return *w.Platform
}

var (
	// hostnamePattern is a DNS name of at least two labels, lower case.
	hostnamePattern = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)
	zoneIDPattern   = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// vercelTeamPattern is a Vercel team ID; vercelProjectPattern a project name.
var (
	vercelTeamPattern    = regexp.MustCompile(`^team_[A-Za-z0-9]+$`)
	vercelProjectPattern = regexp.MustCompile(`^[a-z0-9._-]{1,100}$`)
)

// validateVercel checks the fields of platform vercel and refuses the
// other platforms' fields. The token's value is checked with the other
// secrets (validate_values.go).
func (w *Args) validateVercel(add func(field, format string, args ...any)) {
	others := []struct {
		field string
		set   bool
	}{
		{"image", w.Image != ""}, {"namespace", w.Namespace != ""}, {"namespaceMode", w.NamespaceMode != nil},
		{"kubeconfig", w.Kubeconfig != nil}, {"replicas", w.Replicas != nil}, {"port", w.Port != nil},
		{"publicUrl", w.PublicURL != nil}, {"imagePullSecrets", len(w.ImagePullSecrets) > 0}, {"env", len(w.Env) > 0},
		{"bundleDir", w.BundleDir != nil}, {"customDomain", w.CustomDomain != nil},
	}
	for _, f := range others {
		if f.set {
			add(f.field, "not for platform %q; remove it (on Vercel, a domain is web.vercel.domain)", PlatformVercel)
		}
	}
	v := w.Vercel
	if v == nil {
		add("vercel", "required on platform %q: give token (a Vercel access token) and teamId (team_...)", PlatformVercel)
		return
	}
	if v.Token == nil {
		add("vercel.token", "required: a Vercel access token with access to the team")
	}
	switch {
	case strings.TrimSpace(v.TeamID) == "":
		add("vercel.teamId", "required: the Vercel team (team_...) the project is created in")
	case !vercelTeamPattern.MatchString(v.TeamID):
		add("vercel.teamId", "%q is not a Vercel team ID (team_ followed by letters and digits)", v.TeamID)
	}
	if n := v.ProjectName; n != nil && (!vercelProjectPattern.MatchString(*n) || strings.Contains(*n, "---")) {
		add("vercel.projectName", "%q is not a Vercel project name: at most 100 lower-case letters, digits, '.', '_' or '-', without '---'", *n)
	}
	if u := v.APIURL; u != nil && !httpURL(*u) {
		add("vercel.apiUrl", "%q is not an http(s) URL", *u)
	}
	if d := v.SourceDir; d != nil && strings.TrimSpace(*d) == "" {
		add("vercel.sourceDir", "empty: give the directory of upstream's web source, or leave sourceDir out")
	}
	if d := v.Domain; d != nil {
		if len(*d) > 253 {
			add("vercel.domain", "is %d characters; a hostname has at most 253", len(*d))
		} else if !hostnamePattern.MatchString(*d) {
			add("vercel.domain", "%q is not a lower-case hostname of at least two labels (no scheme, path, port or wildcard)", *d)
		}
	}
}

// httpURL says whether s is an absolute http(s) URL with a host.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// validateCloudflare checks the fields of platform cloudflare and refuses
// the Kubernetes-only ones, which would otherwise be silently ignored.
func (w *Args) validateCloudflare(add func(field, format string, args ...any)) {
	k8sOnly := []struct {
		field string
		set   bool
	}{
		{"image", w.Image != ""}, {"namespace", w.Namespace != ""}, {"namespaceMode", w.NamespaceMode != nil},
		{"kubeconfig", w.Kubeconfig != nil}, {"replicas", w.Replicas != nil}, {"port", w.Port != nil},
		{"publicUrl", w.PublicURL != nil}, {"imagePullSecrets", len(w.ImagePullSecrets) > 0}, {"env", len(w.Env) > 0},
	}
	for _, f := range k8sOnly {
		if f.set {
			add(f.field, "only for platform %q; remove it (platform is %q)", PlatformKubernetes, PlatformCloudflare)
		}
	}
	if w.Vercel != nil {
		add("vercel", "only for platform %q; remove it (platform is %q)", PlatformVercel, PlatformCloudflare)
	}
	if w.BundleDir != nil && strings.TrimSpace(*w.BundleDir) == "" {
		add("bundleDir", "empty: give the directory of the OpenNext build, or leave bundleDir out")
	}
	if d := w.CustomDomain; d != nil {
		if len(d.Hostname) > 253 {
			// DNS names are at most 253 characters; the length, not the name, is the problem.
			add("customDomain.hostname", "is %d characters; a hostname has at most 253", len(d.Hostname))
		} else if !hostnamePattern.MatchString(d.Hostname) {
			add("customDomain.hostname", "%q is not a lower-case hostname of at least two labels (no scheme, path, port or wildcard)", d.Hostname)
		}
		if !zoneIDPattern.MatchString(d.ZoneID) {
			add("customDomain.zoneId", "%q is not a Cloudflare zone ID (32 lower-case hex digits)", d.ZoneID)
		}
	}
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
	switch w.OnPlatform() {
	case PlatformCloudflare:
		w.validateCloudflare(add)
		return errs
	case PlatformVercel:
		w.validateVercel(add)
		return errs
	case PlatformKubernetes:
		if w.Vercel != nil {
			add("vercel", "only for platform %q", PlatformVercel)
		}
		if w.BundleDir != nil {
			add("bundleDir", "only for platform %q", PlatformCloudflare)
		}
		if w.CustomDomain != nil {
			add("customDomain", "only for platform %q; on Kubernetes your ingress serves the hostname (set publicUrl)", PlatformCloudflare)
		}
	default:
		add("platform", "must be %q, %q or %q, got %q", PlatformKubernetes, PlatformCloudflare, PlatformVercel, *w.Platform)
		return errs
	}

	if strings.TrimSpace(w.Image) == "" {
		add("image", "required on platform kubernetes: the web UI's container image (upstream's packages/web built with "+
			"output \"standalone\"), e.g. ghcr.io/example/open-inspect-web:1.0")
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
//
// In shared mode the namespace is not the installation's, but one labelled
// as another installation's is refused too: its destroy deletes the
// namespace with everything in it, this installation's web included.
func checkWebNamespace(ctx context.Context, r kube.NamespaceReader, namespace, installation string, managed bool) error {
	ns, err := r.Namespace(ctx, namespace)
	if err != nil {
		return fmt.Errorf("web.namespace: checking whether namespace %q already exists: %w", namespace, err)
	}
	if !ns.Exists {
		return nil
	}
	owner, labelled := ns.Labels[webLabelInstallation]
	if !managed {
		if labelled && owner != installation {
			return fmt.Errorf("web.namespace: namespace %q belongs to installation %q (label %s), not this one (%q): "+
				"its destroy deletes the namespace with everything in it, so namespaceMode %q will not deploy into it; "+
				"pick a namespace no installation manages", namespace, owner, webLabelInstallation, installation, webNamespaceShared)
		}
		return nil
	}
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
