package cron

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openinspect/pulumi-openinspect/tests/crontable"
)

// TestValidateTable runs the table the emulator's validator is also tested
// against (tests/crontable), so the two agree on every documented form.
func TestValidateTable(t *testing.T) {
	for _, c := range crontable.Cases() {
		err := Validate(c.Cron)
		if c.Valid {
			assert.NoError(t, err, "%q (%s)", c.Cron, c.Form)
			continue
		}
		if assert.Error(t, err, "%q (%s) accepted", c.Cron, c.Form) {
			assert.Contains(t, err.Error(), c.Cron, "the error names the expression")
			want := "5 fields"
			if c.Field != "" {
				want = "the " + c.Field + " field"
			}
			assert.Contains(t, err.Error(), want, "%q (%s)", c.Cron, c.Form)
		}
	}
}
