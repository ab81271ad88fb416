package installation

import (
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/provider/internal/web/kube"
)

// outputMocks answer the ModalApp with the health URL the real one discovers.
type outputMocks struct{ lockingMocks }

func (m *outputMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	id, out, err := m.lockingMocks.NewResource(args)
	if err == nil && args.TypeToken == "openinspect:index:ModalApp" {
		out["healthUrl"] = resource.NewProperty("https://acme--open-inspect-api-health.modal.run")
	}
	return id, out, err
}

// componentOutputs runs the component against the mocks and returns its
// new outputs once resolved.
func componentOutputs(t *testing.T, args OpenInspectArgs) (map[string]any, *outputMocks) {
	t.Helper()
	webConnect = func(string, string) (kube.Reader, error) { return emptyCluster{}, nil }
	t.Cleanup(func() { webConnect = nil })
	mocks := &outputMocks{lockingMocks{t: t}}
	var mu sync.Mutex
	got := map[string]any{}
	require.NoError(t, pulumi.RunErr(func(ctx *pulumi.Context) error {
		comp, err := NewOpenInspect(ctx, "oi", args)
		if err != nil {
			return err
		}
		pulumi.All(comp.LinearWebhookURL, comp.LinearOAuthAuthorizeURL, comp.KvNamespaceIDs, comp.ModalHealthURL, comp.WebPlatform).
			ApplyT(func(v []any) error {
				mu.Lock()
				defer mu.Unlock()
				for i, k := range []string{"linearWebhookUrl", "linearOAuthAuthorizeUrl", "kvNamespaceIds", "modalHealthUrl", "webPlatform"} {
					got[k] = v[i]
				}
				return nil
			})
		return nil
	}, pulumi.WithMocks("project", "stack", mocks)))
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 5, "the outputs resolved")
	return got, mocks
}

func TestOperatorOutputs(t *testing.T) {
	// The defaults: Modal deployed, no Linear bot, no web.
	got, _ := componentOutputs(t, requiredArgs())
	assert.Equal(t, "", got["linearWebhookUrl"])
	assert.Equal(t, "", got["linearOAuthAuthorizeUrl"])
	assert.Equal(t, map[string]string{
		"session-index": "kv-open-inspect-session-index-t1",
		"slack-kv":      "kv-open-inspect-slack-kv-t1",
	}, got["kvNamespaceIds"])
	assert.Equal(t, "https://acme--open-inspect-api-health.modal.run", got["modalHealthUrl"])
	assert.Equal(t, "none", got["webPlatform"])

	// The Linear bot and the web on Kubernetes, the sandbox not deployed.
	args := unmanaged(requiredArgs())
	on, client := true, "lin-client"
	args.LinearBot = &LinearBotArgs{Enabled: &on, ClientID: &client, ClientSecret: pulumi.String("cs"),
		WebhookSecret: pulumi.String("ws"), APIKey: pulumi.String("k")}
	args.Web = &web.Args{Image: "web:1", Namespace: "oi-web"}
	got, _ = componentOutputs(t, args)
	assert.Equal(t, "https://open-inspect-linear-bot-t1.acct.workers.dev/webhook", got["linearWebhookUrl"])
	assert.Equal(t, "https://open-inspect-linear-bot-t1.acct.workers.dev/oauth/authorize", got["linearOAuthAuthorizeUrl"])
	assert.Contains(t, got["kvNamespaceIds"], "linear-kv")
	assert.Equal(t, "", got["modalHealthUrl"], "no Modal app deployed, no health URL")
	assert.Equal(t, "kubernetes", got["webPlatform"])
}

// TestAppIconURLReachesTheWeb: upstream passes app_icon_url to the web only
// (NEXT_PUBLIC_APP_ICON_URL); no worker gets it.
func TestAppIconURLReachesTheWeb(t *testing.T) {
	args := unmanaged(requiredArgs())
	icon := "https://cdn.example.test/logo.png"
	args.AppIconURL = &icon
	args.Web = &web.Args{Image: "web:1", Namespace: "oi-web"}
	assert.Equal(t, icon, mustPlan(t, args).AppIconURL)
	_, mocks := componentOutputs(t, args)

	env := map[string]string{}
	for _, e := range mocks.byName(t, "oi-web").Inputs["spec"].ObjectValue()["template"].ObjectValue()["spec"].ObjectValue()["containers"].ArrayValue()[0].ObjectValue()["env"].ArrayValue() {
		if v, ok := e.ObjectValue()["value"]; ok {
			env[e.ObjectValue()["name"].StringValue()] = v.StringValue()
		}
	}
	assert.Equal(t, icon, env["NEXT_PUBLIC_APP_ICON_URL"])
	// What upstream's web reads, and nothing it does not (the OI_* names of before).
	assert.Equal(t, map[string]string{
		"CONTROL_PLANE_URL":            "https://open-inspect-control-plane-t1.acct.workers.dev",
		"SANDBOX_PROVIDER":             "modal",
		"NEXT_PUBLIC_WS_URL":           "wss://open-inspect-control-plane-t1.acct.workers.dev",
		"NEXT_PUBLIC_SANDBOX_PROVIDER": "modal",
		"NEXT_PUBLIC_APP_NAME":         "Open-Inspect",
		"NEXT_PUBLIC_APP_ICON_URL":     icon,
		"PORT":                         "3000",
		"HOSTNAME":                     "0.0.0.0",
	}, env, "the plain variables (SERVICE_AUTH_SECRET comes from the Secret)")
	for _, r := range mocks.registered() {
		if r.TypeToken == "openinspect:index:Worker" {
			assert.NotContains(t, r.Inputs["vars"].ObjectValue().Mappable(), "APP_ICON_URL", r.Name)
			for _, v := range r.Inputs["vars"].ObjectValue() {
				assert.NotEqual(t, icon, v.StringValue(), "%s gets no icon URL", r.Name)
			}
		}
	}

	// Unset, the web gets the contract's default: empty, the built-in icon.
	args.AppIconURL = nil
	assert.Equal(t, "", mustPlan(t, args).AppIconURL)
}
