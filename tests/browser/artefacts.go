package browser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinspect/pulumi-openinspect/internal/reporoot"
)

// ArtefactsEnv names the directory tests keep their artefacts in (CI points
// it at what it uploads); unset, it is the repository's .artefacts/, which
// git ignores. Either way it outlives the test, unlike t.TempDir.
const ArtefactsEnv = "OPENINSPECT_TEST_ARTEFACTS"

// ArtefactDir is the artefacts directory, made if missing.
func ArtefactDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(ArtefactsEnv)
	if dir == "" {
		dir = filepath.Join(reporoot.Dir(), ".artefacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("making the artefacts directory (%s): %v", ArtefactsEnv, err)
	}
	return dir
}

// ArtefactPath is where the running test keeps the artefact called name:
// <artefacts>/<test name>/<name>, the test's name with its subtests' slashes
// made dashes so every test has one flat directory.
func ArtefactPath(t testing.TB, name string) string {
	t.Helper()
	test := strings.Map(func(r rune) rune {
		switch r {
		case '/', '\\', ':', ' ':
			return '-'
		}
		return r
	}, t.Name())
	return filepath.Join(ArtefactDir(t), test, name)
}
