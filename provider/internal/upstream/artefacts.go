package upstream

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Artefacts records, as facts, what the pinned commit yields when built the
// reproducible way (the release step, provider/cmd/openinspect-release, which
// writes this section with -record and otherwise checks its output against
// it): the command sequence that works at the pin, the toolchain that built
// the reference bundles, and SHA-256 digests of every migration file and of
// each worker's bundle. Supplied artefacts are verified against it.
type Artefacts struct {
	Notes string `json:"notes"`
	// Install is the dependency install that works at the pin, run at the
	// checkout root; BuildSteps adds a --workspace flag per package built.
	Install string `json:"install"`
	// SharedPackage is the package the workers import from its built dist/:
	// it is built first.
	SharedPackage string `json:"sharedPackage"`
	// Toolchain is what built the reference bundles (node, npm).
	Toolchain map[string]string `json:"toolchain"`
	// Migrations are the digests of the files in d1Migrations.directory, by
	// file name.
	Migrations map[string]string `json:"migrations"`
	// Bundles are the reference bundles, by logical worker.
	Bundles map[string]BundleDigest `json:"bundles"`
	// Web is how the web UI's placeholder build is made and what it yields;
	// absent, the release step builds no web.
	Web *WebArtefact `json:"web,omitempty"`
}

// WebArtefact is the web UI's placeholder OpenNext build: upstream's
// build:cloudflare run once at the pin with a placeholder for every value
// upstream inlines at build time, bundled as wrangler bundles it, its
// per-build keys replaced by fixed stand-ins so that two builds are
// byte-identical (each installation gets its own keys when deployed).
type WebArtefact struct {
	// Package is the web's workspace package.
	Package string `json:"package"`
	// Install and Build run at the checkout root (Build with the
	// placeholders in the environment); Bundle runs in Package, wrangler's
	// dry-run deploy of the package's own config, with -outdir appended.
	Install string `json:"install"`
	Build   string `json:"build"`
	Bundle  string `json:"bundle"`
	// Placeholders maps each inlined NEXT_PUBLIC_* variable to the value the
	// build is made with.
	Placeholders map[string]string `json:"placeholders"`
	// Fonts are what next/font/google is given instead of fetching Google
	// Fonts at build time: the npm package holding the same typefaces, and
	// for each stylesheet URL the build asks for, the family and the file of
	// the package it is served from. Google's files change without notice;
	// a pinned package keeps the build reproducible and offline.
	Fonts WebFonts `json:"fonts"`
	// SHA256, Files and Bytes are the recorded result: the SHA-256 of every
	// output path with its content's SHA-256 (webbuild's digest), the file
	// count and the total size.
	SHA256 string `json:"sha256"`
	Files  int    `json:"files"`
	Bytes  int64  `json:"bytes"`
}

// WebFonts are the build's stand-in for Google Fonts.
type WebFonts struct {
	Package     string                 `json:"package"`
	Stylesheets map[string]WebFontFace `json:"stylesheets"`
}

// WebFontFace is one stylesheet's single variable face.
type WebFontFace struct {
	Family string `json:"family"`
	File   string `json:"file"`
	Weight string `json:"weight"`
}

// BundleDigest is a reference bundle's SHA-256 and size.
type BundleDigest struct {
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// BuildStep is one command of the build, run at the checkout root.
type BuildStep []string

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
