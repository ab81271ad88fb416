package pyfind

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/blang/semver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePython writes an executable that answers the version probe like a
// Python of that version, or fails like a pyenv shim for "" .
func fakePython(t *testing.T, dir, name, version string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("shell-script interpreters need a Unix shell")
	}
	script := "#!/bin/sh\necho " + version + "\n"
	if version == "" {
		script = "#!/bin/sh\necho \"pyenv: " + name + ": command not found\" >&2\nexit 127\n"
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

// isolate points every place Find looks at empty directories: nothing of
// the machine's own Pythons (its PATH, pyenv or home) can be found.
func isolate(t *testing.T) (bin string) {
	t.Helper()
	t.Setenv(EnvVar, "")
	t.Setenv("PYENV_ROOT", "")
	t.Setenv("HOME", t.TempDir())
	bin = t.TempDir()
	t.Setenv("PATH", bin)
	return bin
}

// pyenvLayout lays out a pyenv root with these versions installed, each
// versions/<v>/bin/python3 answering as that version.
func pyenvLayout(t *testing.T, root string, versions ...string) {
	t.Helper()
	for _, v := range versions {
		fakePython(t, filepath.Join(root, "versions", v, "bin"), "python3", v)
	}
}

func TestParseVersion(t *testing.T) {
	v, err := ParseVersion("3.12.1\n")
	require.NoError(t, err)
	assert.True(t, v.GE(Min))
	v, err = ParseVersion("3.11.7")
	require.NoError(t, err)
	assert.True(t, v.LT(Min))
	assert.True(t, semver.MustParse("3.13.0").GT(semver.MustParse("3.12.10")), "compared as versions, not strings")
	_, err = ParseVersion("Python 3.12")
	assert.Error(t, err)
}

func TestFindNamed(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	old := fakePython(t, dir, "old-python", "3.11.7")
	good := fakePython(t, dir, "good-python", "3.12.4")

	p, v, err := Find(good)
	require.NoError(t, err)
	assert.Equal(t, good, p)
	assert.Equal(t, "3.12.4", v.String())

	_, _, err = Find(old)
	require.Error(t, err)
	assert.Contains(t, err.Error(), ConfigKey)
	assert.Contains(t, err.Error(), "3.11.7")
	_, _, err = Find(filepath.Join(dir, "missing"))
	assert.ErrorContains(t, err, ConfigKey)

	t.Setenv(EnvVar, good)
	p, _, err = Find("")
	require.NoError(t, err)
	assert.Equal(t, good, p, "the environment variable comes after the explicit path")
	t.Setenv(EnvVar, old)
	_, _, err = Find("")
	assert.ErrorContains(t, err, EnvVar, "a named Python must do; no fallback hides it")
}

func TestFindOnPath(t *testing.T) {
	bin := isolate(t)
	// A broken shim is skipped, an old python3 refused, a good one taken in
	// order of preference.
	fakePython(t, bin, "python3.13", "")
	fakePython(t, bin, "python3", "3.11.7")
	_, _, err := Find("")
	require.Error(t, err)
	assert.Contains(t, err.Error(), ConfigKey)
	assert.Contains(t, err.Error(), "python3.12: not on PATH")
	assert.Contains(t, err.Error(), filepath.Join(bin, "python3")+": 3.11.7")
	fakePython(t, bin, "python3.12", "3.12.1")
	p, v, err := Find("")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(bin, "python3.12"), p)
	assert.Equal(t, "3.12.1", v.String())

	// PATH comes before pyenv: what the user put there is what they chose.
	root := t.TempDir()
	pyenvLayout(t, root, "3.13.0")
	t.Setenv("PYENV_ROOT", root)
	p, _, err = Find("")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(bin, "python3.12"), p)
}

// TestFindThroughPyenvRoot is the machine issue 20 describes: HOME is not
// where pyenv lives, PATH has only pyenv's shims (which fail for a version
// not selected) and an older python3; PYENV_ROOT names the pyenv holding
// 3.12 and 3.13.
func TestFindThroughPyenvRoot(t *testing.T) {
	bin := isolate(t)
	fakePython(t, bin, "python3.12", "")
	fakePython(t, bin, "python3.13", "")
	fakePython(t, bin, "python3", "3.11.7")
	root := t.TempDir()
	pyenvLayout(t, root, "3.11.7", "3.12.1", "3.12.9", "3.13.0", "3.14.2")
	// Not plain versions: left out even though they answer as new ones.
	fakePython(t, filepath.Join(root, "versions", "3.13.0t", "bin"), "python3", "3.13.0")
	fakePython(t, filepath.Join(root, "versions", "miniconda3-latest", "bin"), "python3", "3.13.1")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "versions", "3.12.5"), 0o755)) // no bin/python3: a broken install

	_, _, err := Find("")
	require.Error(t, err, "PYENV_ROOT unset and HOME empty: nothing found")
	assert.Contains(t, err.Error(), "no Python 3.12.0 or newer found")

	t.Setenv("PYENV_ROOT", root)
	p, v, err := Find("")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "versions", "3.12.9", "bin", "python3"), p, "3.12 first, its newest patch")
	assert.Equal(t, "3.12.9", v.String())
	assert.Equal(t, []string{
		filepath.Join(root, "versions", "3.12.9", "bin", "python3"),
		filepath.Join(root, "versions", "3.12.1", "bin", "python3"),
		filepath.Join(root, "versions", "3.13.0", "bin", "python3"),
		filepath.Join(root, "versions", "3.14.2", "bin", "python3"),
	}, pyenvPythons(root))

	// One that does not run is skipped for the next.
	require.NoError(t, os.WriteFile(filepath.Join(root, "versions", "3.12.9", "bin", "python3"), []byte("#!/bin/sh\nexit 1\n"), 0o755))
	p, _, err = Find("")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "versions", "3.12.1", "bin", "python3"), p)
}

// TestFindThroughPyenvCommand: PYENV_ROOT unset, but pyenv on PATH says
// where its root is.
func TestFindThroughPyenvCommand(t *testing.T) {
	bin := isolate(t)
	root := t.TempDir()
	pyenvLayout(t, root, "3.13.0")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "pyenv"),
		[]byte("#!/bin/sh\n[ \"$1\" = root ] && echo '"+root+"' && exit 0\nexit 1\n"), 0o755))
	p, v, err := Find("")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "versions", "3.13.0", "bin", "python3"), p)
	assert.Equal(t, "3.13.0", v.String())
}

// TestFindInHomePyenv: pyenv's default root, ~/.pyenv, with neither
// PYENV_ROOT nor pyenv on PATH.
func TestFindInHomePyenv(t *testing.T) {
	isolate(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	pyenvLayout(t, filepath.Join(home, ".pyenv"), "3.11.7")
	_, _, err := Find("")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pyenv "+filepath.Join(home, ".pyenv")+": no 3.12 or newer installed")
	pyenvLayout(t, filepath.Join(home, ".pyenv"), "3.12.3")
	p, _, err := Find("")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, ".pyenv", "versions", "3.12.3", "bin", "python3"), p)
}
