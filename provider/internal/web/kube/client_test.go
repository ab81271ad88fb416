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
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestNamespaceFake(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: "labelled", Labels: map[string]string{"a": "b"}},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
	)
	c := NewForClientset(cs)
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

func TestObjectFake(t *testing.T) {
	owned := map[string]string{"owner": "me"}
	cs := fake.NewClientset(
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: owned}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: owned}},
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: owned}},
	)
	c := NewForClientset(cs)
	ctx := t.Context()
	for _, kind := range []string{KindDeployment, KindSecret, KindNetworkPolicy} {
		obj, err := c.Object(ctx, kind, "ns", "web")
		require.NoError(t, err, kind)
		assert.Equal(t, Object{Exists: true, Labels: owned}, obj, kind)
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

func TestNamespaceForbidden(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, &statusError{code: http.StatusForbidden}
	})
	_, err := NewForClientset(cs).Namespace(t.Context(), "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `reading namespace "x"`)
}

// statusError is a minimal APIStatus for the reactor above.
type statusError struct{ code int32 }

func (e *statusError) Error() string { return fmt.Sprintf("status %d", e.code) }
func (e *statusError) Status() metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: e.code, Reason: metav1.StatusReasonForbidden}
}

// apiServer answers GET /api/v1/namespaces/<name> for the names it knows,
// checks the bearer token, and counts requests.
func apiServer(t *testing.T, token string, known map[string]map[string]string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/")
		labels, found := known[name]
		w.Header().Set("Content-Type", "application/json")
		if !ok || !found {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(metav1.Status{
				TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status:   metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound,
				Details: &metav1.StatusDetails{Name: name, Kind: "namespaces"},
			})
			return
		}
		_ = json.NewEncoder(w).Encode(corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		})
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
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
	srv, hits := apiServer(t, "tok", map[string]map[string]string{"web": {"owner": "me"}})
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
	srv, _ := apiServer(t, "tok", nil)
	c, err := New(kubeconfigFor(srv, "tok", "main"), "")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.Namespace(ctx, "web")
	require.ErrorIs(t, err, context.Canceled)
}
