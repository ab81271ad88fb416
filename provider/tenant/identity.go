package tenant

import "regexp"

// installationIDPattern is the form NewInstallationID makes: "oi" and
// installationIDLength lower-case hex digits.
var installationIDPattern = regexp.MustCompile(`^oi[0-9a-f]{32}$`)

// IsInstallationID reports whether id has the form of an installation
// identity, so a takeOverFrom that could never match an owner is refused
// before anything is created.
func IsInstallationID(id string) bool {
	return len(id) == 2+installationIDLength && installationIDPattern.MatchString(id)
}
