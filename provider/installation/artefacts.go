package installation

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/esm"
	"github.com/openinspect/pulumi-openinspect/provider/internal/artefacts"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// Stage 4: the artefacts each planned part needs (worker bundles, the
// migrations, the sandbox sources), found and verified.

// embeddedArtefacts is the set compiled into the plugin; tests replace it,
// so they do not depend on whether the release step ran in this tree.
var embeddedArtefacts = artefacts.Embedded

// embedded is the plugin's artefact set, materialised as a checkout-shaped
// directory: what the component uses where the user gave no override.
type embedded struct {
	set *artefacts.Set
	dir string
}

// useEmbedded materialises the embedded artefacts when upstream.checkout is
// not given (migrationsDir and workerBundles still win over them). A plugin
// built without the release step embeds nothing: then nil, and
// resolveArtifacts says what to supply.
func useEmbedded(ctx context.Context, s *spec) (*embedded, error) {
	if s.Upstream.Checkout != "" {
		return nil, nil
	}
	set, err := embeddedArtefacts()
	if errors.Is(err, artefacts.ErrNothingEmbedded) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	root, err := cacheRoot(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := set.Materialise(root)
	if err != nil {
		return nil, fmt.Errorf("the upstream artefacts embedded in this plugin: %w", err)
	}
	// The spec's copy of the upstream input (never the user's args) points at
	// the materialised set, so every stage that needs a checkout (the
	// sandbox side's validation too) finds one; resolveArtifacts tells it
	// from a supplied one by emb.
	s.Upstream.Checkout = dir
	return &embedded{set: set, dir: dir}, nil
}

// workerLimits are the provider's Workers limits (the defaults without a
// provider configuration, as in cacheRoot).
func workerLimits(ctx context.Context) (*config.WorkerLimits, error) {
	lim, err := providerConfig(ctx).WorkerLimits()
	return &lim, err
}

// providerConfig is the provider's configuration. The component may be
// constructed without it in its context (unit tests call the constructor
// directly), where infer.GetConfig panics; an empty configuration, whose
// environment fallbacks answer, stands in then.
func providerConfig(ctx context.Context) *config.Config {
	cfg := func() (c *config.Config) {
		defer func() { _ = recover() }()
		return config.FromContext(ctx)
	}()
	if cfg == nil {
		cfg = &config.Config{}
	}
	return cfg
}

// cacheRoot is the provider's cache directory.
func cacheRoot(ctx context.Context) (string, error) {
	return providerConfig(ctx).CacheRoot()
}

// resolveArtifacts finds each worker's bundle, the migrations directory and
// the sandbox sources (the embedded artefacts unless overridden), verifies
// what was supplied against the digests recorded for the pin, and says how
// to build what is missing. What it verified goes into plan.Verification,
// what it only warns about into plan.Warnings.
func resolveArtifacts(c *upstream.Contract, plan *installPlan, s *spec, emb *embedded) []error {
	var errs problems
	bad := errs.add
	up := s.Upstream
	plan.Verification = map[string]string{}
	checkout, checkoutField := up.Checkout, "upstream.checkout"
	var roots artefactRoots
	if emb != nil && checkout == emb.dir {
		checkoutField = embeddedField
		roots.checkout, _ = realPath(checkout)
		verified := "verified against the digests recorded for the pin when the release was built"
		if !emb.set.Manifest.Verified {
			verified = "NOT verified: a development build of the plugin"
			plan.Warnings = append(plan.Warnings, "this plugin embeds upstream artefacts that were not verified against the recorded digests "+
				"(a development or test build): "+emb.set.Summary())
		}
		plan.tally.source = "embedded artefacts"
		plan.Verification["source"] = fmt.Sprintf("embedded in the plugin (upstream %s, manifest sha256 %s), %s",
			emb.set.Manifest.UpstreamCommit, emb.set.Digest(), verified)
	} else if checkout != "" {
		if info, err := os.Stat(checkout); err != nil || !info.IsDir() {
			bad("upstream.checkout", "%q is not a directory", checkout)
			checkout = ""
		} else if roots.checkout, err = realPath(checkout); err != nil {
			bad("upstream.checkout", "resolving %q: %v", checkout, err)
			checkout = ""
		} else if head, isGit, err := gitHead(checkout); err != nil {
			bad("upstream.checkout", "reading its git HEAD: %v", err)
		} else if isGit && head != c.Upstream.Commit {
			bad("upstream.checkout", "HEAD is %s but this provider is pinned to %s: `git checkout %s` there and rebuild the bundles (%s)",
				head, c.Upstream.Commit, c.Upstream.Commit, c.BuildCommand())
		}
		plan.Verification["source"] = "upstream.checkout " + checkout
		plan.tally.source = "checkout " + checkout
	}
	for logical := range up.WorkerBundles {
		if plan.worker(logical) == nil {
			bad("upstream.workerBundles."+logical, "no worker %q in this installation", logical)
		}
	}
	if wd, err := os.Getwd(); err == nil {
		roots.workDir, _ = realPath(wd)
	}
	specs := map[string]int{}
	for i, w := range s.Workers {
		specs[w.Name] = i
	}
	for _, w := range plan.Workers {
		path, script, given := "", "", true
		cw := c.Worker(w.Logical)
		if i, ok := specs[w.Logical]; ok && s.Workers[i].Script != nil {
			path, script = fmt.Sprintf("workers[%d].script", i), *s.Workers[i].Script
		} else if s, ok := up.WorkerBundles[w.Logical]; ok {
			path, script = "upstream.workerBundles."+w.Logical, s
		} else if checkout != "" && cw != nil {
			path, script, given = checkoutField, filepath.Join(checkout, filepath.FromSlash(cw.Bundle)), false
		}
		switch {
		case script == "" && cw != nil:
			bad("upstream", "no bundle for worker %s: %s; or set upstream.checkout to an upstream checkout at %s built with `%s`, or upstream.workerBundles.%s",
				w.Logical, artefacts.ErrNothingEmbedded, c.Upstream.Commit, c.BuildCommand(w.Logical), w.Logical)
		case script == "":
			bad(fmt.Sprintf("workers[%d].script", specs[w.Logical]), "required: %s is not an upstream worker, so its bundle must be given", w.Logical)
		default:
			if info, err := os.Stat(script); err != nil || info.IsDir() {
				how := ""
				if cw != nil && !given { // the checkout's bundle is built there; a given path is the user's own
					how = fmt.Sprintf(": build it at the checkout's root with `%s`", c.BuildCommand(w.Logical))
				}
				bad(path, "the bundle %s of worker %s is missing%s", script, w.Logical, how)
			} else if problem := roots.confine(script, given); problem != "" {
				bad(path, "the bundle of worker %s %s", w.Logical, problem)
			} else if problem := cloudflare.ScriptFileProblem(script); problem != "" {
				bad(path, "the bundle of worker %s: %s", w.Logical, problem)
			} else if problem := mainModuleProblem(script); problem != "" {
				bad(path, "the bundle %s of worker %s %s", script, w.Logical, problem)
			} else if cw != nil && !strings.HasPrefix(path, "workers[") {
				verifyBundle(c, plan, w.Logical, path, script, emb != nil && checkout == emb.dir)
			} else {
				plan.Verification["bundle."+w.Logical] = "given by " + path + ", not compared"
			}
			w.Script, w.ScriptField = script, path
		}
	}
	warnDifferingBundles(c, plan)
	dir := up.MigrationsDir
	path, given := "upstream.migrationsDir", true
	if dir == "" && checkout != "" {
		dir, path, given = filepath.Join(checkout, filepath.FromSlash(c.D1Migrations.Directory)), checkoutField, false
	}
	switch {
	case dir == "":
		bad("upstream", "no D1 migrations: %s; set upstream.checkout to an upstream checkout at %s, or upstream.migrationsDir",
			artefacts.ErrNothingEmbedded, c.Upstream.Commit)
	default:
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			bad(path, "the D1 migrations directory %s is missing", dir)
		} else if problem := roots.confineTree(dir, given); problem != "" {
			bad(path, "the D1 migrations directory %s", problem)
		} else if problems := cloudflare.MigrationsDirectoryProblems(dir); len(problems) > 0 {
			// The D1Migrations child's own rules, on the files it would read.
			for _, problem := range problems {
				bad(path, "in %s: %s", dir, problem)
			}
		} else if emb != nil && dir == filepath.Join(emb.dir, filepath.FromSlash(c.D1Migrations.Directory)) {
			matches, _ := filepath.Glob(filepath.Join(dir, "*.sql"))
			plan.Verification["migrations"] = fmt.Sprintf("%d files from the embedded artefacts, checked against their manifest", len(matches))
			plan.tally.embedded = len(matches)
		} else {
			errs = append(errs, verifyMigrations(c, plan, path, dir, up.AllowUnverified)...)
		}
		plan.MigrationsDir = dir
	}
	if checkout != "" && plan.plannedBackend() != nil {
		plan.SandboxSource = checkout
		for _, rel := range sandboxSources(c, plan) {
			source := filepath.Join(checkout, filepath.FromSlash(rel))
			if _, err := os.Stat(source); err != nil {
				bad(checkoutField, "%s is missing from %s: the %s sandbox side is deployed from it (or set sandbox.manage to false)",
					rel, checkout, plan.SandboxProvider)
			} else if problem := roots.confine(source, false); problem != "" {
				bad(checkoutField, "the sandbox source %s %s", rel, problem)
			}
		}
	}
	plan.Summary = plan.tally.summary(c.Upstream.Commit)
	return errs
}

