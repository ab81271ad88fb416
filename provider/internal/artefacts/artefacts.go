package artefacts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// The release step writes dist/; only dist/README.md is committed, so a build
// without the step embeds no artefacts.
//
//go:embed all:dist
var embedded embed.FS

const (
	// SchemaVersion is the version of manifest.json's format.
	SchemaVersion = 1
	// ManifestFile and ArchiveFile are the two files of a set.
	ManifestFile = "manifest.json"
	ArchiveFile  = "artefacts.tar.gz"
	// readme is the committed placeholder Clean leaves in place.
	readme = "README.md"
)

// Kinds of files in a set.
const (
	KindBundle    = "bundle"    // a worker's built ES module bundle
	KindMigration = "migration" // a D1 migration file
	KindSandbox   = "sandbox"   // a source file of the Modal app or the sandbox runtime
	KindWeb       = "web"       // a file of the web UI's placeholder OpenNext build (under WebBuildDir)
	// KindWebSource is a file of upstream's web source as Vercel builds it
	// (the web and shared packages, the root manifest and lock).
	KindWebSource = "web-source"
)

// WebBuildDir is where a checkout, and so a set, holds the web UI's
// placeholder OpenNext build with its manifest (openinspect-web.json).
const (
	WebBuildDir = "packages/web/.open-next"
)

// ErrNothingEmbedded is what Embedded returns for a plugin built without the
// release step.
var ErrNothingEmbedded = errors.New("this plugin embeds no upstream artefacts: it was built without the release step " +
	"(go run ./provider/cmd/openinspect-release, which goreleaser runs before every release build)")

// Manifest lists every file of a set with its digest.
type Manifest struct {
	SchemaVersion int `json:"schemaVersion"`
	// UpstreamCommit is the upstream commit the files were built from.
	UpstreamCommit string `json:"upstreamCommit"`
	// Source says where the release step fetched upstream from.
	Source string `json:"source"`
	// Verified is true when every migration and bundle matched the digests
	// recorded in third_party/background-agents/contract.json; a set built
	// from anything else (a test fixture) says false.
	Verified bool `json:"verified"`
	// Toolchain is what built the bundles (node, npm).
	Toolchain map[string]string `json:"toolchain,omitempty"`
	// Build is the command sequence the release step ran in each build.
	Build []string `json:"build,omitempty"`
	// Files are in path order.
	Files []File `json:"files"`
}

// File is one file of a set, at its path in an upstream checkout.
type File struct {
	Path       string `json:"path"`
	Kind       string `json:"kind"`
	Worker     string `json:"worker,omitempty"` // the logical worker of a bundle
	SHA256     string `json:"sha256"`
	Size       int64  `json:"size"`
	Executable bool   `json:"executable,omitempty"`
}

// Set is a manifest with its archive.
type Set struct {
	Manifest Manifest
	archive  []byte
	digest   string
}

var embeddedSet = sync.OnceValues(func() (*Set, error) { return Load(embedded, "dist") })

// Embedded is the set compiled into this binary, or ErrNothingEmbedded.
func Embedded() (*Set, error) { return embeddedSet() }

// Summary says in one line what this binary embeds, for `-artefacts`.
func Summary() string {
	set, err := Embedded()
	if err != nil {
		return err.Error()
	}
	return set.Summary()
}

var (
	sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)
	commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// Load reads a set from dir in fsys: ErrNothingEmbedded when it holds no
// manifest, an error when the manifest is malformed or the archive missing.
func Load(fsys fs.FS, dir string) (*Set, error) {
	raw, err := fs.ReadFile(fsys, path.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNothingEmbedded
	} else if err != nil {
		return nil, fmt.Errorf("artefacts: %w", err)
	}
	m, err := ParseManifest(raw)
	if err != nil {
		return nil, err
	}
	archive, err := fs.ReadFile(fsys, path.Join(dir, ArchiveFile))
	if err != nil {
		return nil, fmt.Errorf("artefacts: the manifest has no archive beside it: %w", err)
	}
	return &Set{Manifest: *m, archive: archive, digest: digest(raw)}, nil
}

// ParseManifest decodes and checks a manifest strictly.
func ParseManifest(raw []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("artefacts: %s: %w", ManifestFile, err)
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("artefacts: %s: %w", ManifestFile, err)
	}
	return &m, nil
}

