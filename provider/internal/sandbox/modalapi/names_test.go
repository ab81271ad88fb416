package modalapi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCheckEnvironmentName holds the rule of Modal's client: the names it
// accepts pass, and each way of breaking it is refused with the rule said.
func TestCheckEnvironmentName(t *testing.T) {
	for _, ok := range []string{"main", "oi-live", "staging.2", "A_b", "x1", strings.Repeat("e", 64)} {
		assert.NoError(t, CheckEnvironmentName(ok), ok)
	}
	for name, want := range map[string]string{
		"":                       "is not a name Modal accepts",
		"a":                      "is not a name Modal accepts", // the client's pattern needs a second character
		"-dev":                   "is not a name Modal accepts",
		".hidden":                "is not a name Modal accepts",
		"my env":                 "is not a name Modal accepts",
		"a/b":                    "is not a name Modal accepts",
		"prod:eu":                "is not a name Modal accepts",
		"café":                   "is not a name Modal accepts",
		"main\n":                 "is not a name Modal accepts",
		strings.Repeat("e", 65):  "is 65 characters, which Modal refuses",
		strings.Repeat("é", 300): "is 300 characters, which Modal refuses",
	} {
		err := CheckEnvironmentName(name)
		if assert.Error(t, err, "%q", name) {
			assert.Contains(t, err.Error(), want)
			assert.Contains(t, err.Error(), EnvironmentNameRule)
			assert.Less(t, len(err.Error()), 400, "a long name is quoted short")
		}
	}
}