// verificationTally counts what resolveArtifacts compared with the pin, so
// the upstreamSummary output says it in one line and the per-file detail
// stays in upstreamVerification.
type verificationTally struct {
	source string // "embedded artefacts" or "checkout <path>"; "" when none
	// Migrations compared with the pin's digests (compared): pinned is the
	// pin's count; matched, missing, changed and extra what the directory
	// held.
	compared                                 bool
	pinned, matched, missing, changed, extra int
	// Bundles compared with the reference build, and those that differ.
	bundles, bundlesDiffer int
	// The migrations and bundles of an embedded set, checked against the
	// plugin's manifest instead.
	embedded, embeddedBundles int
}

// summary is one line: where the artefacts came from, how many of the
// pin's migrations they hold, and how many bundles differ.
func (t verificationTally) summary(commit string) string {
	source := t.source
	if source == "" {
		source = "given artefacts"
	}
	var parts []string
	switch {
	case t.embedded > 0:
		parts = append(parts, fmt.Sprintf("%d migrations and %d bundles checked against the plugin's manifest", t.embedded, t.embeddedBundles))
	case t.compared && t.matched == t.pinned && t.missing+t.changed+t.extra == 0:
		parts = append(parts, fmt.Sprintf("the pin's %d migrations, all matching", t.pinned))
	case t.compared:
		var off []string
		for _, n := range []struct {
			count int
			what  string
		}{{t.missing, "missing"}, {t.changed, "changed"}, {t.extra, "extra"}} {
			if n.count > 0 {
				off = append(off, fmt.Sprintf("%d %s", n.count, n.what))
			}
		}
		parts = append(parts, fmt.Sprintf("%d of the pin's %d migrations (%s)", t.matched, t.pinned, strings.Join(off, ", ")))
	}
	switch {
	case t.bundlesDiffer > 0:
		parts = append(parts, fmt.Sprintf("%d of %d bundles differ from the reference build", t.bundlesDiffer, t.bundles))
	case t.bundles > 0:
		parts = append(parts, fmt.Sprintf("%d bundles match the reference build", t.bundles))
	}
	line := source + ", upstream " + shortCommit(commit)
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, "; ")
	}
	if t.missing+t.changed+t.extra+t.bundlesDiffer > 0 {
		line += "; see upstreamVerification"
	}
	return line
}

