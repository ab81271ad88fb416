package upstream

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func (s BuildStep) String() string { return strings.Join(s, " ") }

// BuildSteps is the command sequence that builds the bundles of the named
// workers (every upstream worker when none is named) in a checkout at the
// pin: the install that works there, the shared package, then each worker
// with upstream's own build, every step at the checkout root.
func (c *Contract) BuildSteps(workers ...string) []BuildStep {
	if len(workers) == 0 {
		for _, w := range c.Workers {
			workers = append(workers, w.Logical)
		}
	}
	a := c.Artefacts
	install := BuildStep(strings.Fields(a.Install))
	install = append(install, "--workspace", a.SharedPackage)
	var builds []BuildStep
	for _, logical := range workers {
		w := c.Worker(logical)
		if w == nil {
			continue
		}
		install = append(install, "--workspace", w.Package)
		builds = append(builds, append(BuildStep(strings.Fields(w.Build)), "--workspace", w.Package))
	}
	steps := []BuildStep{install, {"npm", "run", "build", "--workspace", a.SharedPackage}}
	return append(steps, builds...)
}

// BuildCommand is BuildSteps as one shell line.
func (c *Contract) BuildCommand(workers ...string) string {
	var parts []string
	for _, s := range c.BuildSteps(workers...) {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, " && ")
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (v *validator) artefacts() {
	a, m := v.c.Artefacts, v.c.D1Migrations
	if !strings.HasPrefix(a.Install, "npm ci ") {
		v.add("artefacts.install %q is not an npm ci command", a.Install)
	}
	if !strings.HasPrefix(a.SharedPackage, "packages/") {
		v.add("artefacts.sharedPackage %q is not a package directory", a.SharedPackage)
	}
	for _, tool := range []string{"node", "npm"} {
		if a.Toolchain[tool] == "" {
			v.add("artefacts.toolchain.%s is required: the reference bundles' builder", tool)
		}
	}
	if len(a.Migrations) != m.FileCount {
		v.add("artefacts.migrations: %d files recorded, d1Migrations.fileCount is %d", len(a.Migrations), m.FileCount)
	}
	numbers := map[int]string{}
	for name, sum := range a.Migrations {
		if !sha256RE.MatchString(sum) {
			v.add("artefacts.migrations[%q]: %q is not a SHA-256", name, sum)
		}
		match := migrationFileRE.FindStringSubmatch(name)
		if match == nil || len(match[1]) != m.NumberWidth {
			v.add("artefacts.migrations: file %q does not match %s", name, m.FilePattern)
			continue
		}
		n, _ := strconv.Atoi(match[1])
		if n < m.First || n > m.Last || slices.Contains(m.Gaps, n) {
			v.add("artefacts.migrations: file %q has a number outside d1Migrations' first, last and gaps", name)
		}
		if other, dup := numbers[n]; dup {
			v.add("artefacts.migrations: %q and %q share a number", other, name)
		}
		numbers[n] = name
	}
	for _, f := range slices.Concat(m.FilesWithTriggers, m.FilesWithPragmas) {
		if _, ok := a.Migrations[f]; !ok && len(a.Migrations) > 0 {
			v.add("d1Migrations: %q is not among artefacts.migrations", f)
		}
	}
	for _, w := range v.c.Workers {
		b, ok := a.Bundles[w.Logical]
		switch {
		case !ok:
			v.add("artefacts.bundles: no reference bundle for worker %q", w.Logical)
		case !sha256RE.MatchString(b.SHA256) || b.Bytes <= 0:
			v.add("artefacts.bundles[%q]: needs a SHA-256 and a positive size", w.Logical)
		}
		if !strings.HasPrefix(w.Build, "npm run ") {
			v.add("workers %q: build %q is not an npm script, which BuildSteps runs per workspace", w.Logical, w.Build)
		}
	}
	for logical := range a.Bundles {
		if v.c.Worker(logical) == nil {
			v.add("artefacts.bundles: %q is not a worker", logical)
		}
	}
}