func (m *Manifest) check() error {
	if m.SchemaVersion != SchemaVersion {
		return fmt.Errorf("schemaVersion %d; this plugin reads version %d", m.SchemaVersion, SchemaVersion)
	}
	if !commitPattern.MatchString(m.UpstreamCommit) {
		return fmt.Errorf("upstreamCommit %q is not a 40-digit commit", m.UpstreamCommit)
	}
	seen := map[string]bool{}
	for i, f := range m.Files {
		if err := checkPath(f.Path); err != nil {
			return fmt.Errorf("files[%d]: %w", i, err)
		}
		switch {
		case seen[f.Path]:
			return fmt.Errorf("files[%d]: %s is listed twice", i, f.Path)
		case f.Kind != KindBundle && f.Kind != KindMigration && f.Kind != KindSandbox && f.Kind != KindWeb && f.Kind != KindWebSource:
			return fmt.Errorf("files[%d]: kind %q is not bundle, migration, sandbox, web or web-source", i, f.Kind)
		case f.Kind == KindWeb && !strings.HasPrefix(f.Path, WebBuildDir+"/"):
			return fmt.Errorf("files[%d]: a web file lies under %s", i, WebBuildDir)
		case (f.Kind == KindBundle) != (f.Worker != ""):
			return fmt.Errorf("files[%d]: a bundle names its worker, and only a bundle does", i)
		case !sha256Pattern.MatchString(f.SHA256):
			return fmt.Errorf("files[%d]: sha256 %q is not 64 lower-case hex digits", i, f.SHA256)
		case f.Size < 0:
			return fmt.Errorf("files[%d]: negative size", i)
		}
		seen[f.Path] = true
	}
	return nil
}

