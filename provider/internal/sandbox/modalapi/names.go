package modalapi

import (
	"fmt"
	"regexp"
	"unicode/utf8"
)

// MaxEnvironmentNameLength is the longest environment name Modal accepts.
const MaxEnvironmentNameLength = 64

// environmentNamePattern is the character rule Modal's Python client
// (modal-client, modal/_utils/name_utils.py: is_valid_environment_name,
// applied by check_environment_name, e.g. on `modal environment create`)
// holds environment names to: an ASCII letter or digit first, then one or
// more ASCII letters, digits, '-', '_' or '.' (so at least two characters).
var environmentNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]+$`)

// EnvironmentNameRule says the rule in words, for a message that refuses a
// name.
const EnvironmentNameRule = "Modal environment names are 2 to 64 characters, ASCII letters, digits, '-', '_' and '.', " +
	"starting with a letter or digit"

// CheckEnvironmentName refuses a name Modal's client would refuse, before
// any call: otherwise only the first call that names the environment finds
// out. The name is quoted (cut short when long), never a secret.
func CheckEnvironmentName(name string) error {
	if n := utf8.RuneCountInString(name); n > MaxEnvironmentNameLength {
		return fmt.Errorf("%s is %d characters, which Modal refuses: %s", QuoteShort(name), n, EnvironmentNameRule)
	}
	if !environmentNamePattern.MatchString(name) {
		return fmt.Errorf("%s is not a name Modal accepts: %s", QuoteShort(name), EnvironmentNameRule)
	}
	return nil
}

// QuoteShort quotes s, cut after 64 characters with its length said, so a
// long value does not swamp the message it is quoted in.
func QuoteShort(s string) string {
	if r := []rune(s); len(r) > 64 {
		return fmt.Sprintf("%q… (%d characters)", string(r[:64]), len(r))
	}
	return fmt.Sprintf("%q", s)
}
