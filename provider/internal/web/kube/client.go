package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Namespace is what the provider needs to know about a namespace.
type Namespace struct {
	// Exists is false when the API server answered 404; the other fields are
	// then empty.
	Exists bool
	Labels map[string]string
	// Phase is Active or Terminating.
	Phase string
}

// NamespaceReader reads one namespace.
type NamespaceReader interface {
	Namespace(ctx context.Context, name string) (Namespace, error)
}

// Object is what the provider needs to know about a namespaced object.
type Object struct {
	// Exists is false when the API server answered 404.
	Exists bool
	Labels map[string]string
}

// Kinds ObjectReader reads.
const (
	KindDeployment    = "Deployment"
	KindService       = "Service"
	KindSecret        = "Secret"
	KindNetworkPolicy = "NetworkPolicy"
)

// kindResources are the API resources of the kinds above.
var kindResources = map[string]schema.GroupVersionResource{
	KindDeployment:    {Group: "apps", Version: "v1", Resource: "deployments"},
	KindService:       {Version: "v1", Resource: "services"},
	KindSecret:        {Version: "v1", Resource: "secrets"},
	KindNetworkPolicy: {Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
}

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// ObjectReader reads one namespaced object of a kind listed above.
type ObjectReader interface {
	Object(ctx context.Context, kind, namespace, name string) (Object, error)
}

// Reader is everything the provider reads before registering objects.
type Reader interface {
	NamespaceReader
	ObjectReader
}

// Client reads from one cluster. Not client-go's typed clientset: its
// generated types (k8s.io/api, the typed clients and apply configurations)
// were about 18 MB of Go source in every build of the provider, for five
// reads. A namespace comes through the dynamic client (its phase is in its
// status); an object through the metadata client, which asks the API server
// for the object's metadata alone, so a Secret's data never reaches the
// provider.
type Client struct {
	namespaces dynamic.NamespaceableResourceInterface
	objects    metadata.Interface
}

var _ Reader = (*Client)(nil)

// New connects to the cluster a kubeconfig names, the way pulumi-kubernetes'
// `kubeconfig` provider argument does: kubeconfig is the path of a kubeconfig
// file (a leading ~ is expanded) or, when no such file exists, the file's
// contents (YAML or JSON). An empty kubeconfig means client-go's default
// loading rules ($KUBECONFIG, then ~/.kube/config, then the in-cluster
// service account). kubeContext, when not empty, overrides the current
// context. No request is made until a read.
func New(kubeconfig, kubeContext string) (*Client, error) {
	cfg, err := RESTConfig(kubeconfig, kubeContext)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Client{namespaces: dyn.Resource(namespaces), objects: meta}, nil
}

// RESTConfig resolves a kubeconfig (see New) to a client configuration.
func RESTConfig(kubeconfig, kubeContext string) (*rest.Config, error) {
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kubeContext}
	if kubeconfig == "" {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig (default loading rules: $KUBECONFIG, ~/.kube/config, in-cluster): %w", err)
		}
		return cfg, nil
	}
	contents, source, err := readPathOrContents(kubeconfig)
	if err != nil {
		return nil, err
	}
	api, err := clientcmd.Load(contents)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig (%s): %w", source, err)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*api, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig (%s): %w", source, err)
	}
	return cfg, nil
}

// readPathOrContents mirrors pulumi-kubernetes: an existing file's contents,
// otherwise the string itself. source describes which, without the contents.
func readPathOrContents(pathOrContents string) ([]byte, string, error) {
	path := pathOrContents
	if path == "~" || strings.HasPrefix(path, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, strings.TrimPrefix(path[1:], "/"))
		}
	}
	// Contents have newlines or braces; a path has neither. Skipping the stat
	// for those keeps a large secret out of a syscall argument and its errors.
	if !strings.ContainsAny(path, "\n{") {
		if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, "", fmt.Errorf("kubeconfig: %w", err)
			}
			return b, "file " + path, nil
		}
	}
	return []byte(pathOrContents), "inline contents", nil
}

// Namespace reads a namespace; a missing one is not an error.
func (c *Client) Namespace(ctx context.Context, name string) (Namespace, error) {
	ns, err := c.namespaces.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Namespace{}, nil
	}
	if err != nil {
		return Namespace{}, fmt.Errorf("reading namespace %q: %w", name, describe(err))
	}
	phase, _, err := unstructured.NestedString(ns.Object, "status", "phase")
	if err != nil {
		return Namespace{}, fmt.Errorf("reading namespace %q: status.phase: %w", name, err)
	}
	return Namespace{Exists: true, Labels: labelsOf(ns.GetLabels()), Phase: phase}, nil
}

// Object reads a namespaced object's labels; a missing one is not an error.
func (c *Client) Object(ctx context.Context, kind, namespace, name string) (Object, error) {
	resource, ok := kindResources[kind]
	if !ok {
		return Object{}, fmt.Errorf("reading %s %s/%s: kind not supported", kind, namespace, name)
	}
	meta, err := c.objects.Resource(resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Object{}, nil
	}
	if err != nil {
		return Object{}, fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, describe(err))
	}
	return Object{Exists: true, Labels: labelsOf(meta.GetLabels())}, nil
}

// labelsOf is an object's labels, an empty map when it has none.
func labelsOf(labels map[string]string) map[string]string {
	if labels == nil {
		return map[string]string{}
	}
	return labels
}

// describe adds a hint to the errors a misconfigured client meets most.
func describe(err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w (the credentials need get on the namespace and on the web's objects)", err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%w (the kubeconfig's credentials were rejected)", err)
	}
	return err
}
