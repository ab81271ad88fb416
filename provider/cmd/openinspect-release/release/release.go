// Package release is the release step behind openinspect-release: it builds
// the upstream artefacts the plugin embeds from the pinned commit, twice,
// and writes them with their manifest through internal/artefacts.
package release

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/provider/internal/artefacts"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	vercelweb "github.com/openinspect/pulumi-openinspect/provider/vercel"
)

// Options configure one run.
type Options struct {
	// Source is a git URL, a tarball URL, a local git directory (work tree,
	// bare clone or mirror), a local tarball or a plain directory.
	Source string
	// Commit is the upstream commit to build: the pin for a release.
	Commit string
	// Out is the directory the plugin embeds.
	Out string
	// Work holds the source and the two build trees; a temporary directory
	// when empty, removed afterwards unless Keep.
	Work string
	Keep bool
	// Record writes this build's digests into the contract.json at this path
	// instead of checking them against the recorded ones.
	Record string
	// Unverified builds a set that is not checked against the recorded
	// digests; its manifest says so (test fixtures, development builds).
	Unverified bool
	// Prebuilt takes the bundles the source already holds instead of
	// building them (a fixture tree with no npm project); needs Unverified.
	Prebuilt bool
	// NoWeb skips the web UI's placeholder build (contract artefacts.web),
	// for a quicker set of the workers alone; the set then has no web.
	NoWeb bool
	// NPM and Node are the commands to build with.
	NPM, Node string
	// Log receives progress lines.
	Log func(format string, args ...any)
}

// Result is what a run produced.
type Result struct {
	Manifest *artefacts.Manifest
	// Builds are the durations of the two builds (one with Prebuilt).
	Builds []time.Duration
	// Fetch is how long getting the source took.
	Fetch time.Duration
}

