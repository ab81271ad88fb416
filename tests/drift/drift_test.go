// Package drift checks that the committed schema.json and sdk/ tree are exactly
// what the generator produces from the provider's current code.
package drift

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/openinspect/pulumi-openinspect/provider/cmd/openinspect-gen/sdkgen"
)

const fixCommand = "`make schema sdks` (or `go run ./provider/cmd/openinspect-gen all`) from the repository root"

// TestCommittedFilesMatchGenerator regenerates the schema and SDKs into a
// temporary directory and compares them byte for byte with the repository.
func TestCommittedFilesMatchGenerator(t *testing.T) {
	root := repoRoot(t)
	generated := generate(t)

	diffs, err := diffTrees(generated, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) > 0 {
		t.Fatalf("schema.json or sdk/ is out of date with the provider (%d file(s)):\n  %s\n\nRun %s and commit the result.",
			len(diffs), strings.Join(diffs, "\n  "), fixCommand)
	}
}

// TestGeneratorIsDeterministic generates twice and expects identical trees.
func TestGeneratorIsDeterministic(t *testing.T) {
	first, second := generate(t), generate(t)
	diffs, err := diffTrees(first, second)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) > 0 {
		t.Fatalf("two generator runs differ:\n  %s", strings.Join(diffs, "\n  "))
	}
}

// TestDriftIsDetected proves the comparison catches every kind of drift, on a
// copy of freshly generated output, and ignores local build artifacts.
func TestDriftIsDetected(t *testing.T) {
	generated := generate(t)

	cases := []struct {
		name   string
		mutate func(t *testing.T, dir string)
		want   []string // expected diff lines; nil means no drift
	}{
		{
			name: "schema.json edited by hand",
			mutate: func(t *testing.T, dir string) {
				editFile(t, filepath.Join(dir, "schema.json"), func(b []byte) []byte {
					// Indent the second line one space deeper: harmless JSON, different bytes.
					return bytes.Replace(b, []byte("\n"), []byte("\n "), 1)
				})
			},
			want: []string{"differs: schema.json (first difference at line 2)"},
		},
		{
			name: "schema.json missing trailing newline",
			mutate: func(t *testing.T, dir string) {
				editFile(t, filepath.Join(dir, "schema.json"), func(b []byte) []byte {
					return bytes.TrimSuffix(b, []byte("\n"))
				})
			},
			want: []string{"differs: schema.json (first difference at end of file)"},
		},
		{
			name: "generated SDK file edited",
			mutate: func(t *testing.T, dir string) {
				editFile(t, filepath.Join(dir, "sdk", "nodejs", "index.ts"), func(b []byte) []byte {
					return append(b, "// edited\n"...)
				})
			},
			want: []string{"differs: sdk/nodejs/index.ts (first difference at end of file)"},
		},
		{
			name: "Go SDK go.mod edited",
			mutate: func(t *testing.T, dir string) {
				editFile(t, filepath.Join(dir, "sdk", "go", "go.mod"), func(b []byte) []byte {
					return append(b, "\nrequire github.com/cloudflare/cloudflare-go/v4 v4.6.0\n"...)
				})
			},
			want: []string{"differs: sdk/go/go.mod (first difference at end of file)"},
		},
		{
			name: "generated SDK file missing",
			mutate: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "sdk", "go", "openinspect", "doc.go")); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"missing: sdk/go/openinspect/doc.go"},
		},
		{
			name: "stale SDK file left behind",
			mutate: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "sdk", "python", "stale.py"), "x = 1\n")
			},
			want: []string{"stale: sdk/python/stale.py"},
		},
		{
			name: "local build artifacts are ignored",
			mutate: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "sdk", "nodejs", "node_modules", "x", "index.js"), "")
				writeFile(t, filepath.Join(dir, "sdk", "nodejs", "bin", "index.js"), "")
				writeFile(t, filepath.Join(dir, "sdk", "python", "build", "lib", "x.py"), "")
				writeFile(t, filepath.Join(dir, "sdk", "python", "x.egg-info", "PKG-INFO"), "")
				writeFile(t, filepath.Join(dir, "sdk", "python", "__pycache__", "x.cpython-312.pyc"), "")
			},
			want: nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			committed := t.TempDir()
			copyTree(t, generated, committed)
			tc.mutate(t, committed)
			diffs, err := diffTrees(generated, committed)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(diffs, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("diffs = %q, want %q", diffs, tc.want)
			}
		})
	}
}

// generate runs the generator exactly as `openinspect-gen all` does, into a
// fresh temporary directory laid out like the repository root.
func generate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	goMod := filepath.Join(repoRoot(t), "go.mod")
	if err := sdkgen.All(context.Background(), filepath.Join(dir, "schema.json"), goMod, filepath.Join(dir, "sdk")); err != nil {
		t.Fatalf("generating: %v", err)
	}
	return dir
}

// diffTrees compares the generated schema.json and sdk/ under want with those
// under have, and returns one sorted line per differing file.
func diffTrees(want, have string) ([]string, error) {
	wantFiles, err := readGenerated(want)
	if err != nil {
		return nil, err
	}
	haveFiles, err := readGenerated(have)
	if err != nil {
		return nil, err
	}
	var diffs []string
	for name, w := range wantFiles {
		h, ok := haveFiles[name]
		switch {
		case !ok:
			diffs = append(diffs, "missing: "+name)
		case !bytes.Equal(w, h):
			diffs = append(diffs, fmt.Sprintf("differs: %s (first difference at %s)", name, firstDifference(w, h)))
		}
	}
	for name := range haveFiles {
		if _, ok := wantFiles[name]; !ok {
			diffs = append(diffs, "stale: "+name)
		}
	}
	sort.Strings(diffs)
	return diffs, nil
}

// readGenerated reads schema.json and every file under sdk/ in root, keyed by
// slash-separated path relative to root. Build artifacts are skipped.
func readGenerated(root string) (map[string][]byte, error) {
	files := map[string][]byte{}
	schema, err := os.ReadFile(filepath.Join(root, "schema.json"))
	switch {
	case err == nil:
		files["schema.json"] = schema
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	sdkDir := filepath.Join(root, "sdk")
	err = filepath.WalkDir(sdkDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == sdkDir {
				return fs.SkipAll
			}
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if isArtifact(rel, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[rel] = data
		return nil
	})
	return files, err
}

// isArtifact reports whether rel (slash-separated, relative to the repository
// root) is a local build or install product rather than generated source.
// The list mirrors the .gitignore files the generators write into each SDK.
func isArtifact(rel string, isDir bool) bool {
	for _, prefix := range []string{"sdk/nodejs/bin", "sdk/python/build", "sdk/python/dist"} {
		if rel == prefix || strings.HasPrefix(rel, prefix+"/") {
			return true
		}
	}
	for part := range strings.SplitSeq(rel, "/") {
		switch part {
		case "node_modules", "__pycache__", ".mypy_cache", ".venv", "venv":
			return true
		}
		if strings.HasSuffix(part, ".egg-info") {
			return true
		}
	}
	return !isDir && path.Ext(rel) == ".pyc"
}

// firstDifference describes where a and b first differ.
func firstDifference(a, b []byte) string {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return "end of file"
	}
	return fmt.Sprintf("line %d", bytes.Count(a[:i], []byte("\n"))+1)
}

// repoRoot finds the module root: the nearest ancestor holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func editFile(t *testing.T, name string, edit func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	edited := edit(data)
	if bytes.Equal(edited, data) {
		t.Fatalf("edit of %s changed nothing", name)
	}
	if err := os.WriteFile(name, edited, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
