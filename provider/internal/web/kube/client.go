package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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

// ObjectReader reads one namespaced object of a kind listed above.
type ObjectReader interface {
	Object(ctx context.Context, kind, namespace, name string) (Object, error)
}

// Reader is everything the provider reads before registering objects.
type Reader interface {
	NamespaceReader
	ObjectReader
}

// Client reads from one cluster.
type Client struct {
	cs kubernetes.Interface
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
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Client{cs: cs}, nil
}

// NewForClientset wraps an existing clientset (tests use client-go's fake).
func NewForClientset(cs kubernetes.Interface) *Client { return &Client{cs: cs} }

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
	ns, err := c.cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Namespace{}, nil
	}
	if err != nil {
		return Namespace{}, fmt.Errorf("reading namespace %q: %w", name, describe(err))
	}
	labels := ns.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	return Namespace{Exists: true, Labels: labels, Phase: string(ns.Status.Phase)}, nil
}

// Object reads a namespaced object's labels; a missing one is not an error.
func (c *Client) Object(ctx context.Context, kind, namespace, name string) (Object, error) {
	var meta metav1.Object
	var err error
	switch kind {
	case KindDeployment:
		meta, err = c.cs.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	case KindService:
		meta, err = c.cs.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	case KindSecret:
		meta, err = c.cs.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	case KindNetworkPolicy:
		meta, err = c.cs.NetworkingV1().NetworkPolicies(namespace).Get(ctx, name, metav1.GetOptions{})
	default:
		return Object{}, fmt.Errorf("reading %s %s/%s: kind not supported", kind, namespace, name)
	}
	if apierrors.IsNotFound(err) {
		return Object{}, nil
	}
	if err != nil {
		return Object{}, fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, describe(err))
	}
	labels := meta.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	return Object{Exists: true, Labels: labels}, nil
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
