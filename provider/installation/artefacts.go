package installation

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/common"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// Stage 4: the artefacts each planned part needs (worker bundles, the
// migrations, the sandbox sources), found and verified.

// resolveArtifacts finds each worker's bundle and the migrations directory,
// verifies what it can, and says how to build what is missing.
func resolveArtifacts(c *upstream.Contract, plan *installPlan, s *spec) []error {
	var errs problems
	bad := errs.add
	up := s.Upstream
	checkout := common.Deref(up.Checkout, "")
	var roots artefactRoots
	if checkout != "" {
		if info, err := os.Stat(checkout); err != nil || !info.IsDir() {
			bad("upstream.checkout", "%q is not a directory", checkout)
			checkout = ""
		} else if roots.checkout, err = realPath(checkout); err != nil {
			bad("upstream.checkout", "resolving %q: %v", checkout, err)
			checkout = ""
		} else if head, isGit, err := gitHead(checkout); err != nil {
			bad("upstream.checkout", "reading its git HEAD: %v", err)
		} else if isGit && head != c.Upstream.Commit {
			bad("upstream.checkout", "HEAD is %s but this provider is pinned to %s: `git checkout %s` there and rebuild the bundles", head, c.Upstream.Commit, c.Upstream.Commit)
		}
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
			path, script, given = "upstream.checkout", filepath.Join(checkout, filepath.FromSlash(cw.Bundle)), false
		}
		switch {
		case script == "" && cw != nil:
			bad("upstream", "no bundle for worker %s: set upstream.checkout to an upstream checkout at %s with `%s` run in %s, or upstream.workerBundles.%s",
				w.Logical, c.Upstream.Commit, cw.Build, cw.Package, w.Logical)
		case script == "":
			bad(fmt.Sprintf("workers[%d].script", specs[w.Logical]), "required: %s is not an upstream worker, so its bundle must be given", w.Logical)
		default:
			if info, err := os.Stat(script); err != nil || info.IsDir() {
				how := ""
				if cw != nil {
					how = fmt.Sprintf(": build it with `%s` in %s", cw.Build, cw.Package)
				}
				bad(path, "the bundle %s of worker %s is missing%s", script, w.Logical, how)
			} else if problem := roots.confine(script, given); problem != "" {
				bad(path, "the bundle of worker %s %s", w.Logical, problem)
			} else if problem := cloudflare.ScriptFileProblem(script); problem != "" {
				bad(path, "the bundle of worker %s: %s", w.Logical, problem)
			}
			w.Script = script
		}
	}
	dir := common.Deref(up.MigrationsDir, "")
	path, given := "upstream.migrationsDir", true
	if dir == "" && checkout != "" {
		dir, path, given = filepath.Join(checkout, filepath.FromSlash(c.D1Migrations.Directory)), "upstream.checkout", false
	}
	switch {
	case dir == "":
		bad("upstream", "no D1 migrations: set upstream.checkout to an upstream checkout at %s, or upstream.migrationsDir", c.Upstream.Commit)
	default:
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			bad(path, "the D1 migrations directory %s is missing", dir)
		} else if problem := roots.confineTree(dir, given); problem != "" {
			bad(path, "the D1 migrations directory %s", problem)
		} else {
			// The D1Migrations child's own rules, on the files it would read.
			for _, problem := range cloudflare.MigrationsDirectoryProblems(dir) {
				bad(path, "in %s: %s", dir, problem)
			}
		}
		plan.MigrationsDir = dir
	}
	if checkout != "" && (plan.Modal != nil || plan.Snapshot != nil) {
		plan.SandboxSource = checkout
		for _, rel := range sandboxSources(c, plan) {
			source := filepath.Join(checkout, filepath.FromSlash(rel))
			if _, err := os.Stat(source); err != nil {
				bad("upstream.checkout", "%s is missing from %s: the %s sandbox side is deployed from it (or set sandbox.manage to false)",
					rel, checkout, plan.SandboxProvider)
			} else if problem := roots.confine(source, false); problem != "" {
				bad("upstream.checkout", "the sandbox source %s %s", rel, problem)
			}
		}
	}
	return errs
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

// sandboxSources are the checkout's files the sandbox children read.
func sandboxSources(c *upstream.Contract, plan *installPlan) []string {
	var out []string
	if plan.Modal != nil {
		out = append(out, c.Sandbox.Modal.Package+"/deploy.py", c.Sandbox.Modal.Package+"/uv.lock")
	}
	if plan.Snapshot != nil {
		out = append(out, c.Sandbox.Daytona.Snapshot.RuntimeSource)
	}
	return out
}

// checkDurableObjectClasses refuses a Durable Object binding whose class the
// worker's bundle does not contain: the upload would declare the class in a
// migration and fail. An ES module keeps its exported names, so an exported
// class always appears in the bundle by name.
func checkDurableObjectClasses(plan *installPlan, s *spec) []error {
	var errs []error
	for _, w := range plan.Workers {
		if len(w.DurableObjects) == 0 || w.Script == "" {
			continue
		}
		bundle, err := os.ReadFile(w.Script)
		if err != nil {
			errs = append(errs, fmt.Errorf("worker %s: reading %s: %w", w.Logical, w.Script, err))
			continue
		}
		for _, b := range w.DurableObjects {
			if regexp.MustCompile(`\b` + regexp.QuoteMeta(b.Target) + `\b`).Match(bundle) {
				continue
			}
			path := "upstream"
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
			errs = append(errs, fieldError(path, "the bundle %s of worker %s has no Durable Object class %q for binding %s: export the class, or fix the class name",
				w.Script, w.Logical, b.Target, b.Binding))
		}
	}
	return errs
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
