package wrangler_test

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// benchAssetsToken is the second account of the assets rows: wrangler
// deploys into it, so neither tool finds the other's files already held.
const (
	benchAssetsToken   = "bench-assets-wrangler-token"
	benchAssetsAccount = "bench-assets-wrangler-account"
)

// assetsRows uploads the same generated 200-file assets directory as a new
// worker, once through the provider's Worker (in process) and once with
// wrangler deploy, against one emulator, each into its own account so
// that each uploads every file, and reports the calls and time of each.
// Rows of BenchmarkSideBySide.
func assetsRows(b *testing.B) []benchRow {
	const op = "new worker + 200-file assets directory"
	emu, err := emulator.Start(emulator.Options{Tokens: map[string]string{
		emulator.DefaultToken: emulator.DefaultAccountID, benchAssetsToken: benchAssetsAccount}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = emu.Close() })
	project, public := assetsProject(b, "bench-assets-w", 200)
	server := providerOn(b, emu)
	u := resource.NewURN("bench", "assets", "", cloudflare.WorkerToken, "site")
	check, err := server.Check(p.CheckRequest{Urn: u, Inputs: property.NewMap(map[string]property.Value{
		"name":    property.New("bench-assets-p"),
		"content": property.New("export default { fetch(r, env) { return env.ASSETS.fetch(r); } };"),
		"assets": property.New(property.NewMap(map[string]property.Value{
			"directory": property.New(public), "binding": property.New("ASSETS")})),
	})})
	if err != nil || len(check.Failures) > 0 {
		b.Fatalf("check: %v %v", err, check.Failures)
	}
	pCalls, pWall, err := measure(emu, func() error {
		_, err := server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	e := newEnv(b, emu)
	// Later entries win in an exec environment: wrangler uses the second account.
	e.vars = append(e.vars, "CLOUDFLARE_API_TOKEN="+benchAssetsToken, "CLOUDFLARE_ACCOUNT_ID="+benchAssetsAccount)
	var r result
	wCalls, wWall, err := measure(emu, func() error {
		r = e.run(project, "", "deploy")
		return r.err
	})
	if err != nil {
		b.Fatalf("%s", r)
	}
	return []benchRow{
		{op: op, latency: "0 ms", path: "provider", calls: pCalls, wall: pWall, note: "session + 20 buckets of 10 + script upload"},
		{op: op, latency: "0 ms", path: "wrangler", calls: wCalls, wall: wWall, ratio: ratio(wWall, pWall), note: "includes Node start and bundling"},
	}
}