// checkPath refuses anything but a clean relative slash path.
func checkPath(p string) error {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == "." || strings.HasPrefix(p, "../") || strings.Contains(p, "\\") {
		return fmt.Errorf("path %q is not a clean relative path", p)
	}
	return nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Digest is the SHA-256 of the manifest: it names the set.
func (s *Set) Digest() string { return s.digest }

// Summary says in one line what the set holds.
func (s *Set) Summary() string {
	counts := map[string]int{}
	var size int64
	for _, f := range s.Manifest.Files {
		counts[f.Kind]++
		size += f.Size
	}
	verified := "verified against the digests recorded in contract.json"
	if !s.Manifest.Verified {
		verified = "NOT verified against contract.json (a test or development build)"
	}
	web := ""
	if n := counts[KindWeb]; n > 0 {
		web = fmt.Sprintf(", %d web build files", n)
	}
	if n := counts[KindWebSource]; n > 0 {
		web += fmt.Sprintf(", %d web source files", n)
	}
	return fmt.Sprintf("upstream %s: %d bundles, %d migrations, %d sandbox source files%s (%d bytes, %d compressed), %s; manifest sha256 %s",
		s.Manifest.UpstreamCommit, counts[KindBundle], counts[KindMigration], counts[KindSandbox], web, size, len(s.archive), verified, s.digest)
}

// Files are the set's files of one kind, in path order.
func (s *Set) Files(kind string) []File {
	var out []File
	for _, f := range s.Manifest.Files {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

// Bundle is the bundle of a logical worker.
func (s *Set) Bundle(worker string) (File, bool) {
	for _, f := range s.Manifest.Files {
		if f.Kind == KindBundle && f.Worker == worker {
			return f, true
		}
	}
	return File{}, false
}

// Materialise makes the set available as a directory laid out like an
// upstream checkout, under cacheRoot, and returns it. The directory is named
// after the commit and the manifest digest, so it is the same path on every
// run; what is there is checked against the manifest each time, and written
// again (atomically, through a rename) when anything is missing or differs.
func (s *Set) Materialise(cacheRoot string) (string, error) {
	if cacheRoot == "" {
		return "", errors.New("artefacts: no cache directory to materialise the embedded artefacts in: set openinspect:cacheDir (or OPENINSPECT_CACHE_DIR)")
	}
	parent := filepath.Join(cacheRoot, "upstream-artefacts")
	dir := filepath.Join(parent, s.Manifest.UpstreamCommit[:12]+"-"+s.digest[:16])
	if Verify(dir, s.Manifest.Files) == nil {
		return dir, nil
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("artefacts: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-")
	if err != nil {
		return "", fmt.Errorf("artefacts: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := s.Extract(tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process got there first, or a damaged copy is in the way.
		if Verify(dir, s.Manifest.Files) == nil {
			return dir, nil
		}
		stale := filepath.Join(parent, ".stale-"+randomSuffix())
		if err := os.Rename(dir, stale); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("artefacts: replacing the damaged copy in %s: %w", dir, err)
		}
		defer os.RemoveAll(stale)
		if err := os.Rename(tmp, dir); err != nil {
			return "", fmt.Errorf("artefacts: %w", err)
		}
	}
	return dir, Verify(dir, s.Manifest.Files)
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Extract writes the archive's files into dir and checks them against the
// manifest: an archive that does not hold exactly the manifest's files, with
// their digests, is an error.
func (s *Set) Extract(dir string) error {
	zr, err := gzip.NewReader(bytes.NewReader(s.archive))
	if err != nil {
		return fmt.Errorf("artefacts: %s: %w", ArchiveFile, err)
	}
	want := map[string]File{}
	for _, f := range s.Manifest.Files {
		want[f.Path] = f
	}
	tr := tar.NewReader(zr)
	got := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("artefacts: %s: %w", ArchiveFile, err)
		}
		if h.Typeflag != tar.TypeReg {
			return fmt.Errorf("artefacts: %s: %s is not a regular file", ArchiveFile, h.Name)
		}
		f, ok := want[h.Name]
		if !ok || got[h.Name] {
			return fmt.Errorf("artefacts: %s holds %s, which the manifest does not list once", ArchiveFile, h.Name)
		}
		got[h.Name] = true
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("artefacts: %w", err)
		}
		mode := os.FileMode(0o644)
		if f.Executable {
			mode = 0o755
		}
		out, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
		if err != nil {
			return fmt.Errorf("artefacts: %w", err)
		}
		hash := sha256.New()
		n, err := io.Copy(io.MultiWriter(out, hash), tr)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("artefacts: writing %s: %w", target, err)
		}
		if sum := hex.EncodeToString(hash.Sum(nil)); sum != f.SHA256 || n != f.Size {
			return fmt.Errorf("artefacts: %s in the archive has sha256 %s (%d bytes); the manifest says %s (%d bytes)", f.Path, sum, n, f.SHA256, f.Size)
		}
	}
	for _, f := range s.Manifest.Files {
		if !got[f.Path] {
			return fmt.Errorf("artefacts: %s is in the manifest but not in %s", f.Path, ArchiveFile)
		}
	}
	return nil
}

// Verify checks that every file exists under dir with its digest.
func Verify(dir string, files []File) error {
	for _, f := range files {
		sum, size, err := FileSHA256(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return err
		}
		if sum != f.SHA256 || size != f.Size {
			return fmt.Errorf("%s has sha256 %s (%d bytes), expected %s (%d bytes)", f.Path, sum, size, f.SHA256, f.Size)
		}
	}
	return nil
}

// FileSHA256 is a file's SHA-256 (lower-case hex) and size.
func FileSHA256(name string) (string, int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("reading %s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// Write writes a set into out: the files of m (read from root, at their
// paths) into the archive, and the manifest with each file's digest, size
// and executable bit filled in. The archive is deterministic: files in path
// order, no times, owners or other modes, so the same files give the same
// bytes. Whatever else is in out, except the committed README.md, is removed
// first.
func Write(out string, m Manifest, root string) (*Manifest, error) {
	m.SchemaVersion = SchemaVersion
	m.Files = slices.Clone(m.Files)
	slices.SortFunc(m.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for i := range m.Files {
		f := &m.Files[i]
		src := filepath.Join(root, filepath.FromSlash(f.Path))
		info, err := os.Stat(src)
		if err != nil {
			return nil, fmt.Errorf("artefacts: %w", err)
		}
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("artefacts: %s is not a regular file", src)
		}
		content, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("artefacts: %w", err)
		}
		f.SHA256, f.Size, f.Executable = digest(content), int64(len(content)), info.Mode()&0o111 != 0
		mode := int64(0o644)
		if f.Executable {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Size: f.Size, Mode: mode, Format: tar.FormatPAX}); err != nil {
			return nil, fmt.Errorf("artefacts: %w", err)
		}
		if _, err := tw.Write(content); err != nil {
			return nil, fmt.Errorf("artefacts: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("artefacts: %w", err)
	}
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := Clean(out); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(out, ArchiveFile), buf.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("artefacts: %w", err)
	}
	if err := os.WriteFile(filepath.Join(out, ManifestFile), append(raw, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("artefacts: %w", err)
	}
	return &m, nil
}

// Clean empties out (creating it when absent), keeping the committed README.md.
func Clean(out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("artefacts: %w", err)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return fmt.Errorf("artefacts: %w", err)
	}
	for _, e := range entries {
		if e.Name() == readme {
			continue
		}
		if err := os.RemoveAll(filepath.Join(out, e.Name())); err != nil {
			return fmt.Errorf("artefacts: %w", err)
		}
	}
	return nil
}
