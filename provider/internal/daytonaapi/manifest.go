package daytonaapi

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
)

// Manifest is what a base snapshot is built from. The Dockerfile it renders
// to is, in order: FROM BaseImage; ENV (sorted by key, so later steps can use
// them); one apt-get install of AptPackages; RunCommands, one RUN each; one
// pip install of PipPackages; COPY of RuntimeDir to RuntimePath; WORKDIR;
// ENTRYPOINT. Daytona takes a built snapshot's entrypoint from the
// Dockerfile, not from the request, which is why it is rendered there.
type Manifest struct {
	BaseImage   string
	AptPackages []string
	RunCommands []string
	PipPackages []string
	Env         map[string]string
	// RuntimeDir is a local directory copied into the image at RuntimePath.
	// Every file in it is uploaded as the build context, so stage a clean
	// copy (no caches, no symlinks). Both or neither must be set.
	RuntimeDir  string
	RuntimePath string
	Workdir     string
	Entrypoint  []string
	// CPU (cores), Memory and Disk (GB) of sandboxes made from the
	// snapshot; 0 leaves Daytona's default.
	CPU, Memory, Disk int
}

// runtimePlaceholder stands in for RuntimeDir in the Dockerfile a digest
// covers: the local path differs between machines, the content does not.
const runtimePlaceholder = "/__runtime__"

// digestVersion changes when the digest's inputs change meaning.
const digestVersion = "openinspect-daytona-manifest-v1"

var (
	envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// safeWordRE is what may stand unquoted as one shell word.
	safeWordRE = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)
	// snapshotNameRE is Daytona's rule for snapshot names.
	snapshotNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.\-:]+(/[a-zA-Z0-9_.\-:]+)*(@sha256:[a-f0-9]{64})?$`)
)

// Digest is a SHA-256 over the rendered recipe, the resources and the
// runtime directory's files (relative paths and contents). It does not
// depend on where the directory is, on file order or on modification times,
// so it can name a snapshot: equal digests build equal images.
func (m Manifest) Digest() (string, error) {
	img, err := m.image(runtimePlaceholder)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\ncpu=%d memory=%d disk=%d\n", digestVersion, img.Dockerfile(), m.CPU, m.Memory, m.Disk)
	if m.RuntimeDir != "" {
		if err := hashTree(h, m.RuntimeDir); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashTree writes one line per directory and per file (with the file's own
// SHA-256), in path order. Anything else is refused: the SDK's uploader
// cannot archive symlinks or special files.
func hashTree(w io.Writer, root string) error {
	type entry struct {
		rel  string
		line string
	}
	var entries []entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			entries = append(entries, entry{rel, "d " + rel + "\n"})
		case d.Type().IsRegular():
			sum, err := fileSHA256(p)
			if err != nil {
				return err
			}
			entries = append(entries, entry{rel, "f " + rel + " " + sum + "\n"})
		default:
			return fmt.Errorf("%s is not a regular file or directory (symlinks cannot be uploaded as build context)", rel)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("daytona: manifest: runtime directory: %w", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	for _, e := range entries {
		if _, err := io.WriteString(w, e.line); err != nil {
			return err
		}
	}
	return nil
}

func fileSHA256(p string) (string, error) {
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

// image validates m and renders it with the SDK's image builder; localDir
// is what the COPY names (the real path when building, the placeholder for
// the digest). AddLocalDir uploads the directory under that same path.
func (m Manifest) image(localDir string) (*daytona.DockerImage, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	img := daytona.Base(m.BaseImage)
	for _, k := range slices.Sorted(maps.Keys(m.Env)) {
		img.Env(k, envValue(m.Env[k]))
	}
	img.AptGet(shellWords(m.AptPackages))
	for _, cmd := range m.RunCommands {
		img.Run(cmd)
	}
	img.PipInstall(shellWords(m.PipPackages))
	if m.RuntimeDir != "" {
		img.AddLocalDir(localDir, m.RuntimePath)
	}
	if m.Workdir != "" {
		img.Workdir(m.Workdir)
	}
	if len(m.Entrypoint) > 0 {
		img.Entrypoint(m.Entrypoint)
	}
	return img, nil
}

// validate refuses what would render a broken Dockerfile: the SDK writes
// every value into the file as is, one instruction per line.
func (m Manifest) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("daytona: manifest: "+format, args...)
	}
	oneLine := func(what, v string) error {
		if strings.ContainsAny(v, "\r\n") {
			return bad("%s %q spans lines", what, v)
		}
		return nil
	}
	noSpace := func(what, v string) error {
		if v == "" || strings.ContainsAny(v, " \t\r\n") {
			return bad("%s %q must be non-empty and contain no whitespace", what, v)
		}
		return nil
	}
	if err := noSpace("base image", m.BaseImage); err != nil {
		return err
	}
	for _, p := range slices.Concat(m.AptPackages, m.PipPackages) {
		if err := noSpace("package", p); err != nil {
			return err
		}
	}
	for _, c := range m.RunCommands {
		if strings.TrimSpace(c) == "" {
			return bad("empty run command")
		}
		if err := oneLine("run command", c); err != nil {
			return err
		}
	}
	for k, v := range m.Env {
		if !envKeyRE.MatchString(k) {
			return bad("environment variable name %q is not [A-Za-z_][A-Za-z0-9_]*", k)
		}
		if err := oneLine("value of "+k, v); err != nil {
			return err
		}
	}
	if (m.RuntimeDir == "") != (m.RuntimePath == "") {
		return bad("runtimeDir and runtimePath go together")
	}
	if m.RuntimeDir != "" {
		if err := noSpace("runtime path", m.RuntimePath); err != nil {
			return err
		}
		if !strings.HasPrefix(m.RuntimePath, "/") {
			return bad("runtime path %q must be absolute", m.RuntimePath)
		}
		st, err := os.Stat(m.RuntimeDir)
		if err != nil {
			return bad("runtime directory: %w", err)
		}
		if !st.IsDir() {
			return bad("runtime directory %s is not a directory", m.RuntimeDir)
		}
	}
	if m.Workdir != "" {
		if err := noSpace("workdir", m.Workdir); err != nil {
			return err
		}
	}
	if slices.Contains(m.Entrypoint, "") {
		return bad("empty entrypoint element")
	}
	if m.CPU < 0 || m.Memory < 0 || m.Disk < 0 {
		return bad("resources must not be negative")
	}
	return nil
}

// shellWords quotes what the shell would otherwise split or interpret (a
// pip specifier such as "httpx>=0.27" would be a redirection).
func shellWords(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		if safeWordRE.MatchString(w) {
			out[i] = w
		} else {
			out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return out
}

// envValue quotes an ENV value that Docker would otherwise split. "$"
// stays live so values may refer to earlier variables ($PATH).
func envValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\"'\\") {
		return v
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// validSnapshotName applies Daytona's name rule before any network call.
func validSnapshotName(name string) error {
	if !snapshotNameRE.MatchString(name) {
		return errors.New("invalid snapshot name: may contain letters, digits, dots, colons, dashes, underscores and single slashes")
	}
	return nil
}