// Run builds and writes the set.
func Run(ctx context.Context, o Options) (*Result, error) {
	c, err := upstream.Load()
	if err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	if o.Prebuilt && !o.Unverified {
		return nil, fmt.Errorf("-prebuilt takes bundles as they are, so it needs -unverified")
	}
	if o.Record != "" && o.Unverified {
		return nil, fmt.Errorf("-record and -unverified contradict each other")
	}
	if o.Record != "" && o.NoWeb && c.Artefacts.Web != nil {
		return nil, fmt.Errorf("-record needs the web build the contract records; drop -no-web")
	}
	work := o.Work
	if work == "" {
		if work, err = os.MkdirTemp("", "openinspect-release-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	if !o.Keep {
		defer os.RemoveAll(work)
	}
	res := &Result{}
	start := time.Now()
	src := filepath.Join(work, "source")
	if err := os.RemoveAll(src); err != nil {
		return nil, err
	}
	o.Log("fetching %s at %s", o.Source, o.Commit)
	got, err := unpack(ctx, o.Source, o.Commit, work, src, logWriter{o.Log})
	if err != nil {
		return nil, err
	}
	res.Fetch = time.Since(start)
	if !got.proven && o.Record != "" {
		return nil, fmt.Errorf("recording digests needs a source that proves its commit (a git directory or URL, or a tarball from git archive); %s", got.provenance)
	}

	m := artefacts.Manifest{UpstreamCommit: o.Commit, Source: got.provenance, Verified: !o.Unverified}
	trees := []string{src}
	if !o.Prebuilt {
		m.Toolchain = map[string]string{"node": version(ctx, o.Node), "npm": version(ctx, o.NPM)}
		steps := c.BuildSteps()
		if hasScript(filepath.Join(src, filepath.FromSlash(sandbox.VercelManifest)), sandbox.VercelBuildScript) {
			steps = append(steps, sandbox.VercelBuildStep)
		}
		for _, s := range steps {
			m.Build = append(m.Build, s.String())
		}
		web := c.Artefacts.Web
		if o.NoWeb {
			web = nil
		}
		var fonts string
		if web != nil {
			m.Build = append(m.Build, web.Install, "npm run build --workspace "+c.Artefacts.SharedPackage, web.Build, web.Bundle)
			if fonts, err = installFonts(ctx, o, web.Fonts, work); err != nil {
				return nil, err
			}
		}
		trees = nil
		for i := range 2 {
			tree := filepath.Join(work, fmt.Sprintf("build%d", i+1))
			if err := os.RemoveAll(tree); err != nil {
				return nil, err
			}
			if err := copyTree(src, tree); err != nil {
				return nil, err
			}
			began := time.Now()
			if err := build(ctx, o, steps, tree); err != nil {
				return nil, err
			}
			if web != nil {
				if err := buildWebLogged(ctx, o, c, web, tree, fonts); err != nil {
					return nil, err
				}
			}
			res.Builds = append(res.Builds, time.Since(began))
			o.Log("build %d: %s", i+1, time.Since(began).Round(time.Second))
			trees = append(trees, tree)
		}
	}

	files, err := collect(c, trees[0])
	if err != nil {
		return nil, err
	}
	if len(trees) == 2 {
		if err := sameBundles(files, trees[0], trees[1]); err != nil {
			return nil, err
		}
		if err := sameWeb(files, trees[0], trees[1]); err != nil {
			return nil, err
		}
	}
	facts, err := digests(files, trees[0], m.Toolchain, c.Artefacts)
	if err != nil {
		return nil, err
	}
	switch {
	case o.Record != "":
		if err := record(o.Record, facts); err != nil {
			return nil, err
		}
		o.Log("recorded %d migrations, %d bundles and the web build in %s", len(facts.Migrations), len(facts.Bundles), o.Record)
	case !o.Unverified:
		if err := compare(c.Artefacts, facts); err != nil {
			return nil, err
		}
	}
	written, err := artefacts.Write(o.Out, artefacts.Manifest{
		UpstreamCommit: m.UpstreamCommit, Source: m.Source, Verified: m.Verified,
		Toolchain: m.Toolchain, Build: m.Build, Files: files,
	}, trees[0])
	if err != nil {
		return nil, err
	}
	res.Manifest = written
	return res, nil
}

// logWriter passes fetch's progress lines to Options.Log.
type logWriter struct{ log func(string, ...any) }

func (w logWriter) Write(p []byte) (int, error) {
	w.log("%s", strings.TrimSpace(string(p)))
	return len(p), nil
}

func version(ctx context.Context, tool string) string {
	var out bytes.Buffer
	if err := run(ctx, "", &out, tool, "--version"); err != nil {
		return "unknown"
	}
	return strings.TrimPrefix(strings.TrimSpace(out.String()), "v")
}

// build runs the steps in tree, logging into tree's sibling .log file.
func build(ctx context.Context, o Options, steps []upstream.BuildStep, tree string) error {
	log, err := os.Create(tree + ".log")
	if err != nil {
		return err
	}
	defer log.Close()
	for _, s := range steps {
		name := s[0]
		if name == "npm" {
			name = o.NPM
		}
		fmt.Fprintf(log, "$ %s\n", s)
		o.Log("%s: %s", filepath.Base(tree), s)
		if err := run(ctx, tree, log, name, s[1:]...); err != nil {
			return fmt.Errorf("%s (log: %s): %w", s, tree+".log", err)
		}
	}
	return nil
}

// collect lists what the set holds: each worker's bundle, every migration
// file, and the files of the Modal app, the Daytona, E2B, OpenComputer and
// Vercel builders and the sandbox runtime (tests left out), plus the single files the Modal change
// detection names, and the web UI's placeholder build when the tree has one.
func collect(c *upstream.Contract, tree string) ([]artefacts.File, error) {
	var files []artefacts.File
	for _, w := range c.Workers {
		if _, err := os.Stat(filepath.Join(tree, filepath.FromSlash(w.Bundle))); err != nil {
			return nil, fmt.Errorf("worker %s: the build left no bundle %s: %w", w.Logical, w.Bundle, err)
		}
		files = append(files, artefacts.File{Path: w.Bundle, Kind: artefacts.KindBundle, Worker: w.Logical})
	}
	migrations, err := fs.Glob(os.DirFS(tree), c.D1Migrations.Directory+"/*.sql")
	if err != nil || len(migrations) == 0 {
		return nil, fmt.Errorf("no migration files in %s", c.D1Migrations.Directory)
	}
	for _, p := range migrations {
		files = append(files, artefacts.File{Path: p, Kind: artefacts.KindMigration})
	}
	runtimePkg := strings.Join(strings.SplitN(c.Sandbox.Daytona.Snapshot.RuntimeSource, "/", 3)[:2], "/")
	required := map[string]bool{c.Sandbox.Modal.Package: true, runtimePkg: true}
	// packages/e2b-infra and packages/opencomputer-infra hold upstream's E2B
	// and OpenComputer builders, which E2bTemplate and OpenComputerSnapshot run.
	for _, dir := range []string{c.Sandbox.Modal.Package, runtimePkg, c.Sandbox.Daytona.Package, "packages/e2b-infra", "packages/opencomputer-infra"} {
		found, err := sandboxFiles(tree, dir)
		if err != nil {
			return nil, err
		}
		if len(found) == 0 && required[dir] {
			return nil, fmt.Errorf("%s is missing: the sandbox resources deploy from it", dir)
		}
		for _, p := range found {
			files = append(files, artefacts.File{Path: p, Kind: artefacts.KindSandbox})
		}
	}
	// The Vercel builder lives in the control plane package, beside code
	// the set must not carry: only what VercelSnapshot reads.
	vercel, err := sandboxFiles(tree, sandbox.VercelProviderDir)
	if err != nil {
		return nil, err
	}
	for _, p := range sandbox.VercelReleaseFiles {
		if info, err := os.Stat(filepath.Join(tree, filepath.FromSlash(p))); err == nil && info.Mode().IsRegular() {
			vercel = append(vercel, p)
		}
	}
	for _, p := range vercel {
		files = append(files, artefacts.File{Path: p, Kind: artefacts.KindSandbox})
	}
	for _, p := range c.Sandbox.Modal.ChangeDetection {
		if strings.ContainsAny(p, "*{") || slices.ContainsFunc(files, func(f artefacts.File) bool { return f.Path == p }) {
			continue
		}
		if info, err := os.Stat(filepath.Join(tree, filepath.FromSlash(p))); err == nil && info.Mode().IsRegular() {
			files = append(files, artefacts.File{Path: p, Kind: artefacts.KindSandbox})
		}
	}
	// Upstream's web source, which Vercel builds (web.platform vercel),
	// when the tree holds the web package: what a VercelDeployment uploads.
	if _, err := os.Stat(filepath.Join(tree, "packages", "web", "package.json")); err == nil {
		src, err := vercelweb.SourceFiles(tree, vercelweb.DefaultPaths)
		if err != nil {
			return nil, fmt.Errorf("the web source: %w", err)
		}
		for _, p := range src {
			if !slices.ContainsFunc(files, func(f artefacts.File) bool { return f.Path == p }) {
				files = append(files, artefacts.File{Path: p, Kind: artefacts.KindWebSource})
			}
		}
	}
	// The web UI's placeholder build, when the tree holds one (a fixture
	// tree, or a release whose web build ran): every file of it.
	if _, err := os.Stat(filepath.Join(tree, filepath.FromSlash(artefacts.WebBuildDir), "openinspect-web.json")); err == nil {
		err := filepath.WalkDir(filepath.Join(tree, filepath.FromSlash(artefacts.WebBuildDir)), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			rel, err := filepath.Rel(tree, p)
			if err == nil {
				files = append(files, artefacts.File{Path: filepath.ToSlash(rel), Kind: artefacts.KindWeb})
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("the web build: %w", err)
		}
	}
	return files, nil
}

func sandboxFiles(tree, dir string) ([]string, error) {
	root := filepath.Join(tree, filepath.FromSlash(dir))
	if _, err := os.Stat(root); err != nil {
		return nil, nil
	}
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && slices.Contains([]string{"tests", "__pycache__", "node_modules", ".venv"}, d.Name()):
			return filepath.SkipDir
		case d.Type().IsRegular():
			rel, err := filepath.Rel(tree, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}

// sameBundles fails unless both builds produced byte-identical bundles.
func sameBundles(files []artefacts.File, a, b string) error {
	diff, err := differing(files, artefacts.KindBundle, a, b)
	if err != nil || len(diff) == 0 {
		return err
	}
	d := diff[0]
	return fmt.Errorf("worker %s: the two builds differ (%s: sha256 %s and %s): the build is not reproducible", d.file.Worker, d.file.Path, d.a, d.b)
}

// difference is one file whose bytes differ between two trees.
type difference struct {
	file artefacts.File
	a, b string // its SHA-256 in each
}

// differing lists the files of kind that differ between trees a and b.
func differing(files []artefacts.File, kind string, a, b string) ([]difference, error) {
	var out []difference
	for _, f := range files {
		if f.Kind != kind {
			continue
		}
		sa, _, err := artefacts.FileSHA256(filepath.Join(a, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, err
		}
		sb, _, err := artefacts.FileSHA256(filepath.Join(b, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, fmt.Errorf("the two builds differ: %s is only in the first: %w", f.Path, err)
		}
		if sa != sb {
			out = append(out, difference{f, sa, sb})
		}
	}
	return out, nil
}

// digests are the facts of this build, shaped like the contract's section.
func digests(files []artefacts.File, tree string, toolchain map[string]string, recorded upstream.Artefacts) (upstream.Artefacts, error) {
	out := recorded
	if recorded.Web != nil {
		web := *recorded.Web
		var err error
		if web.SHA256, web.Files, web.Bytes, err = webDigest(files, tree); err != nil {
			return out, err
		}
		out.Web = &web
	}
	out.Toolchain = toolchain
	out.Migrations = map[string]string{}
	out.Bundles = map[string]upstream.BundleDigest{}
	for _, f := range files {
		sum, size, err := artefacts.FileSHA256(filepath.Join(tree, filepath.FromSlash(f.Path)))
		if err != nil {
			return out, err
		}
		switch f.Kind {
		case artefacts.KindMigration:
			out.Migrations[path.Base(f.Path)] = sum
		case artefacts.KindBundle:
			out.Bundles[f.Worker] = upstream.BundleDigest{SHA256: sum, Bytes: size}
		}
	}
	return out, nil
}

// compare fails unless this build matches the recorded facts exactly.
func compare(want, got upstream.Artefacts) error {
	var problems []string
	for _, name := range sortedKeys(want.Migrations, got.Migrations) {
		w, g := want.Migrations[name], got.Migrations[name]
		switch {
		case w == "":
			problems = append(problems, fmt.Sprintf("migration %s is not recorded", name))
		case g == "":
			problems = append(problems, fmt.Sprintf("migration %s is missing", name))
		case w != g:
			problems = append(problems, fmt.Sprintf("migration %s has sha256 %s, recorded %s", name, g, w))
		}
	}
	for _, worker := range sortedKeys(want.Bundles, got.Bundles) {
		if w, g := want.Bundles[worker], got.Bundles[worker]; w != g {
			problems = append(problems, fmt.Sprintf("bundle of %s has sha256 %s (%d bytes), recorded %s (%d bytes)", worker, g.SHA256, g.Bytes, w.SHA256, w.Bytes))
		}
	}
	// A set built without its web (-no-web) has no web digest to compare.
	if want.Web != nil && got.Web != nil && got.Web.SHA256 != "" && got.Web.SHA256 != want.Web.SHA256 {
		problems = append(problems, fmt.Sprintf("the web build has digest %s (%d files, %d bytes), recorded %s (%d files, %d bytes)",
			got.Web.SHA256, got.Web.Files, got.Web.Bytes, want.Web.SHA256, want.Web.Files, want.Web.Bytes))
	}
	if len(problems) > 0 {
		return fmt.Errorf("this build does not match the digests recorded in contract.json (built with node %s, npm %s; recorded with node %s, npm %s):\n  %s",
			got.Toolchain["node"], got.Toolchain["npm"], want.Toolchain["node"], want.Toolchain["npm"], strings.Join(problems, "\n  "))
	}
	return nil
}

func sortedKeys[V any](maps ...map[string]V) []string {
	var keys []string
	for _, m := range maps {
		for k := range m {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// hasScript reports whether the package.json at path has the named script.
func hasScript(path, script string) bool {
	raw, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	return json.Unmarshal(raw, &pkg) == nil && pkg.Scripts[script] != ""
}
