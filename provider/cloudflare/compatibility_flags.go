package cloudflare

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// The runtime's compatibility flags, derived from workerd itself (the header
// of the file says which version, and the drift test that keeps it true).
//
//go:embed compatibility_flags.txt
var compatibilityFlagsFile string

var knownCompatibilityFlags = sync.OnceValue(func() map[string]bool {
	known := map[string]bool{}
	for _, line := range strings.Split(compatibilityFlagsFile, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			known[line] = true
		}
	}
	return known
})

// compatibilityFlagsRuntime is the runtime version the list was read from,
// as its header names it.
var compatibilityFlagsRuntime = sync.OnceValue(func() string {
	return regexp.MustCompile(`workerd \d{4}-\d{2}-\d{2}`).FindString(compatibilityFlagsFile)
})

// compatibilityFlagProblem: Cloudflare refuses a flag the runtime does not
// know when the script is uploaded, after every resource before it exists;
// a misspelt flag is the usual cause, so the nearest known one is offered.
func compatibilityFlagProblem(flag string) string {
	known := knownCompatibilityFlags()
	if known[flag] {
		return ""
	}
	msg := fmt.Sprintf("%q is not a compatibility flag of the Workers runtime (%s)", flag, compatibilityFlagsRuntime())
	best, bestDistance := "", len(flag)/3+1
	for name := range known {
		if d := editDistance(flag, name); d < bestDistance || (d == bestDistance && best != "" && name < best) {
			best, bestDistance = name, d
		}
	}
	if best != "" {
		return msg + fmt.Sprintf(": did you mean %q?", best)
	}
	return msg + ": see https://developers.cloudflare.com/workers/configuration/compatibility-flags/"
}

// editDistance is the Levenshtein distance of two ASCII words.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
