package emulator_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/crontable"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// TestCronTable puts every expression of the shared table (the one the
// provider's validator is tested on) through the schedules API: valid ones
// are stored, invalid ones refused with 10100 naming the expression and the
// field.
func TestCronTable(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	mustUpload(t, c, "cron", meta())
	for _, tc := range crontable.Cases() {
		res, err := c.Workers.Scripts.Schedules.Update(ctx, "cron", workers.ScriptScheduleUpdateParams{
			AccountID: cloudflare.F(acct),
			Body:      []workers.ScriptScheduleUpdateParamsBody{{Cron: cloudflare.F(tc.Cron)}},
		})
		if tc.Valid {
			if assert.NoError(t, err, "%q (%s)", tc.Cron, tc.Form) {
				require.Len(t, res.Schedules, 1)
				assert.Equal(t, tc.Cron, res.Schedules[0].Cron)
			}
			continue
		}
		if !assert.Error(t, err, "%q (%s) accepted", tc.Cron, tc.Form) {
			continue
		}
		apiErr := requireAPIError(t, err, http.StatusBadRequest, 10100)
		assert.Contains(t, apiErr.Errors[0].Message, tc.Cron)
		if tc.Field != "" {
			assert.Contains(t, apiErr.Errors[0].Message, tc.Field+" field", "%q (%s)", tc.Cron, tc.Form)
		}
	}
}
