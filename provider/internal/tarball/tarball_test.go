package tarball

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type entry struct {
	name, link, body string
	flag             byte
	mode             int64
}

func archive(t *testing.T, entries ...entry) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.flag, Mode: e.mode, Size: int64(len(e.body))}
		require.NoError(t, tw.WriteHeader(h))
		_, err := tw.Write([]byte(e.body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return &buf
}

func TestExtractWritesFilesModesAndInTreeLinks(t *testing.T) {
	entries := []entry{
		{name: "pkg/", flag: tar.TypeDir, mode: 0o755},
		{name: "pkg/run.sh", body: "#!/bin/sh\n", flag: tar.TypeReg, mode: 0o755},
		{name: "pkg/a.txt", body: "a", flag: tar.TypeReg, mode: 0o600},
		{name: "pkg/inside", link: "a.txt", flag: tar.TypeSymlink},
		{name: "pkg/outside", link: "../../etc/passwd", flag: tar.TypeSymlink},
	}
	for _, links := range []bool{true, false} {
		dir := t.TempDir()
		require.NoError(t, Extract(archive(t, entries...), dir, links))
		st, err := os.Stat(filepath.Join(dir, "pkg", "run.sh"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o755), st.Mode().Perm())
		st, err = os.Stat(filepath.Join(dir, "pkg", "a.txt"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
		_, err = os.Lstat(filepath.Join(dir, "pkg", "inside"))
		assert.Equal(t, links, err == nil, "an in-tree link is made only with links")
		_, err = os.Lstat(filepath.Join(dir, "pkg", "outside"))
		assert.True(t, os.IsNotExist(err), "a link out of the tree is never made")
	}
}

func TestExtractRefusesAnEntryOutsideTheTree(t *testing.T) {
	for _, name := range []string{"../x", "/abs", "a/../../x"} {
		err := Extract(archive(t, entry{name: name, body: "x", flag: tar.TypeReg, mode: 0o644}), t.TempDir(), true)
		require.ErrorContains(t, err, "leaves the tree", name)
	}
}
