package engine

import (
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/providertest/pulumitest/assertpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/kube"
)

// TestOpenInspectWithWebOnKubernetes deploys the full installation with its
// web UI: Cloudflare to the emulator and the web part through the real
// pulumi-kubernetes plugin to a real kube-apiserver + etcd (+ controller-manager,
// scheduler and kwok, so the Deployment becomes Ready). The web objects are
// read back as the API server stores them; destroy empties both the emulator
// and the installation's namespace.
func TestOpenInspectWithWebOnKubernetes(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	if err := kube.CheckBinaries(kube.DefaultBinDir(), true, t.Logf); err != nil {
		t.Fatalf("%v: run `make test-tools`", err)
	}
	cluster, err := kube.Start(t.Context(), kube.Options{Full: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Stop() })
	kubeconfig, err := os.ReadFile(cluster.Kubeconfig())
	require.NoError(t, err)

	emu := startEmulator(t)
	pt := newInstallationTest(t, emu)
	require.NoError(t, pt.CurrentStack().SetConfig(t.Context(), "kubeconfig", auto.ConfigValue{Value: string(kubeconfig), Secret: true}))
	const namespace = "oi-engine-web"
	editProgram(t, pt, func(program string) string {
		program = strings.Replace(program, "config:\n", "config:\n  kubeconfig:\n    type: string\n    secret: true\n", 1)
		return strings.Replace(program, componentProperties, componentProperties+
			"      web:\n        image: registry.example/open-inspect-web:1.0\n        namespace: "+namespace+"\n        kubeconfig: ${kubeconfig}\n", 1)
	})

	up := previewUp(t, pt)
	assert.Equal(t, "http://open-inspect-web-engine."+namespace+".svc.cluster.local:3000", up.Outputs["webUrl"].Value)

	var deployment struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Image string `json:"image"`
						Env   []struct {
							Name      string         `json:"name"`
							Value     string         `json:"value"`
							ValueFrom map[string]any `json:"valueFrom"`
						} `json:"env"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
		Status struct {
			ReadyReplicas int `json:"readyReplicas"`
		} `json:"status"`
	}
	ctx := t.Context()
	require.NoError(t, cluster.Do(ctx, http.MethodGet, "/apis/apps/v1/namespaces/"+namespace+"/deployments/open-inspect-web-engine", nil, &deployment))
	assert.Regexp(t, `^oi[0-9a-f]{32}$`, deployment.Metadata.Labels["openinspect.dev/installation"], "the label is the installation identity")
	assert.Equal(t, 1, deployment.Status.ReadyReplicas, "kwok runs the pod, so await saw it Ready")
	require.Len(t, deployment.Spec.Template.Spec.Containers, 1)
	env := map[string]string{}
	for _, e := range deployment.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil {
			env[e.Name] = "<from secret>"
		}
	}
	wsURL := workerWebSocket(emu.url, "open-inspect-control-plane-engine")
	assert.Equal(t, wsURL, env["NEXT_PUBLIC_WS_URL"], "the WebSocket URL the image must be built with reaches the server code")
	assert.Equal(t, emu.workerURL("open-inspect-control-plane-engine"), env["CONTROL_PLANE_URL"])
	assert.Equal(t, "modal", env["SANDBOX_PROVIDER"])
	assert.Equal(t, "<from secret>", env["SERVICE_AUTH_SECRET"])
	var ns struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	require.NoError(t, cluster.Do(ctx, http.MethodGet, "/api/v1/namespaces/"+namespace, nil, &ns))
	assert.Equal(t, deployment.Metadata.Labels["openinspect.dev/installation"], ns.Metadata.Labels["openinspect.dev/installation"])
	requireNoPlaintext(t, pt.CurrentStack(), string(kubeconfig))

	assertpreview.HasNoChanges(t, pt.Preview(t))

	pt.Destroy(t)
	emu.requireEmpty(t)
	deadline := time.Now().Add(90 * time.Second)
	for {
		err := cluster.Do(ctx, http.MethodGet, "/api/v1/namespaces/"+namespace, nil, nil)
		var apiErr *kube.APIError
		if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound {
			break
		}
		require.True(t, time.Now().Before(deadline), "namespace %s still exists after destroy: %v", namespace, err)
		time.Sleep(time.Second)
	}
}
