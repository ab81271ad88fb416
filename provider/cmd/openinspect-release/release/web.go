package release

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/provider/installation/webbuild"
	"github.com/openinspect/pulumi-openinspect/provider/internal/artefacts"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// The web UI's placeholder build (contract artefacts.web): upstream's own
// build:cloudflare at the pin, run with a placeholder per inlined
// NEXT_PUBLIC_* value, bundled by wrangler's dry-run deploy of the package's
// own config, and written under artefacts.WebBuildDir as webbuild reads it:
// the bundled worker, OpenNext's static assets (what wrangler deploys; the
// prerender cache is not), and the manifest. webbuild makes it right for
// each installation when deploying.

// webBundleDir is where wrangler writes the bundled worker, in the tree.
const webBundleDir = ".openinspect-web-bundle"

// buildWeb makes the placeholder build in tree, after the workers' builds
// (its install replaces node_modules). fonts is the directory of the
// installed font package.
func buildWeb(ctx context.Context, o Options, c *upstream.Contract, w *upstream.WebArtefact, tree, fonts string, log *os.File) error {
	stylesheets, stop, err := serveFonts(fonts, w.Fonts)
	if err != nil {
		return err
	}
	defer stop()
	mock := filepath.Join(filepath.Dir(tree), filepath.Base(tree)+"-google-fonts.cjs")
	if err := os.WriteFile(mock, stylesheets, 0o644); err != nil {
		return err
	}
	// One libuv worker thread: OpenNext inlines the server's manifests in the
	// order an unsorted glob finds them, which with Node's default four fs
	// threads differs from run to run (seen at the pin); with one, the walk
	// completes in the order it was asked for and two builds are identical.
	env := []string{"NEXT_TELEMETRY_DISABLED=1", "WRANGLER_SEND_METRICS=false", "UV_THREADPOOL_SIZE=1",
		"NEXT_FONT_GOOGLE_MOCKED_RESPONSES=" + mock}
	for _, name := range slices.Sorted(maps.Keys(w.Placeholders)) {
		env = append(env, name+"="+w.Placeholders[name])
	}
	pkg := filepath.Join(tree, filepath.FromSlash(w.Package))
	bundle := filepath.Join(tree, webBundleDir)
	steps := []struct {
		dir  string
		args []string
	}{
		{tree, strings.Fields(w.Install)},
		{tree, []string{"npm", "run", "build", "--workspace", c.Artefacts.SharedPackage}},
		{tree, strings.Fields(w.Build)},
		{pkg, append(strings.Fields(w.Bundle), "--outdir", bundle)},
	}
	for _, s := range steps {
		name := s.args[0]
		switch name {
		case "npm":
			name = o.NPM
		case "node":
			name = o.Node
		}
		fmt.Fprintf(log, "$ %s\n", strings.Join(s.args, " "))
		o.Log("%s: web: %s", filepath.Base(tree), strings.Join(s.args, " "))
		if err := runEnv(ctx, s.dir, log, env, name, s.args[1:]...); err != nil {
			return fmt.Errorf("the web build: %s (log: %s): %w", strings.Join(s.args, " "), log.Name(), err)
		}
	}
	m, err := readWebBuild(pkg, w)
	if err != nil {
		return err
	}
	built, err := time.Parse(time.RFC3339, c.Upstream.CommitDate)
	if err != nil {
		return fmt.Errorf("contract upstream.commitDate: %w", err)
	}
	return assembleWeb(tree, bundle, m, o.Commit, built)
}

// serveFonts serves the font package's files on a loopback port and returns
// the module next/font/google reads instead of asking Google: each recorded
// stylesheet URL mapped to one @font-face whose source is the served file
// (Next downloads it and gives it a content-hashed name, so the port never
// reaches the output).
func serveFonts(dir string, fonts upstream.WebFonts) ([]byte, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir))}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	base := "http://" + l.Addr().String() + "/"
	sheets := map[string]string{}
	for url, face := range fonts.Stylesheets {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(face.File))); err != nil {
			srv.Close()
			return nil, nil, fmt.Errorf("the web build's fonts: %s has no %s: %w", fonts.Package, face.File, err)
		}
		sheets[url] = fmt.Sprintf("@font-face {\n  font-family: '%s';\n  font-style: normal;\n  font-weight: %s;\n  font-display: swap;\n  src: url(%s%s) format('woff2');\n}\n",
			face.Family, face.Weight, base, face.File)
	}
	raw, err := json.MarshalIndent(sheets, "", "  ")
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	return append(append([]byte("module.exports = "), raw...), ";\n"...), func() { srv.Close() }, nil
}