// shortCommit is a commit's first 12 hex digits, as git abbreviates it.
func shortCommit(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// artefactRoots are where an artefact may resolve to: the checkout, and the
// program's working directory (where a relative path given by the user
// starts). Both are real paths, symlinks resolved.
type artefactRoots struct {
	checkout, workDir string
}

// confine says what is wrong with where path resolves, or "". Symlinks are
// resolved first. A path the user gave as absolute is their explicit choice;
// anything else must stay inside the checkout, or for a relative path the
// user gave, inside the working directory: `../../../etc/passwd`, or a
// symlink in a checkout pointing out of it, is refused.
func (r artefactRoots) confine(path string, given bool) string {
	if given && filepath.IsAbs(path) {
		return ""
	}
	real, err := realPath(path)
	if err != nil {
		return fmt.Sprintf("cannot be resolved: %v", err)
	}
	if r.checkout != "" && within(r.checkout, real) {
		return ""
	}
	if given && r.workDir != "" && within(r.workDir, real) {
		return ""
	}
	if real != filepath.Clean(path) {
		path += " (" + real + ")"
	}
	if given {
		return fmt.Sprintf("%s resolves outside the checkout and the working directory: give an absolute path if that file is meant", path)
	}
	return fmt.Sprintf("%s resolves outside %s", path, r.checkout)
}

// confineTree is confine for a directory and every file under it (each
// symlink resolved), since the whole tree is read.
func (r artefactRoots) confineTree(dir string, given bool) string {
	if problem := r.confine(dir, given); problem != "" {
		return problem
	}
	if given && filepath.IsAbs(dir) {
		// The user's own directory: its files may not leave it.
		real, err := realPath(dir)
		if err != nil {
			return fmt.Sprintf("cannot be resolved: %v", err)
		}
		r = artefactRoots{checkout: real}
		given = false
	}
	var problem string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			problem = fmt.Sprintf("cannot be read: %v", err)
			return filepath.SkipAll
		}
		if p == dir || d.Type()&os.ModeSymlink == 0 {
			return nil
		}
		if problem = r.confine(p, given); problem != "" {
			problem = "holds " + problem
			return filepath.SkipAll
		}
		return nil
	})
	return problem
}

