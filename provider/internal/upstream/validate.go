package upstream

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// ValidationError lists every inconsistency Validate found.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("contract has %d problem(s):\n  %s", len(e.Problems), strings.Join(e.Problems, "\n  "))
}

type validator struct {
	c        *Contract
	commit   string // the commit upstream.commit must name
	problems []string
	usedGen  map[string]bool
}

func (v *validator) add(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

var (
	commitRE        = regexp.MustCompile(`^[0-9a-f]{40}$`)
	dateRE          = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	envNameRE       = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	logicalRE       = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	migrationFileRE = regexp.MustCompile(`^(\d+)_[A-Za-z0-9_]+\.sql$`)
)

// Validate checks the contract's internal consistency, and that it records
// the pinned commit (UPSTREAM_COMMIT), and returns a *ValidationError listing
// every problem, or nil.
func (c *Contract) Validate() error { return c.ValidateFor(UpstreamCommit()) }

// ValidateFor is Validate for a contract of another commit: the pin sync
// checks the contract it derives for the commit it moves to before writing
// it (and with it UPSTREAM_COMMIT).
func (c *Contract) ValidateFor(commit string) error {
	v := &validator{c: c, commit: commit, usedGen: map[string]bool{}}
	v.upstream()
	v.declarations()
	v.conditions()
	v.naming()
	v.compatibility()
	v.resources()
	for i := range c.Workers {
		v.worker(&c.Workers[i])
	}
	v.consumersAndOrder()
	v.sandbox()
	v.migrations()
	v.artefacts()
	for _, g := range c.Generated {
		if !v.usedGen[g.Name] {
			v.add("generated %q: no source names it", g.Name)
		}
	}
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

func (v *validator) upstream() {
	u := v.c.Upstream
	if !commitRE.MatchString(u.Commit) {
		v.add("upstream.commit %q is not a 40-hex commit", u.Commit)
	}
	if u.Commit != v.commit {
		v.add("upstream.commit %q differs from UPSTREAM_COMMIT %q", u.Commit, v.commit)
	}
	if _, err := time.Parse(time.RFC3339, u.CommitDate); err != nil {
		v.add("upstream.commitDate %q is not RFC 3339", u.CommitDate)
	}
	if !strings.HasPrefix(u.Repository, "https://github.com/") {
		v.add("upstream.repository %q is not a GitHub URL", u.Repository)
	}
}