// readWebBuild reads the BUILD_ID and the per-build keys Next generated.
func readWebBuild(pkg string, w *upstream.WebArtefact) (*webbuild.Manifest, error) {
	next := filepath.Join(pkg, ".next")
	id, err := os.ReadFile(filepath.Join(next, "BUILD_ID"))
	if err != nil {
		return nil, fmt.Errorf("the web build left no BUILD_ID: %w", err)
	}
	var prerender struct {
		Preview struct {
			ID            string `json:"previewModeId"`
			SigningKey    string `json:"previewModeSigningKey"`
			EncryptionKey string `json:"previewModeEncryptionKey"`
		} `json:"preview"`
	}
	if err := readJSON(filepath.Join(next, "prerender-manifest.json"), &prerender); err != nil {
		return nil, err
	}
	var actions struct {
		EncryptionKey string `json:"encryptionKey"`
	}
	if err := readJSON(filepath.Join(next, "server", "server-reference-manifest.json"), &actions); err != nil {
		return nil, err
	}
	m := &webbuild.Manifest{
		SchemaVersion: webbuild.SchemaVersion, Worker: "worker.js", Assets: "assets",
		BuildID: strings.TrimSpace(string(id)), Placeholders: w.Placeholders,
		BuildSecrets: webbuild.Secrets{
			ServerActionsEncryptionKey: actions.EncryptionKey,
			PreviewModeID:              prerender.Preview.ID,
			PreviewModeSigningKey:      prerender.Preview.SigningKey,
			PreviewModeEncryptionKey:   prerender.Preview.EncryptionKey,
		},
	}
	return m, m.Check()
}

func readJSON(file string, v any) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("the web build: %w", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("the web build: %s: %w", file, err)
	}
	return nil
}

// webBuildRoot stands in for the build tree's absolute path, which Next
// records in the server's configuration (outputFileTracingRoot, appDir):
// the bundle then reads as if built at this path wherever the release ran.
const webBuildRoot = "/background-agents"

// buildTimestamp is the build time OpenNext inlines for its cache's
// lastModified.
var buildTimestamp = regexp.MustCompile(`__BUILD_TIMESTAMP_MS__: ?[0-9]+`)

// assembleWeb replaces the package's .open-next with the placeholder build:
// the bundled worker, the static assets and the manifest, with what differs
// from build to build made fixed so that two builds are byte-identical: the
// build's random BUILD_ID and keys replaced everywhere (contents and paths)
// by stand-ins of the same shape derived from the commit, the tree's path by
// webBuildRoot, the build time by the commit's (as SOURCE_DATE_EPOCH does
// for other builds). The stand-ins are as public as the build's own were;
// webbuild replaces them with each installation's.
func assembleWeb(tree, bundle string, m *webbuild.Manifest, commit string, built time.Time) error {
	stand := webStandIns(commit)
	timestamp := fmt.Sprintf("__BUILD_TIMESTAMP_MS__: %d", built.UnixMilli())
	replace := map[string]string{
		tree:      webBuildRoot,
		m.BuildID: stand.BuildID,
		m.BuildSecrets.ServerActionsEncryptionKey: stand.BuildSecrets.ServerActionsEncryptionKey,
		m.BuildSecrets.PreviewModeID:              stand.BuildSecrets.PreviewModeID,
		m.BuildSecrets.PreviewModeSigningKey:      stand.BuildSecrets.PreviewModeSigningKey,
		m.BuildSecrets.PreviewModeEncryptionKey:   stand.BuildSecrets.PreviewModeEncryptionKey,
	}
	var pairs []string
	for from, to := range replace {
		pairs = append(pairs, from, to)
	}
	r := strings.NewReplacer(pairs...)

	dst := filepath.Join(tree, filepath.FromSlash(artefacts.WebBuildDir))
	opennext := dst + "-opennext"
	if err := os.RemoveAll(opennext); err != nil {
		return err
	}
	if err := os.Rename(dst, opennext); err != nil {
		return fmt.Errorf("the web build left no %s: %w", artefacts.WebBuildDir, err)
	}
	copyFile := func(from, to string) error {
		raw, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		fixed := buildTimestamp.ReplaceAllLiteralString(r.Replace(string(raw)), timestamp)
		return os.WriteFile(to, []byte(fixed), 0o644)
	}
	if err := copyFile(filepath.Join(bundle, "worker.js"), filepath.Join(dst, m.Worker)); err != nil {
		return fmt.Errorf("the web bundle: %w", err)
	}
	assets := filepath.Join(opennext, "assets")
	err := filepath.WalkDir(assets, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(assets, p)
		if err != nil {
			return err
		}
		return copyFile(p, filepath.Join(dst, m.Assets, filepath.FromSlash(r.Replace(filepath.ToSlash(rel)))))
	})
	if err != nil {
		return fmt.Errorf("the web assets: %w", err)
	}
	raw, err := json.MarshalIndent(stand.withPlaceholders(m), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, webbuild.ManifestFile), append(raw, '\n'), 0o644)
}

