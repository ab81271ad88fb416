package installation

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
)

// Every upstream worker gets the Workers Logs setting upstream's worker
// module gives it (on, head sampling 1, invocation logs), from the
// contract; a worker entry's observability replaces it for that worker.
func TestWorkersGetUpstreamObservability(t *testing.T) {
	args := unmanaged(requiredArgs())
	off := false
	args.Workers = []InstallationWorkerArgs{{Name: "slack-bot", Observability: &cloudflare.Observability{Enabled: off}}}
	mocks := &recordingMocks{}
	require.NoError(t, runWithMocks(mocks, args))

	upstreamSetting := resource.NewPropertyValue(map[string]any{"enabled": true, "headSamplingRate": 1.0,
		"logs": map[string]any{"enabled": true, "headSamplingRate": 1.0, "invocationLogs": true}})
	assert.Equal(t, upstreamSetting, mocks.byName(t, "oi-worker-control-plane").Inputs["observability"],
		"the control plane as upstream's module deploys it")
	assert.Equal(t, resource.NewPropertyValue(map[string]any{"enabled": false}),
		mocks.byName(t, "oi-worker-slack-bot").Inputs["observability"], "the entry's setting wins")
}
