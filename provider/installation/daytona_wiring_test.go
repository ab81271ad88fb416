package installation

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDaytonaCredentialsGivenOnce: the component's sandbox.daytona apiUrl,
// apiKey and target are what both the DaytonaSnapshot child (the build) and
// the control plane get; nothing needs the provider's daytona* keys.
func TestDaytonaCredentialsGivenOnce(t *testing.T) {
	args := requiredArgs()
	provider, api, target := "daytona", "https://daytona.example/api", "eu"
	args.Sandbox = &SandboxArgs{Provider: &provider, Daytona: &DaytonaArgs{
		APIURL: pulumi.String(api), APIKey: pulumi.ToSecret(pulumi.String("dtn-once")).(pulumi.StringOutput), Target: &target}}
	mocks := &recordingMocks{}
	require.NoError(t, runWithMocks(mocks, args))

	snap := mocks.byName(t, "oi-daytona-snapshot").Inputs
	assert.Equal(t, api, snap["apiUrl"].StringValue())
	assert.Equal(t, target, snap["target"].StringValue())
	key := snap["apiKey"]
	require.True(t, key.IsSecret(), "the key stays a secret")
	assert.Equal(t, "dtn-once", key.SecretValue().Element.StringValue())

	cp := mocks.byName(t, "oi-worker-control-plane").Inputs
	assert.Equal(t, api, cp["vars"].ObjectValue()["DAYTONA_API_URL"].StringValue())
	assert.Equal(t, target, cp["vars"].ObjectValue()["DAYTONA_TARGET"].StringValue())
	cpKey := unwrapSecret(unwrapSecret(cp["secrets"]).ObjectValue()["DAYTONA_API_KEY"])
	assert.Equal(t, "dtn-once", cpKey.StringValue(), "the control plane gets the same key")
}
