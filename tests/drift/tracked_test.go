package drift

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxTrackedSize is the largest file the repository keeps. The largest
// committed sources (the generated SDK types, a uv.lock fixture) are a few
// hundred kB; a file of megabytes is a build output or a data set that
// belongs elsewhere, and once committed it stays in every clone's history.
const maxTrackedSize = 5 << 20

// executableMagic are the leading bytes of the binaries a `go build` writes
// for the platforms Go targets: whichever GOOS built it, a binary is a build
// output (bin/ and the release's dist/ are where they go, and both are
// ignored).
var executableMagic = []struct {
	kind  string
	magic []byte
}{
	{"an ELF binary", []byte("\x7fELF")},
	{"a Mach-O binary", []byte{0xcf, 0xfa, 0xed, 0xfe}},
	{"a Mach-O binary", []byte{0xce, 0xfa, 0xed, 0xfe}},
	{"a PE (Windows) binary", []byte("MZ")},
}

// TestNoTrackedFileIsABuildOutput: no file git tracks is an executable
// binary or larger than 5 MB. A 32 MB build of the emulator was once
// committed at the root (a `go build` of its package from there writes it
// there); .gitignore now keeps the commands' names out, and this test
// catches whatever else slips by.
func TestNoTrackedFileIsABuildOutput(t *testing.T) {
	root := repoRoot(t)
	files := trackedFiles(t, root)
	require.Greater(t, len(files), 100, "git ls-files listed the repository")
	for _, name := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		info, err := os.Lstat(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree, not yet staged
		}
		require.NoError(t, err)
		if !info.Mode().IsRegular() {
			continue // a symlink's target is checked where it is tracked
		}
		head, err := readHead(path, 4)
		require.NoError(t, err)
		if problem := buildOutputProblem(head, info.Size()); problem != "" {
			t.Errorf("%s is %s: build outputs go to bin/ (ignored); `git rm --cached %s` and commit", name, problem, name)
		}
	}
}

// TestBuildOutputProblemFindsBinariesAndLargeFiles: the check names an
// ELF, a Mach-O and a PE header and a file over the limit, and passes a
// source file and a text file that starts like none of them.
func TestBuildOutputProblemFindsBinariesAndLargeFiles(t *testing.T) {
	assert.Equal(t, "an ELF binary", buildOutputProblem([]byte("\x7fELF"), 32<<20))
	assert.Equal(t, "an ELF binary", buildOutputProblem([]byte("\x7fELF"), 900))
	assert.Equal(t, "a Mach-O binary", buildOutputProblem([]byte{0xcf, 0xfa, 0xed, 0xfe}, 900))
	assert.Equal(t, "a PE (Windows) binary", buildOutputProblem([]byte("MZ\x90\x00"), 900))
	assert.Equal(t, "6291456 bytes (over 5 MB)", buildOutputProblem([]byte("pack"), 6<<20))
	assert.Empty(t, buildOutputProblem([]byte("pack"), maxTrackedSize))
	assert.Empty(t, buildOutputProblem([]byte("ELF "), 900), "text naming ELF is not a binary")
	assert.Empty(t, buildOutputProblem(nil, 0), "an empty file")
}

// buildOutputProblem says why a file with these leading bytes and this size
// does not belong in git, or "" when it does.
func buildOutputProblem(head []byte, size int64) string {
	for _, m := range executableMagic {
		if bytes.HasPrefix(head, m.magic) {
			return m.kind
		}
	}
	if size > maxTrackedSize {
		return fmt.Sprintf("%d bytes (over %d MB)", size, maxTrackedSize>>20)
	}
	return ""
}

// readHead reads up to n bytes from the start of a file.
func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	got, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:got], nil
}

// trackedFiles are the paths (slash-separated, relative to root) of the
// files git tracks that match the pathspecs (every file without one).
func trackedFiles(t *testing.T, root string, pathspecs ...string) []string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"ls-files", "-z", "--"}, pathspecs...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "git ls-files in %s (the test reads what git tracks, so it needs a git clone): %s", root, stderr.String())
	if len(out) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}
