package wrangler_test

// The provider's side of the migrations rows: D1Migrations itself, served
// in process by the provider package and configured against the emulator,
// so the benchmark counts the requests the provider makes (its batching,
// its ledger reads), not a copy of them.

import (
	"context"
	"fmt"
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/openinspect/pulumi-openinspect/provider"
	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// providerServer is the provider served in process, configured for emu's
// default account.
func providerServer(tb testing.TB, emu *emulator.Server) integration.Server {
	tb.Helper()
	prov, err := provider.New()
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := integration.NewServer(context.Background(), provider.Name, semver.MustParse("1.0.0"), integration.WithProvider(prov))
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.Configure(p.ConfigureRequest{Args: property.NewMap(map[string]property.Value{
		"cloudflareApiToken":   property.New(emulator.DefaultToken).WithSecret(true),
		"cloudflareAccountId":  property.New(emulator.DefaultAccountID),
		"cloudflareApiBaseUrl": property.New(emu.CloudflareBaseURL()),
	})}); err != nil {
		tb.Fatal(err)
	}
	return srv
}

// providerMigrate applies files (name -> SQL) to the database dbID with
// D1Migrations' Check and Create, as `pulumi up` does.
func providerMigrate(srv integration.Server, dbID string, files map[string]string) error {
	migrations := map[string]property.Value{}
	for name, sql := range files {
		migrations[name] = property.New(sql)
	}
	urn := resource.NewURN("bench", "openinspect", "", tokens.Type(cloudflare.D1MigrationsToken), "migrations-"+dbID)
	check, err := srv.Check(p.CheckRequest{Urn: urn, Inputs: property.NewMap(map[string]property.Value{
		"databaseId": property.New(dbID),
		"migrations": property.New(migrations),
	})})
	if err != nil {
		return err
	}
	if len(check.Failures) > 0 {
		return fmt.Errorf("check: %v", check.Failures)
	}
	created, err := srv.Create(p.CreateRequest{Urn: urn, Properties: check.Inputs})
	if err != nil {
		return err
	}
	if got := created.Properties.Get("appliedCount").AsNumber(); int(got) != len(files) {
		return fmt.Errorf("applied %v of %d migrations", got, len(files))
	}
	return nil
}
