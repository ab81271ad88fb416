package builder

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// SourceDigest hashes the files that decide what a deploy ships, so the
// provider redeploys exactly when one of them changed. patterns are relative
// to an Open-Inspect checkout root, slash-separated, as in the contract's
// sandbox.modal.changeDetection list: a file ("packages/modal-infra/deploy.py"),
// a directory tree ("packages/modal-infra/src/**") or a glob
// ("packages/*/uv.lock"). dir is the checkout root, or the app's own
// directory (<root>/packages/<app>) from which the root is found.
//
// The digest covers each file's path and content, in path order, so it is
// stable across file order, checkouts and mtimes. Bytecode caches are left
// out: importing the sources locally writes them. A pattern that matches
// nothing counts as such, so a file appearing changes the digest too.
func SourceDigest(dir string, patterns []string) (string, error) {
	root, err := CheckoutRoot(dir)
	if err != nil {
		return "", err
	}
	files := map[string]bool{}
	h := sha256.New()
	for _, p := range patterns {
		matched, err := expand(root, p)
		if err != nil {
			return "", fmt.Errorf("builder: digest of %s: %w", p, err)
		}
		if len(matched) == 0 {
			fmt.Fprintf(h, "absent %s\x00", p)
		}
		for _, f := range matched {
			files[f] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		sum, err := fileSum(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			return "", fmt.Errorf("builder: digest: %w", err)
		}
		fmt.Fprintf(h, "file %s %s\x00", name, sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CheckoutRoot finds the checkout root from itself or from an app directory
// <root>/packages/<app>.
func CheckoutRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("builder: %w", err)
	}
	if st, err := os.Stat(filepath.Join(abs, "packages")); err == nil && st.IsDir() {
		return abs, nil
	}
	if filepath.Base(filepath.Dir(abs)) == "packages" {
		return filepath.Dir(filepath.Dir(abs)), nil
	}
	return "", fmt.Errorf("builder: %s is neither an Open-Inspect checkout (no packages/) nor a package inside one", dir)
}

// skipped are files a digest ignores: caches the sources' own use writes.
func skipped(name string, isDir bool) bool {
	base := path.Base(name)
	if isDir {
		return base == "__pycache__" || base == ".pytest_cache" || base == ".mypy_cache" || base == ".ruff_cache"
	}
	return strings.HasSuffix(base, ".pyc") || base == ".DS_Store"
}

// walkKept calls visit with each regular file under base that skipped
// keeps, as its path and its slash path relative to relTo, in lexical
// order; with missingOK a base that does not exist has no files.
func walkKept(base, relTo string, missingOK bool, visit func(path, rel string) error) error {
	return filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if missingOK && errors.Is(err, fs.ErrNotExist) && p == base {
				return filepath.SkipDir
			}
			return err
		}
		rel, _ := filepath.Rel(relTo, p)
		rel = filepath.ToSlash(rel)
		if skipped(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			return visit(p, rel)
		}
		return nil
	})
}

// expand lists the files (slash paths relative to root) a pattern names.
func expand(root, pattern string) ([]string, error) {
	if strings.Contains("/"+filepath.ToSlash(pattern)+"/", "/../") {
		return nil, errors.New("pattern leaves the checkout")
	}
	pattern = strings.TrimPrefix(path.Clean("/"+pattern), "/")
	if tree, ok := strings.CutSuffix(pattern, "/**"); ok {
		var out []string
		err := walkKept(filepath.Join(root, filepath.FromSlash(tree)), root, true, func(_, rel string) error {
			out = append(out, rel)
			return nil
		})
		return out, err
	}
	matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.Mode().IsRegular() {
			rel, _ := filepath.Rel(root, m)
			out = append(out, filepath.ToSlash(rel))
		}
	}
	return out, nil
}

func fileSum(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// treeSum hashes every file under dir (bytecode caches excepted).
func treeSum(dir string) (string, error) {
	h := sha256.New()
	err := walkKept(dir, dir, false, func(p, rel string) error {
		sum, err := fileSum(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %s\x00", rel, sum)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

// localPackage is a dependency uv installs from the filesystem rather than
// from an index (uv.lock: source = { directory | path | editable = ... }).
type localPackage struct {
	Name     string
	Dir      string // absolute
	Editable bool
}

// localPackages reads uv.lock's local sources, relative to the app
// directory.
func localPackages(appDir string, lock []byte) ([]localPackage, error) {
	var parsed struct {
		Package []struct {
			Name   string            `toml:"name"`
			Source map[string]string `toml:"source"`
		} `toml:"package"`
	}
	if err := toml.Unmarshal(lock, &parsed); err != nil {
		return nil, fmt.Errorf("builder: parse uv.lock: %w", err)
	}
	var out []localPackage
	for _, p := range parsed.Package {
		for _, kind := range []string{"directory", "path", "editable"} {
			if rel, ok := p.Source[kind]; ok && rel != "." {
				out = append(out, localPackage{Name: p.Name, Dir: filepath.Join(appDir, filepath.FromSlash(rel)), Editable: kind == "editable"})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
