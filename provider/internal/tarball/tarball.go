// Package tarball unpacks a tar stream (a release's source archive, a git
// archive) into a directory, refusing any entry that would land outside it.
package tarball

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Extract writes r's directories and regular files (executable ones 0755,
// the rest 0644) under dir. With links, a symbolic link that stays inside
// the tree is made too; every other link is skipped, as nothing a build or
// a sync reads from outside the tree.
func Extract(r io.Reader, dir string, links bool) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		name := path.Clean(h.Name)
		if leaves(name) {
			return fmt.Errorf("the archive's entry %q leaves the tree", h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeFile(target, h, tr); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if !links || path.IsAbs(h.Linkname) || leaves(path.Join(path.Dir(name), h.Linkname)) {
				continue
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, target); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
		}
	}
}

// leaves reports whether a cleaned slash path points outside the tree.
func leaves(name string) bool {
	return path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../")
}

// writeFile writes the entry h's content from r to target, keeping its
// executable bit.
func writeFile(target string, h *tar.Header, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if h.Mode&0o111 != 0 {
		mode = 0o755
	}
	out, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