// standIns are the fixed BUILD_ID and keys a placeholder build carries.
type standIns struct {
	BuildID      string
	BuildSecrets webbuild.Secrets
}

// webStandIns derives them from the commit: the same for every build of it,
// shaped as Next makes them (a 21-character nanoid, base64 of 32 bytes, hex
// of 16 and 32 bytes).
func webStandIns(commit string) standIns {
	derive := func(name string) []byte {
		sum := sha256.Sum256([]byte("openinspect-release web " + name + " " + commit))
		return sum[:]
	}
	return standIns{
		BuildID: base64.RawURLEncoding.EncodeToString(derive("build-id"))[:21],
		BuildSecrets: webbuild.Secrets{
			ServerActionsEncryptionKey: base64.StdEncoding.EncodeToString(derive("server-actions-encryption-key")),
			PreviewModeID:              hex.EncodeToString(derive("preview-mode-id")[:16]),
			PreviewModeSigningKey:      hex.EncodeToString(derive("preview-mode-signing-key")),
			PreviewModeEncryptionKey:   hex.EncodeToString(derive("preview-mode-encryption-key")),
		},
	}
}

func (s standIns) withPlaceholders(m *webbuild.Manifest) webbuild.Manifest {
	out := *m
	out.BuildID, out.BuildSecrets = s.BuildID, s.BuildSecrets
	return out
}

// webDigest is the placeholder build's recorded digest: the SHA-256 of every
// file's path (relative to the build) with its content's SHA-256, in path
// order, as webbuild names a rendered build; plus the count and total size.
func webDigest(files []artefacts.File, tree string) (sum string, count int, size int64, err error) {
	var paths []string
	for _, f := range files {
		if f.Kind == artefacts.KindWeb {
			paths = append(paths, f.Path)
		}
	}
	if len(paths) == 0 {
		return "", 0, 0, nil
	}
	slices.Sort(paths)
	h := sha256.New()
	for _, p := range paths {
		fileSum, n, err := artefacts.FileSHA256(filepath.Join(tree, filepath.FromSlash(p)))
		if err != nil {
			return "", 0, 0, err
		}
		rel := strings.TrimPrefix(p, artefacts.WebBuildDir+"/")
		fmt.Fprintf(h, "%s\x00%s\n", rel, fileSum)
		size += n
	}
	return hex.EncodeToString(h.Sum(nil)), len(paths), size, nil
}

// sameWeb fails unless both trees hold the same web files, byte for byte,
// naming the first few that differ.
func sameWeb(files []artefacts.File, a, b string) error {
	diff, err := differing(files, artefacts.KindWeb, a, b)
	if err != nil || len(diff) == 0 {
		return err
	}
	var list strings.Builder
	for _, d := range diff[:min(len(diff), 10)] {
		fmt.Fprintf(&list, "\n  %s: sha256 %s and %s", strings.TrimPrefix(d.file.Path, artefacts.WebBuildDir+"/"), d.a, d.b)
	}
	return fmt.Errorf("the two web builds differ in %d files: the build is not reproducible:%s", len(diff), list.String())
}

// installFonts installs the font package from the npm registry into work
// and returns its directory.
func installFonts(ctx context.Context, o Options, fonts upstream.WebFonts, work string) (string, error) {
	prefix := filepath.Join(work, "fonts")
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		return "", err
	}
	o.Log("web: installing %s for next/font", fonts.Package)
	if err := run(ctx, prefix, nil, o.NPM, "install", "--no-save", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", prefix, fonts.Package); err != nil {
		return "", fmt.Errorf("the web build's fonts: %w", err)
	}
	name := fonts.Package
	if at := strings.LastIndex(name, "@"); at > 0 {
		name = name[:at]
	}
	return filepath.Join(prefix, "node_modules", filepath.FromSlash(name)), nil
}

// buildWebLogged runs buildWeb with its output appended to the tree's log.
func buildWebLogged(ctx context.Context, o Options, c *upstream.Contract, w *upstream.WebArtefact, tree, fonts string) error {
	log, err := os.OpenFile(tree+".log", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	began := time.Now()
	if err := buildWeb(ctx, o, c, w, tree, fonts, log); err != nil {
		return err
	}
	o.Log("%s: web built in %s", filepath.Base(tree), time.Since(began).Round(time.Second))
	return nil
}
