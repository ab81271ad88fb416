package kube

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestControlPlaneMinimal(t *testing.T) { testControlPlane(t, false) }

func TestControlPlaneFull(t *testing.T) { testControlPlane(t, true) }

func testControlPlane(t *testing.T, full bool) {
	// Missing binaries are a failure, not a skip: CI must build them.
	if err := CheckBinaries("", full, t.Logf); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	begin := time.Now()
	cp, err := Start(ctx, Options{Full: full, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = cp.Stop()
		}
	}()
	t.Logf("started in %s", time.Since(begin).Round(time.Millisecond))

	if !strings.HasPrefix(cp.Host(), "https://127.0.0.1:") {
		t.Errorf("Host() = %q, want loopback", cp.Host())
	}
	kc, err := os.ReadFile(cp.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kc), "server: "+cp.Host()) {
		t.Errorf("kubeconfig does not point at %s:\n%s", cp.Host(), kc)
	}

	// The version ldflags took: clients such as pulumi-kubernetes read this.
	var version struct{ GitVersion, Major, Minor string }
	if err := cp.Do(ctx, http.MethodGet, "/version", nil, &version); err != nil {
		t.Fatal(err)
	}
	if version.GitVersion != "v1.34.1" || version.Major != "1" || version.Minor != "34" {
		t.Errorf("/version = %+v, want v1.34.1 (1, 34)", version)
	}

	// The bearer token from the token file works as well as the client cert.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cp.Host()+"/api/v1/namespaces/default", nil)
	req.Header.Set("Authorization", "Bearer "+cp.Token())
	tokenClient := &http.Client{Transport: &http.Transport{TLSClientConfig: cp.HTTPClient().Transport.(*http.Transport).TLSClientConfig.Clone()}}
	tokenClient.Transport.(*http.Transport).TLSClientConfig.Certificates = nil
	resp, err := tokenClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET namespace with bearer token: %d", resp.StatusCode)
	}

	ns := "kube-test"
	if err := cp.Do(ctx, http.MethodPost, "/api/v1/namespaces", map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns},
	}, nil); err != nil {
		t.Fatal(err)
	}
	const replicas = 2
	deployment := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": map[string]string{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]string{"app": "web"}},
				"spec": map[string]any{
					"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27"}},
				},
			},
		},
	}
	depPath := "/apis/apps/v1/namespaces/" + ns + "/deployments"
	if err := cp.Do(ctx, http.MethodPost, depPath, deployment, nil); err != nil {
		t.Fatal(err)
	}
	type depStatus struct {
		Metadata struct{ Generation int64 }
		Spec     struct{ Replicas int }
		Status   struct {
			ObservedGeneration int64
			Replicas           int
			ReadyReplicas      int
			AvailableReplicas  int
		}
	}
	var dep depStatus
	if err := cp.Do(ctx, http.MethodGet, depPath+"/web", nil, &dep); err != nil {
		t.Fatal(err)
	}
	if dep.Spec.Replicas != replicas {
		t.Fatalf("stored deployment has replicas %d", dep.Spec.Replicas)
	}

	if full {
		readyBegin := time.Now()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			if err := cp.Do(ctx, http.MethodGet, depPath+"/web", nil, &dep); err != nil {
				t.Fatal(err)
			}
			if dep.Status.ObservedGeneration >= dep.Metadata.Generation &&
				dep.Status.ReadyReplicas == dep.Spec.Replicas && dep.Status.AvailableReplicas == dep.Spec.Replicas {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("deployment not ready after 3 min: %+v", dep.Status)
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Logf("deployment ready (%d/%d) in %s", dep.Status.ReadyReplicas, dep.Spec.Replicas,
			time.Since(readyBegin).Round(time.Millisecond))

		// Namespace deletion finishes only with the controller-manager running.
		delBegin := time.Now()
		if err := cp.Do(ctx, http.MethodDelete, "/api/v1/namespaces/"+ns, nil, nil); err != nil {
			t.Fatal(err)
		}
		for {
			err := cp.Do(ctx, http.MethodGet, "/api/v1/namespaces/"+ns, nil, nil)
			var apiErr *APIError
			if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound {
				break
			}
			if time.Since(delBegin) > 2*time.Minute {
				t.Fatalf("namespace %s still present 2 min after delete (last error %v)", ns, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Logf("namespace deleted in %s", time.Since(delBegin).Round(time.Millisecond))
	} else if dep.Status.ReadyReplicas != 0 {
		t.Errorf("without controllers the deployment cannot be ready, got %+v", dep.Status)
	}

	pids := cp.PIDs()
	want := len(Binaries(full))
	if len(pids) != want {
		t.Errorf("PIDs() = %v, want %d components", pids, want)
	}
	dir := cp.Dir()
	stopBegin := time.Now()
	stopped = true
	if err := cp.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	t.Logf("stopped in %s", time.Since(stopBegin).Round(time.Millisecond))
	for name, pid := range pids {
		if processAlive(pid) {
			t.Errorf("%s (pid %d) still running after Stop", name, pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Stop left %s behind (%v)", dir, err)
	}
	if err := cp.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// processAlive reports whether pid still exists (Stop has reaped it, so a
// finished process is gone, not a zombie).
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}
