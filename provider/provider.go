// Package provider implements the openinspect Pulumi provider: one component
// resource that stands up a complete Open-Inspect installation, and the custom
// resources that own the hard parts of it.
package provider

import (
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
)

// Name is the Pulumi package name; resource tokens are openinspect:index:<Name>.
const Name = "openinspect"

// Version is the plugin's version. Release builds set it with
// -ldflags "-X github.com/openinspect/pulumi-openinspect/provider.Version=1.2.3".
var Version = "0.0.1-dev"

// New builds the provider with every resource and the provider configuration.
func New() (p.Provider, error) {
	return infer.NewProviderBuilder().
		WithDisplayName("Open-Inspect").
		WithDescription("Stands up a complete Open-Inspect (background-agents) installation on Cloudflare, Modal or Daytona, and Kubernetes.").
		WithKeywords("open-inspect", "cloudflare", "modal", "daytona", "kubernetes", "category/cloud").
		WithHomepage("https://github.com/openinspect/pulumi-openinspect").
		WithRepository("https://github.com/openinspect/pulumi-openinspect").
		WithPublisher("openinspect").
		WithLicense("Apache-2.0").
		WithNamespace("openinspect").
		// Resources live in package provider; without the map their tokens
		// would be openinspect:provider:<Name>.
		WithModuleMap(map[tokens.ModuleName]tokens.ModuleName{"provider": "index"}).
		WithLanguageMap(map[string]any{
			"go": map[string]any{
				"importBasePath":                 "github.com/openinspect/pulumi-openinspect/sdk/go/openinspect",
				"generateResourceContainerTypes": true,
				"respectSchemaVersion":           true,
			},
			"nodejs": map[string]any{
				"packageName":          "@openinspect/pulumi-openinspect",
				"respectSchemaVersion": true,
			},
			"python": map[string]any{
				"packageName":          "pulumi_openinspect",
				"respectSchemaVersion": true,
				"pyproject":            map[string]any{"enabled": true},
			},
		}).
		WithConfig(infer.Config(&Config{})).
		WithResources(
			infer.Resource(&D1Database{}),
			infer.Resource(&KvNamespace{}),
			infer.Resource(&R2Bucket{}),
			infer.Resource(&D1Migrations{}),
			infer.Resource(&Queue{}),
			infer.Resource(&Worker{}),
			infer.Resource(&AppSecrets{}),
			infer.Resource(&GeneratedSecret{}),
			infer.Resource(&WorkerUrls{}),
			infer.Resource(&NameLock{}),
		).
		WithComponents(infer.ComponentF(NewOpenInspect)).
		Build()
}
