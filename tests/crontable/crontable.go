// Package crontable is the one table of cron trigger expressions, valid and
// invalid, that both cron validators are tested against: the provider's
// (provider/internal/cron) and the emulator's independent one
// (tests/emulator/cron.go). Each entry names the documented form it checks;
// the rule itself is in provider/internal/cron/cron.go, taken from
// https://developers.cloudflare.com/workers/configuration/cron-triggers/.
//
// Only tests import it; it imports only the standard library.
package crontable

import (
	_ "embed"
	"encoding/json"
)

// Case is one expression and whether Cloudflare accepts it.
type Case struct {
	Cron  string `json:"cron"`
	Valid bool   `json:"valid"`
	// Field is the field an invalid expression is refused for, as both
	// validators name it ("minute", "hour", "day of month", "month",
	// "day of week"); empty when the field count is wrong.
	Field string `json:"field,omitempty"`
	// Form is what the entry checks.
	Form string `json:"form"`
}

//go:embed expressions.json
var expressions []byte

// Cases returns the table, in file order.
func Cases() []Case {
	var cases []Case
	if err := json.Unmarshal(expressions, &cases); err != nil {
		panic("tests/crontable/expressions.json: " + err.Error())
	}
	return cases
}
