package installation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/config"
)

// TestWorkerBundlesCheckedAsCloudflareWould: the component refuses, before
// registering anything, a bundle Cloudflare would refuse: one that names its
// Durable Object class without exporting it, one over the size limit, and
// a worker with more vars and secrets than the plan allows.
func TestWorkerBundlesCheckedAsCloudflareWould(t *testing.T) {
	bundle := filepath.Join(t.TempDir(), "control-plane.js")
	// SessionDO appears by name but is not exported: the old by-name check
	// passed it, Cloudflare refuses it.
	require.NoError(t, os.WriteFile(bundle, []byte("class SessionDO {}\nexport default { fetch() {} };\n"), 0o644))
	args := unmanaged(requiredArgs())
	args.Workers = []InstallationWorkerArgs{{Name: "control-plane", Script: &bundle}}
	_, err := planInstallation(loadContract(t), normalize(t.Context(), &args), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "workers[0].script: the bundle "+bundle+` of worker control-plane does not export the Durable Object class "SessionDO" of binding SESSION`)

	require.NoError(t, os.WriteFile(bundle, []byte("export class SessionDO {}\nexport default {};\n// "+strings.Repeat("x", 2048)), 0o644))
	s := normalize(t.Context(), &args)
	s.limits = &config.WorkerLimits{Plan: "free", MaxVars: 64, MaxVarBytes: 5120, MaxScriptBytes: 1024}
	_, err = planInstallation(loadContract(t), s, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "workers[0].script: the bundle "+bundle+" of worker control-plane: the Worker is 2.05 KiB; "+
		"Cloudflare refuses Workers over 1 KiB (10027): see openinspect:workerSizeLimit")

	s = normalize(t.Context(), &args)
	s.limits = &config.WorkerLimits{Plan: "free", MaxVars: 3, MaxVarBytes: 5120, MaxScriptBytes: 1 << 20}
	_, err = planInstallation(loadContract(t), s, nil)
	require.Error(t, err)
	assert.Regexp(t, `workers\[0\]\.vars: worker control-plane would have \d+ vars and secrets; the Workers free plan allows 3 per Worker \(openinspect:workersPlan\)`, err.Error())
	assert.Regexp(t, `upstream: worker slack-bot would have \d+ vars and secrets`, err.Error(), "a worker the spec does not list is named by upstream")

	s = normalize(t.Context(), &args)
	_, err = planInstallation(loadContract(t), s, nil)
	require.NoError(t, err, "the same bundle under the default limits")
}
