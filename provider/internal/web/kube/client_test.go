package kube

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cluster is what apiServer knows: labels by URL path, e.g.
// /api/v1/namespaces/web or /apis/apps/v1/namespaces/ns/deployments/web. A
// path in forbidden is refused with 403.
type cluster struct {
	objects   map[string]map[string]string
	forbidden map[string]bool
}

// apiServer answers GETs of the objects it knows the way kube-apiserver
// does: a namespace in full (with its phase), any other object as the
// PartialObjectMetadata the metadata client asks for. It checks the bearer
// token, counts requests and records each object request's Accept header.
func apiServer(t *testing.T, token string, known cluster) (*httptest.Server, *atomic.Int32, *sync.Map) {
	t.Helper()
	var hits atomic.Int32
	var accepts sync.Map // URL path -> Accept header
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if known.forbidden[r.URL.Path] {
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(status(http.StatusForbidden, metav1.StatusReasonForbidden))
			return
		}
		labels, found := known.objects[r.URL.Path]
		if !found {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(status(http.StatusNotFound, metav1.StatusReasonNotFound))
			return
		}
		name := path.Base(r.URL.Path)
		if ns, isNamespace := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/"); isNamespace && !strings.Contains(ns, "/") {
			_ = json.NewEncoder(w).Encode(map[string]any{
				"kind": "Namespace", "apiVersion": "v1",
				"metadata": metav1.ObjectMeta{Name: name, Labels: labels},
				"status":   map[string]any{"phase": "Active"},
			})
			return
		}
		accepts.Store(r.URL.Path, r.Header.Get("Accept"))
		_ = json.NewEncoder(w).Encode(metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		})
	}))
	t.Cleanup(srv.Close)
	return srv, &hits, &accepts
}

func status(code int32, reason metav1.StatusReason) metav1.Status {
	return metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: code, Reason: reason,
	}
}

// clientFor is a Client of srv, connected the way the provider connects.
func clientFor(t *testing.T, srv *httptest.Server) *Client {
	t.Helper()
	c, err := New(kubeconfigFor(srv, "tok", "main"), "")
	require.NoError(t, err)
	return c
}

func TestNamespace(t *testing.T) {
	srv, _, _ := apiServer(t, "tok", cluster{objects: map[string]map[string]string{
		"/api/v1/namespaces/labelled": {"a": "b"},
		"/api/v1/namespaces/bare":     nil,
	}})
	c := clientFor(t, srv)
	ctx := t.Context()

	ns, err := c.Namespace(ctx, "labelled")
	require.NoError(t, err)
	assert.Equal(t, Namespace{Exists: true, Labels: map[string]string{"a": "b"}, Phase: "Active"}, ns)

	ns, err = c.Namespace(ctx, "bare")
	require.NoError(t, err)
	assert.True(t, ns.Exists)
	assert.NotNil(t, ns.Labels, "labels of an unlabelled namespace are an empty map, not nil")
	assert.Empty(t, ns.Labels)

	ns, err = c.Namespace(ctx, "missing")
	require.NoError(t, err, "a missing namespace is an answer, not an error")
	assert.Equal(t, Namespace{}, ns)
}

