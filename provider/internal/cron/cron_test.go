package cron

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidateCron(t *testing.T) {
	for _, ok := range []string{"* * * * *", "7,37 * * * *", "23 * * * *", "*/5 0-6/2 1 JAN-MAR mon-fri", "0 0 31 12 7"} {
		assert.NoError(t, Validate(ok), ok)
	}
	for bad, want := range map[string]string{
		"* * * *":      "5 fields",
		"60 * * * *":   "minute",
		"* 24 * * *":   "hour",
		"* * 0 * *":    "day of month",
		"* * * 13 *":   "month",
		"* * * * 0":    "day of week",
		"* * * * 8":    "day of week",
		"*/0 * * * *":  "step",
		"5-1 * * * *":  "backwards",
		"x * * * *":    "minute",
		"* * * FOO *":  "month",
		"1,,2 * * * *": "minute",
	} {
		err := Validate(bad)
		if assert.Error(t, err, bad) {
			assert.Contains(t, err.Error(), want, bad)
		}
	}
}
