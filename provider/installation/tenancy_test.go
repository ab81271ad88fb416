package installation

import (
	"context"
	"strings"
	"testing"

	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/provider/internal/web/kube"
	"github.com/openinspect/pulumi-openinspect/provider/tenant"
)

// lockingMocks are recordingMocks whose NameLock answers with what the
// provider's own NameLock creates, identity included.
type lockingMocks struct {
	recordingMocks
	t        *testing.T
	identity string // what the NameLock created
}

func (m *lockingMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	id, out, err := m.recordingMocks.NewResource(args)
	if err != nil || args.TypeToken != "openinspect:index:NameLock" {
		return id, out, err
	}
	created, err := (&tenant.NameLock{}).Create(m.t.Context(), infer.CreateRequest[tenant.NameLockArgs]{Inputs: tenant.NameLockArgs{
		NamePrefix: args.Inputs["namePrefix"].StringValue(), DeploymentName: args.Inputs["deploymentName"].StringValue(),
	}})
	if err != nil {
		return "", nil, err
	}
	m.mu.Lock()
	m.identity = created.Output.InstallationID
	m.mu.Unlock()
	out["installationId"] = resource.NewProperty(created.Output.InstallationID)
	return created.ID, out, nil
}

// emptyCluster answers the web's ownership checks: nothing exists yet.
type emptyCluster struct{}

func (emptyCluster) Namespace(context.Context, string) (kube.Namespace, error) {
	return kube.Namespace{}, nil
}

func (emptyCluster) Object(context.Context, string, string, string) (kube.Object, error) {
	return kube.Object{}, nil
}

// TestCollidingNamesGetDistinctWebLabels: installations (open-inspect, x-y)
// and (open-inspect-x, y) concatenate alike — both D1 databases are named
// open-inspect-x-y, the collision tests/engine's TestCollidingNamesTenancy
// deploys — yet the Kubernetes ownership label on every web object is each
// installation's identity, so they never share one (a label of
// <namePrefix>-<deploymentName> would have been the same for both). The
// Cloudflare children record that same identity as their owner.
func TestCollidingNamesGetDistinctWebLabels(t *testing.T) {
	webConnect = func(string, string) (kube.Reader, error) { return emptyCluster{}, nil }
	t.Cleanup(func() { webConnect = nil })

	labels := map[string]string{}
	for _, names := range []struct{ prefix, deployment string }{{"open-inspect", "x-y"}, {"open-inspect-x", "y"}} {
		args := unmanaged(requiredArgs())
		args.NamePrefix, args.DeploymentName = &names.prefix, names.deployment
		args.Web = &web.Args{Image: "web:1", Namespace: "oi-web"}
		assert.Equal(t, "open-inspect-x-y", mustPlan(t, args).D1Name, "the names collide")

		mocks := &lockingMocks{t: t}
		require.NoError(t, pulumi.RunErr(func(ctx *pulumi.Context) error {
			_, err := NewOpenInspect(ctx, "oi", args)
			return err
		}, pulumi.WithMocks("project", "stack", mocks)))

		require.Regexp(t, `^oi[0-9a-f]{32}$`, mocks.identity)
		webObjects := 0
		for _, r := range mocks.registered() {
			if !strings.HasPrefix(r.TypeToken, "kubernetes:") || r.TypeToken == "kubernetes:index:Provider" {
				continue
			}
			webObjects++
			label := r.Inputs["metadata"].ObjectValue()["labels"].ObjectValue()["openinspect.dev/installation"]
			assert.Equal(t, resource.NewProperty(mocks.identity), label, "%s is labelled with the installation's identity", r.Name)
		}
		assert.Equal(t, 6, webObjects, "namespace, secret, deployment, service, two network policies")
		// The Cloudflare children that record evidence record the same identity.
		for _, r := range mocks.registered() {
			switch strings.TrimPrefix(r.TypeToken, "openinspect:index:") {
			case "D1Database", "KvNamespace", "R2Bucket", "Queue", "Worker":
				assert.Equal(t, resource.NewProperty(mocks.identity), r.Inputs["owner"], "%s records the identity", r.Name)
			}
		}
		labels[names.prefix+"/"+names.deployment] = mocks.identity
	}
	require.Len(t, labels, 2)
	assert.NotEqual(t, labels["open-inspect/x-y"], labels["open-inspect-x/y"], "colliding names never share a label")
}
