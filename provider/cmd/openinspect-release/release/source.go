package release

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// origin names a source twice: what for this run's errors (the path as
// given, which the person running it can open), recorded for the manifest.
type origin struct{ what, recorded string }

// recordedSource is how the manifest names where upstream came from. The
// manifest is embedded in every plugin built from the set and its digest
// names the set, so it must not carry the build machine's layout: a local
// path is recorded relative to the working directory when it lies under it
// (goreleaser runs the step from the repository's root, so a source inside
// the clone reads the same on every machine), else by its last element; the
// commit and the digests, not the path, say what was built. A URL is kept,
// without the credentials a git URL may carry.
func recordedSource(source string) string {
	if strings.Contains(source, "://") {
		if u, err := url.Parse(source); err == nil {
			u.User = nil
			return u.String()
		}
		return source
	}
	if strings.HasPrefix(source, "git@") {
		return source // scp-like git syntax: a host and a path, no secret
	}
	abs, err := filepath.Abs(source)
	if err != nil {
		return filepath.Base(source)
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, abs); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.Base(abs)
}

// unpack puts the upstream tree at commit into dest: fetched and extracted
// (fetch.go), or copied from a plain directory, which names no commit (a
// test fixture, an unpacked tarball).
func unpack(ctx context.Context, source, commit, work, dest string, log io.Writer) (*fetched, error) {
	if info, err := os.Stat(source); err == nil && info.IsDir() && !isGitDir(ctx, source) {
		what := "directory " + recordedSource(source) + " (it names no commit; the recorded digests vouch for it)"
		return &fetched{provenance: what}, copyTree(source, dest)
	}
	f, err := fetch(ctx, source, commit, work, log)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, err
	}
	return f, extract(f.tarPath, dest)
}

// copyTree copies src into dest, leaving out what a build makes or a VCS
// keeps (node_modules, .git).
func copyTree(src, dest string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dest, rel)
		switch {
		case d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git"):
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, raw, info.Mode().Perm())
		}
		return nil
	})
}

// run runs a command in dir, its output into log (or the error when nil).
func run(ctx context.Context, dir string, log io.Writer, name string, args ...string) error {
	return runEnv(ctx, dir, log, nil, name, args...)
}

// runEnv is run with env added to the environment.
func runEnv(ctx context.Context, dir string, log io.Writer, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var buf bytes.Buffer
	if log == nil {
		log = &buf
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(append(os.Environ(), "CI=1", "npm_config_update_notifier=false", "npm_config_fund=false"), env...)
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(buf.String())
		if msg != "" {
			return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
		}
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}
