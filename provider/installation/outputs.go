package installation

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// The paths upstream's Linear bot serves (packages/linear-bot/src/index.ts at
// the pin) that the Linear app is set up with, as upstream's outputs
// linear_bot_webhook_url and linear_bot_oauth_authorize_url name them.
const (
	linearBot                = "linear-bot"
	linearWebhookPath        = "/webhook"
	linearOAuthAuthorizePath = "/oauth/authorize"
)

// Web platforms the webPlatform output reports.
const (
	webPlatformKubernetes = "kubernetes"
	webPlatformCloudflare = "cloudflare"
	webPlatformVercel     = "vercel"
	webPlatformNone       = "none"
)

// reportOutputs sets the outputs that name what an operator sets up by hand
// after an up: the Linear app's URLs, the KV namespace IDs, the Modal health
// endpoint and where the web UI runs.
func (b *installer) reportOutputs(comp *OpenInspect) {
	empty := pulumi.String("").ToStringOutput()
	comp.LinearWebhookURL, comp.LinearOAuthAuthorizeURL = empty, empty
	if b.plan.worker(linearBot) != nil {
		bot := b.workerURL(linearBot, urlFull)
		comp.LinearWebhookURL = pulumi.Sprintf("%s%s", bot, linearWebhookPath)
		comp.LinearOAuthAuthorizeURL = pulumi.Sprintf("%s%s", bot, linearOAuthAuthorizePath)
	}
	ids := pulumi.StringMap{}
	for logical, ns := range b.kv {
		ids[logical] = ns.NamespaceID
	}
	comp.KvNamespaceIDs = ids.ToStringMapOutput()
	comp.ModalHealthURL = empty
	if b.modal != nil {
		comp.ModalHealthURL = b.modal.HealthURL
	}
	platform := webPlatformNone
	switch {
	case b.plan.Web != nil:
		platform = webPlatformCloudflare
	case b.plan.VercelWeb != nil:
		platform = webPlatformVercel
	case b.spec.Web != nil:
		platform = webPlatformKubernetes
	}
	comp.WebPlatform = pulumi.String(platform).ToStringOutput()
}
