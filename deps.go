//go:build deps

// Package deps pins modules the project uses so go.sum carries their hashes.
package deps

import (
	_ "github.com/blang/semver"
	_ "github.com/cloudflare/cloudflare-go/v4"
	_ "github.com/cloudflare/cloudflare-go/v4/d1"
	_ "github.com/cloudflare/cloudflare-go/v4/kv"
	_ "github.com/cloudflare/cloudflare-go/v4/r2"
	_ "github.com/cloudflare/cloudflare-go/v4/workers"
	_ "github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	_ "github.com/modal-labs/libmodal/modal-go"
	_ "github.com/pulumi/providertest/pulumitest"
	_ "github.com/pulumi/pulumi-go-provider"
	_ "github.com/pulumi/pulumi-go-provider/infer"
	_ "github.com/pulumi/pulumi-go-provider/integration"
	_ "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	_ "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	_ "github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	_ "github.com/pulumi/pulumi/pkg/v3/codegen/python"
	_ "github.com/pulumi/pulumi/sdk/v3/go/auto"
	_ "github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	_ "modernc.org/sqlite"
	_ "modernc.org/sqlite/lib"
)
