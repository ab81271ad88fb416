package installation

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/config"
)

// The Worker's own rules, applied by the component before any child is
// registered, report on the component's field.
func TestChildWorkerRulesNameTheComponentField(t *testing.T) {
	args := unmanaged(requiredArgs())
	rate := 1.5
	args.Workers = []InstallationWorkerArgs{{Name: "slack-bot", Observability: &cloudflare.Observability{Enabled: true, HeadSamplingRate: &rate}}}
	_, err := planInstallation(loadContract(t), normalize(t.Context(), &args), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "workers[0].observability.headSamplingRate: 1.5 is not a sampling rate")
	assert.NotContains(t, err.Error(), "openinspect-worker", "the child's name is not the field")
}

// Cloudflare's cron trigger limit is per account: the installation's crons
// together must fit the plan.
func TestInstallationCronsFitThePlan(t *testing.T) {
	args := unmanaged(requiredArgs())
	var crons []string
	for i := range 6 {
		crons = append(crons, fmt.Sprintf("%d * * * *", i))
	}
	args.Workers = []InstallationWorkerArgs{{Name: "slack-bot", Crons: crons}}
	s := normalize(t.Context(), &args)
	_, err := planInstallation(loadContract(t), s, nil)
	require.NoError(t, err, "six crons fit the paid plan")

	s = normalize(t.Context(), &args)
	s.limits = &config.WorkerLimits{Plan: "free", MaxVars: 64, MaxVarBytes: 5120, MaxScriptBytes: 64 << 20, MaxCrons: 5}
	_, err = planInstallation(loadContract(t), s, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "workers[0].crons: 6 cron triggers: the Workers free plan allows 5 per account")

	// Four on one worker and two on another: each fits, together they do not.
	args.Workers = []InstallationWorkerArgs{{Name: "slack-bot", Crons: crons[:4]}, {Name: "control-plane", Crons: crons[4:]}}
	s = normalize(t.Context(), &args)
	s.limits = &config.WorkerLimits{Plan: "free", MaxVars: 64, MaxVarBytes: 5120, MaxScriptBytes: 64 << 20, MaxCrons: 5}
	_, err = planInstallation(loadContract(t), s, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the installation's workers have")
}