// realPath is path made absolute with every symlink resolved.
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// within reports whether path is root or under it (both real paths).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// verifyMigrations compares the migration files in dir with the digests
// recorded for the pin: a changed, missing or extra file is refused naming
// it, or only warned about with allowUnverified. Upstream's own applier
// never compares contents, so a file edited after it was applied would
// otherwise go unnoticed.
func verifyMigrations(c *upstream.Contract, plan *installPlan, path, dir string, allow bool) []error {
	recorded := c.Artefacts.Migrations
	found := map[string]string{}
	matches, _ := filepath.Glob(filepath.Join(dir, "*.sql"))
	for _, m := range matches {
		sum, _, err := artefacts.FileSHA256(m)
		if err != nil {
			return []error{fieldError(path, "reading %s: %v", m, err)}
		}
		found[filepath.Base(m)] = sum
	}
	var findings []string
	findingByFile := map[string]string{}
	finding := func(name, short, long string) {
		findings = append(findings, long)
		findingByFile[name] = short
	}
	plan.tally.compared, plan.tally.pinned = true, len(recorded)
	for _, name := range slices.Sorted(maps.Keys(recorded)) {
		switch sum, ok := found[name]; {
		case ok && sum == recorded[name]:
			plan.tally.matched++
		case !ok:
			plan.tally.missing++
			finding(name, "missing (the pinned commit has it)",
				fmt.Sprintf("migration %s of the pinned commit is missing from %s", name, dir))
		default:
			plan.tally.changed++
			finding(name, fmt.Sprintf("differs: sha256 %s, pinned %s", sum, recorded[name]),
				fmt.Sprintf("migration %s differs from the pinned commit's (sha256 %s, pinned %s)", filepath.Join(dir, name), sum, recorded[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(found)) {
		if _, ok := recorded[name]; !ok {
			plan.tally.extra++
			finding(name, "extra (not one of the pinned commit's)",
				fmt.Sprintf("migration %s is not one of the pinned commit's", filepath.Join(dir, name)))
		}
	}
	switch {
	case len(findings) == 0:
		plan.Verification["migrations"] = fmt.Sprintf("%d files match the digests recorded for %s", len(found), c.Upstream.Commit)
		return nil
	case allow:
		// One condition, one warning: the per-file findings go to the
		// upstreamVerification output and the debug log.
		plan.Verification["migrations"] = fmt.Sprintf("UNVERIFIED (upstream.allowUnverified): %d findings comparing the %d files in %s with the pin's %d (each under migrations.<file>)",
			len(findings), len(found), dir, len(recorded))
		for _, name := range slices.Sorted(maps.Keys(findingByFile)) {
			plan.Verification["migrations."+name] = findingByFile[name]
		}
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s: %d D1 migrations differ from the pinned commit %s's (missing, extra or changed), deployed anyway "+
			"(upstream.allowUnverified); the upstreamVerification output lists each", path, len(findings), c.Upstream.Commit))
		for _, f := range findings {
			plan.Details = append(plan.Details, path+": "+f)
		}
		return nil
	}
	errs := make([]error, len(findings))
	for i, f := range findings {
		errs[i] = fieldError(path, "%s: supply the migrations of %s, or set upstream.allowUnverified to deploy them anyway", f, c.Upstream.Commit)
	}
	return errs
}

// verifyBundle compares a supplied upstream bundle with the reference build
// of the pin. Bundlers differ by version, so a difference is a warning.
func verifyBundle(c *upstream.Contract, plan *installPlan, logical, path, script string, fromEmbedded bool) {
	key := "bundle." + logical
	if plan.pinnedBundles == nil {
		plan.pinnedBundles = map[string]bool{}
	}
	if fromEmbedded {
		plan.Verification[key] = "from the embedded artefacts, checked against their manifest"
		plan.tally.embeddedBundles++
		plan.pinnedBundles[logical] = true
		return
	}
	ref, ok := c.Artefacts.Bundles[logical]
	sum, _, err := artefacts.FileSHA256(script)
	if err == nil && ok {
		plan.tally.bundles++
	}
	switch {
	case err != nil || !ok:
		plan.Verification[key] = "given by " + path + ", not compared"
	case sum == ref.SHA256:
		plan.Verification[key] = "matches the reference build of " + c.Upstream.Commit
		plan.pinnedBundles[logical] = true
	default:
		plan.Verification[key] = fmt.Sprintf("DIFFERS from the reference build: sha256 %s, reference %s", sum, ref.SHA256)
		plan.differingBundles = append(plan.differingBundles, fmt.Sprintf("%s (%s)", logical, path))
		plan.tally.bundlesDiffer++
		plan.Details = append(plan.Details, fmt.Sprintf("%s: the bundle of worker %s (%s) has sha256 %s, the reference build of %s has %s: "+
			"it was built differently or from other sources (the release step's build is `%s`)", path, logical, script, sum, c.Upstream.Commit, ref.SHA256, c.BuildCommand(logical)))
	}
}

// warnDifferingBundles turns the bundles verifyBundle found different into
// one warning: one condition, however many workers; the digests are in the
// upstreamVerification output (bundle.<worker>) and the debug log.
func warnDifferingBundles(c *upstream.Contract, plan *installPlan) {
	if len(plan.differingBundles) == 0 {
		return
	}
	plan.Warnings = append(plan.Warnings, fmt.Sprintf("the bundles of %d workers differ from the reference build of %s (built differently or from other sources): %s; "+
		"the upstreamVerification output has the digests", len(plan.differingBundles), c.Upstream.Commit, strings.Join(plan.differingBundles, ", ")))
}

// sandboxSources are the checkout's files the sandbox child reads.
func sandboxSources(c *upstream.Contract, plan *installPlan) []string {
	if backend := plan.plannedBackend(); backend != nil {
		return backend.sources(c)
	}
	return nil
}

// checkWorkerBundles refuses, before any upload, what Cloudflare would
// refuse of each worker's bundle: a size over the plan's limit (10027), more
// vars and secrets than the plan allows, a bundle that does not parse as
// JavaScript (10021; the pin's own builds are known to parse), and a
// Durable Object binding whose class the bundle does not export (10061;
// 10070 for the migration that declares it), read structurally as
// Cloudflare does.
func checkWorkerBundles(plan *installPlan, s *spec) []error {
	lim := s.workerLimits()
	var errs []error
	for _, w := range plan.Workers {
		if n := len(w.Vars) + len(w.Secrets); n > lim.MaxVars {
			errs = append(errs, fieldError(workerField(s, w.Logical, "vars"), "worker %s would have %d vars and secrets; the Workers %s plan "+
				"allows %d per Worker (openinspect:workersPlan)", w.Logical, n, lim.Plan, lim.MaxVars))
		}
		if w.Script == "" {
			continue
		}
		bundle, err := os.ReadFile(w.Script)
		if err != nil {
			errs = append(errs, fmt.Errorf("worker %s: reading %s: %w", w.Logical, w.Script, err))
			continue
		}
		if problem := lim.SizeProblem(bundle); problem != "" {
			errs = append(errs, fieldError(w.ScriptField, "the bundle %s of worker %s: %s", w.Script, w.Logical, problem))
		}
		if plan.pinnedBundles[w.Logical] {
			esm.Vouch(bundle)
		} else if err := esm.CheckSyntax(bundle); err != nil {
			errs = append(errs, fieldError(w.ScriptField, "the bundle %s of worker %s is not valid JavaScript at %v; Cloudflare "+
				"refuses the upload (10021): rebuild the bundle", w.Script, w.Logical, err))
		}
		exported, known := esm.Graph(w.Script, func(name string) ([]byte, bool) { return bundle, name == w.Script })
		for _, b := range w.DurableObjects {
			if !known || exported[b.Target] {
				continue
			}
			path := w.ScriptField // the binding is upstream's: the bundle is at fault
			for i, entry := range s.Workers {
				if entry.Name != w.Logical || entry.Bindings == nil {
					continue
				}
				for j, lb := range entry.Bindings.DurableObjects {
					if lb.Binding == b.Binding {
						path = fmt.Sprintf("workers[%d].bindings.durableObjects[%d].target", i, j)
					}
				}
			}
			errs = append(errs, fieldError(path, "the bundle %s of worker %s does not export the Durable Object class %q of binding %s, "+
				"so Cloudflare would refuse it (10061): export the class, or fix the class name", w.Script, w.Logical, b.Target, b.Binding))
		}
	}
	return errs
}

// workerField is the spec field of a worker's entry ("workers[i].<field>"),
// or "upstream" for a worker the spec does not list.
func workerField(s *spec, logical, field string) string {
	for i, entry := range s.Workers {
		if entry.Name == logical {
			return fmt.Sprintf("workers[%d].%s", i, field)
		}
	}
	return "upstream"
}

// gitHead reads the commit a git work tree has checked out, without running
// git. isGit is false when dir is not a git work tree.
func gitHead(dir string) (head string, isGit bool, err error) {
	gitDir := filepath.Join(dir, ".git")
	info, err := os.Stat(gitDir)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	} else if err != nil {
		return "", true, err
	}
	if !info.IsDir() { // a worktree: ".git" holds "gitdir: <path>"
		raw, err := os.ReadFile(gitDir)
		if err != nil {
			return "", true, err
		}
		target := strings.TrimSpace(strings.TrimPrefix(string(raw), "gitdir:"))
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		gitDir = target
	}
	raw, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", true, err
	}
	ref, isRef := strings.CutPrefix(strings.TrimSpace(string(raw)), "ref: ")
	if !isRef {
		return ref, true, nil
	}
	// A symbolic ref: loose file first, then packed-refs (also in the common
	// dir of a worktree).
	dirs := []string{gitDir}
	if common, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(common))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		dirs = append(dirs, c)
	}
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(ref))); err == nil {
			return strings.TrimSpace(string(b)), true, nil
		}
		if f, err := os.Open(filepath.Join(d, "packed-refs")); err == nil {
			scanner := bufio.NewScanner(f)
			for scanner.Scan() {
				if hash, name, ok := strings.Cut(scanner.Text(), " "); ok && name == ref {
					f.Close()
					return hash, true, nil
				}
			}
			f.Close()
		}
	}
	return "", true, fmt.Errorf("%s points at %s, which has no commit yet", filepath.Join(gitDir, "HEAD"), ref)
}

// mainModuleProblem says why the file at path cannot be a Worker's main
// module, or "". The component uploads every bundle as an ES module, which
// Cloudflare runs only if it is text and exports its handlers (the default
// export, or a Durable Object class); anything else (a stray file, a
// symlink to /etc/passwd, a service-worker script) is refused here, before
// the upload, by the structural reader the Durable Object check uses.
func mainModuleProblem(path string) string {
	src, err := os.ReadFile(path)
	switch {
	case err != nil:
		return fmt.Sprintf("cannot be read: %v", err)
	case !utf8.Valid(src) || bytes.IndexByte(src, 0) >= 0:
		return "is not JavaScript text (it holds binary data): give the built ES module bundle"
	}
	ex := esm.Scan(string(src))
	if len(ex.Names) == 0 && len(ex.StarFrom) == 0 {
		return "is not an ES module: it has no top-level export (a Worker's main module exports its handlers, " +
			"`export default { fetch }`); give the built ES module bundle"
	}
	return ""
}