func TestObject(t *testing.T) {
	owned := map[string]string{"owner": "me"}
	paths := map[string]string{
		KindDeployment:    "/apis/apps/v1/namespaces/ns/deployments/web",
		KindSecret:        "/api/v1/namespaces/ns/secrets/web",
		KindNetworkPolicy: "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies/web",
	}
	known := cluster{objects: map[string]map[string]string{"/api/v1/namespaces/ns/services/web": nil}}
	for _, p := range paths {
		known.objects[p] = owned
	}
	srv, _, accepts := apiServer(t, "tok", known)
	c := clientFor(t, srv)
	ctx := t.Context()
	for kind, p := range paths {
		obj, err := c.Object(ctx, kind, "ns", "web")
		require.NoError(t, err, kind)
		assert.Equal(t, Object{Exists: true, Labels: owned}, obj, kind)
		accept, _ := accepts.Load(p)
		assert.Contains(t, accept, "as=PartialObjectMetadata", "%s: only the metadata is asked for (a Secret's data never is)", kind)
		obj, err = c.Object(ctx, kind, "other", "web")
		require.NoError(t, err, "a missing %s is an answer, not an error", kind)
		assert.Equal(t, Object{}, obj, kind)
	}
	svc, err := c.Object(ctx, KindService, "ns", "web")
	require.NoError(t, err)
	assert.True(t, svc.Exists)
	assert.NotNil(t, svc.Labels, "labels of an unlabelled object are an empty map, not nil")
	_, err = c.Object(ctx, "ConfigMap", "ns", "web")
	require.ErrorContains(t, err, "kind not supported")
}

func TestReadsForbidden(t *testing.T) {
	srv, _, _ := apiServer(t, "tok", cluster{forbidden: map[string]bool{
		"/api/v1/namespaces/x":             true,
		"/api/v1/namespaces/x/secrets/web": true,
	}})
	c := clientFor(t, srv)
	_, err := c.Namespace(t.Context(), "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `reading namespace "x"`)
	assert.Contains(t, err.Error(), "the credentials need get")
	_, err = c.Object(t.Context(), KindSecret, "x", "web")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reading Secret x/web")
	assert.Contains(t, err.Error(), "the credentials need get")
}

// kubeconfigFor points at srv (client-go sends credentials over TLS only).
func kubeconfigFor(srv *httptest.Server, token, context string) string {
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: test
  user:
    token: %s
contexts:
- name: %s
  context: {cluster: test, user: test}
- name: other
  context: {cluster: test, user: nobody}
current-context: %s
`, srv.URL, ca, token, context, context)
}

func TestNewKubeconfigForms(t *testing.T) {
	srv, hits, _ := apiServer(t, "tok", cluster{objects: map[string]map[string]string{"/api/v1/namespaces/web": {"owner": "me"}}})
	contents := kubeconfigFor(srv, "tok", "main")
	path := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(path, []byte(contents), 0o600))

	for name, kc := range map[string]string{"contents": contents, "path": path} {
		t.Run(name, func(t *testing.T) {
			c, err := New(kc, "")
			require.NoError(t, err)
			ns, err := c.Namespace(t.Context(), "web")
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"owner": "me"}, ns.Labels)
			ns, err = c.Namespace(t.Context(), "nope")
			require.NoError(t, err)
			assert.False(t, ns.Exists)
		})
	}
	assert.EqualValues(t, 4, hits.Load())

	t.Run("default loading rules read KUBECONFIG", func(t *testing.T) {
		t.Setenv("KUBECONFIG", path)
		c, err := New("", "")
		require.NoError(t, err)
		ns, err := c.Namespace(t.Context(), "web")
		require.NoError(t, err)
		assert.True(t, ns.Exists)
	})

	t.Run("context override", func(t *testing.T) {
		// "other" has a user without credentials: the server refuses it.
		c, err := New(contents, "other")
		require.NoError(t, err)
		_, err = c.Namespace(t.Context(), "web")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "rejected")
	})
}

func TestNewBadKubeconfig(t *testing.T) {
	_, err := New("clusters: [this is not: a kubeconfig", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "inline contents")

	// A kubeconfig without a usable cluster.
	_, err = New("apiVersion: v1\nkind: Config\n", "")
	require.Error(t, err)

	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("HOME", t.TempDir())
	_, err = New("", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "default loading rules")
}

func TestNamespaceHonoursContext(t *testing.T) {
	srv, _, _ := apiServer(t, "tok", cluster{})
	c, err := New(kubeconfigFor(srv, "tok", "main"), "")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.Namespace(ctx, "web")
	require.ErrorIs(t, err, context.Canceled)
}
