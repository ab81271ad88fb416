package cloudflare

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"mime"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	p "github.com/pulumi/pulumi-go-provider"
	"lukechampine.com/blake3"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// WorkerAssets are a worker's static assets (Workers Assets): files served
// at the worker's URL ahead of (or, with runWorkerFirst, behind) its code,
// and optionally reachable from the code through a binding.
type WorkerAssets struct {
	Directory            string            `pulumi:"directory,optional"`
	Files                map[string]string `pulumi:"files,optional"`
	Binding              string            `pulumi:"binding,optional"`
	HTMLHandling         string            `pulumi:"htmlHandling,optional"`
	NotFoundHandling     string            `pulumi:"notFoundHandling,optional"`
	RunWorkerFirst       *bool             `pulumi:"runWorkerFirst,optional"`
	RunWorkerFirstRoutes []string          `pulumi:"runWorkerFirstRoutes,optional"`
}

// Cloudflare's assets limits (https://developers.cloudflare.com/workers/static-assets/#limits
// and wrangler's checks): a file is at most 25 MiB; the file count is the
// plan's (openinspect:workerAssetsFileLimit).
const maxAssetFileBytes = 25 << 20

var (
	htmlHandlings     = []string{"auto-trailing-slash", "force-trailing-slash", "drop-trailing-slash", "none"}
	notFoundHandlings = []string{"none", "404-page", "single-page-application"}
)

// Files read as configuration, never uploaded.
const (
	assetsIgnoreFile = ".assetsignore"
	headersFile      = "_headers"
	redirectsFile    = "_redirects"
	// pagesWorkerFile is a Pages worker; uploading it as an asset would
	// publish server code, so it needs an explicit .assetsignore decision.
	pagesWorkerFile = "_worker.js"
)

// assetFile is one asset: where it is read from and its manifest entry.
type assetFile struct {
	local string
	cfapi.AssetFile
}

// assetSet is a worker's assets as read from disk.
type assetSet struct {
	files              map[string]assetFile // by URL path
	headers, redirects string
	hasIgnoreFile      bool
}

// manifest is the set in the API's shape.
func (s *assetSet) manifest() cfapi.AssetManifest {
	out := make(cfapi.AssetManifest, len(s.files))
	for path, f := range s.files {
		out[path] = f.AssetFile
	}
	return out
}

// hashes maps each URL path to its content key, as recorded in state.
func (s *assetSet) hashes() map[string]string {
	out := make(map[string]string, len(s.files))
	for path, f := range s.files {
		out[path] = f.Hash
	}
	return out
}

// Open and ContentType make the set the upload's source.
func (s *assetSet) Open(urlPath string) (io.ReadCloser, error) {
	f, ok := s.files[urlPath]
	if !ok {
		return nil, fmt.Errorf("%s is not in the manifest", urlPath)
	}
	return os.Open(f.local)
}

func (s *assetSet) ContentType(urlPath string) string { return assetContentType(urlPath) }

// config is metadata.assets.config.
func (a *WorkerAssets) config(s *assetSet) *cfapi.AssetsConfig {
	c := &cfapi.AssetsConfig{HTMLHandling: a.HTMLHandling, NotFoundHandling: a.NotFoundHandling,
		Headers: s.headers, Redirects: s.redirects}
	switch {
	case len(a.RunWorkerFirstRoutes) > 0:
		c.RunWorkerFirst = a.RunWorkerFirstRoutes
	case a.RunWorkerFirst != nil:
		c.RunWorkerFirst = *a.RunWorkerFirst
	}
	return c
}

// read collects the assets from disk. Problems name the input field.
func (a *WorkerAssets) read() (*assetSet, error) {
	if a.Directory != "" {
		return readAssetDirectory(a.Directory)
	}
	s := &assetSet{files: map[string]assetFile{}}
	for _, key := range slices.Sorted(maps.Keys(a.Files)) {
		urlPath := assetURLPath(key)
		local := a.Files[key]
		switch urlPath {
		case "/" + headersFile, "/" + redirectsFile:
			text, err := os.ReadFile(local)
			if err != nil {
				return nil, fieldError(fmt.Sprintf("assets.files[%q]", key), fmt.Errorf("reading %s: %w", local, err))
			}
			if urlPath == "/"+headersFile {
				s.headers = string(text)
			} else {
				s.redirects = string(text)
			}
			continue
		}
		f, err := hashAssetFile(local)
		if err != nil {
			return nil, fieldError(fmt.Sprintf("assets.files[%q]", key), err)
		}
		s.files[urlPath] = f
	}
	return s, nil
}

// assetURLPath is a files-map key as a URL path: leading "/", forward slashes.
func assetURLPath(key string) string {
	return "/" + strings.TrimLeft(filepath.ToSlash(key), "/")
}

// fieldProblem is an error that names the input field it is about.
type fieldProblem struct {
	field string
	err   error
}

func (e *fieldProblem) Error() string { return e.err.Error() }
func (e *fieldProblem) Unwrap() error { return e.err }

func fieldError(field string, err error) error { return &fieldProblem{field: field, err: err} }

// problemField is the field an error from read names, or def.
func problemField(err error, def string) string {
	if fp, ok := errors.AsType[*fieldProblem](err); ok {
		return fp.field
	}
	return def
}

// readAssetDirectory walks dir: regular files only (symlinks and
// directories skipped), .assetsignore applied, _headers and _redirects
// taken as configuration.
func readAssetDirectory(dir string) (*assetSet, error) {
	field := "assets.directory"
	info, err := os.Stat(dir)
	switch {
	case err != nil:
		return nil, fieldError(field, fmt.Errorf("the assets directory %s cannot be read: %w", dir, err))
	case !info.IsDir():
		return nil, fieldError(field, fmt.Errorf("%s is not a directory", dir))
	}
	s := &assetSet{files: map[string]assetFile{}}
	ignore := newIgnoreMatcher([]string{"/" + assetsIgnoreFile, "/" + headersFile, "/" + redirectsFile})
	if text, err := os.ReadFile(filepath.Join(dir, assetsIgnoreFile)); err == nil {
		s.hasIgnoreFile = true
		ignore.add(strings.Split(string(text), "\n"))
	}
	for name, target := range map[string]*string{headersFile: &s.headers, redirectsFile: &s.redirects} {
		text, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case err == nil:
			*target = string(text)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fieldError(field, fmt.Errorf("reading %s: %w", filepath.Join(dir, name), err))
		}
	}
	err = filepath.WalkDir(dir, func(local string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, local)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if ignore.ignored(rel, true) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || ignore.ignored(rel, false) {
			return nil // symlinks, sockets and ignored files are not assets
		}
		f, err := hashAssetFile(local)
		if err != nil {
			return err
		}
		s.files["/"+rel] = f
		return nil
	})
	if err != nil {
		return nil, fieldError(field, fmt.Errorf("reading the assets directory %s: %w", dir, err))
	}
	return s, nil
}

// hashCache remembers content keys by file identity (path, size, mtime),
// so preview, diff and update hash an unchanged directory once per process.
var hashCache sync.Map // string → string

// hashAssetFile computes a file's content key the way wrangler does, so
// files deployed by either tool are recognised by the other: the first 32
// hex digits of BLAKE3 over the base64 of the content followed by the
// extension without its dot. The file is streamed, never held whole.
func hashAssetFile(local string) (assetFile, error) {
	info, err := os.Stat(local)
	if err != nil {
		return assetFile{}, fmt.Errorf("reading asset %s: %w", local, err)
	}
	if !info.Mode().IsRegular() {
		return assetFile{}, fmt.Errorf("asset %s is not a regular file", local)
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", local, info.Size(), info.ModTime().UnixNano())
	if h, ok := hashCache.Load(key); ok {
		return assetFile{local: local, AssetFile: cfapi.AssetFile{Hash: h.(string), Size: info.Size()}}, nil
	}
	f, err := os.Open(local)
	if err != nil {
		return assetFile{}, fmt.Errorf("reading asset %s: %w", local, err)
	}
	defer f.Close()
	h := blake3.New(32, nil)
	enc := base64.NewEncoder(base64.StdEncoding, h)
	if _, err := io.Copy(enc, f); err != nil {
		return assetFile{}, fmt.Errorf("reading asset %s: %w", local, err)
	}
	_ = enc.Close() // a hash never fails to write
	_, _ = h.Write([]byte(strings.TrimPrefix(nodeExt(local), ".")))
	sum := hex.EncodeToString(h.Sum(nil))[:32]
	hashCache.Store(key, sum)
	return assetFile{local: local, AssetFile: cfapi.AssetFile{Hash: sum, Size: info.Size()}}, nil
}

// nodeExt is a file's extension as Node's path.extname gives it: leading
// dots belong to the name (".htaccess" has none), else from the last dot.
func nodeExt(name string) string {
	base := strings.TrimLeft(filepath.Base(name), ".")
	if i := strings.LastIndexByte(base, '.'); i >= 0 {
		return base[i:]
	}
	return ""
}

// assetContentTypes are the common web types, fixed here so an upload does
// not depend on the machine's mime.types.
var assetContentTypes = map[string]string{
	".html": "text/html", ".htm": "text/html", ".css": "text/css", ".js": "text/javascript", ".mjs": "text/javascript",
	".json": "application/json", ".map": "application/json", ".txt": "text/plain", ".xml": "application/xml",
	".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".avif": "image/avif", ".ico": "image/vnd.microsoft.icon", ".woff": "font/woff",
	".woff2": "font/woff2", ".ttf": "font/ttf", ".otf": "font/otf", ".wasm": "application/wasm", ".pdf": "application/pdf",
	".webmanifest": "application/manifest+json", ".md": "text/markdown", ".csv": "text/csv", ".mp4": "video/mp4",
	".webm": "video/webm", ".mp3": "audio/mpeg", ".rsc": "text/x-component",
}

// assetContentType is the type an asset is served with ("" when unknown);
// text types carry charset=utf-8 as Cloudflare's own uploader sends them.
func assetContentType(name string) string {
	ext := strings.ToLower(nodeExt(name))
	t, ok := assetContentTypes[ext]
	if !ok && ext != "" {
		t = mime.TypeByExtension(ext)
	}
	if strings.HasPrefix(t, "text/") && !strings.Contains(t, "charset") {
		t += "; charset=utf-8"
	}
	return t
}

// --- .assetsignore ------------------------------------------------------------

// ignoreMatcher applies gitignore-style patterns to paths relative to the
// assets directory: the last matching pattern wins, "!" re-includes, a
// trailing "/" matches directories only, a pattern with an inner or
// leading "/" is anchored to the directory, "**" crosses directories.
type ignoreMatcher struct {
	rules []ignoreRule
}

type ignoreRule struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

func newIgnoreMatcher(patterns []string) *ignoreMatcher {
	m := &ignoreMatcher{}
	m.add(patterns)
	return m
}

func (m *ignoreMatcher) add(patterns []string) {
	for _, line := range patterns {
		line = strings.TrimRight(line, "\r")
		if !strings.HasSuffix(line, `\ `) {
			line = strings.TrimRight(line, " \t")
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := ignoreRule{}
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, line[1:]
		}
		line = strings.TrimPrefix(line, `\`)
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimSuffix(line, "/")
		}
		anchored := strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		if line == "" {
			continue
		}
		expr := globRegexp(line)
		if !anchored {
			expr = `(?:.*/)?` + expr
		}
		re, err := regexp.Compile(`^` + expr + `$`)
		if err != nil {
			continue // a pattern gitignore could not use either
		}
		r.re = re
		m.rules = append(m.rules, r)
	}
}

// ignored reports whether rel (a slash path) is excluded, itself or
// through an excluded parent directory.
func (m *ignoreMatcher) ignored(rel string, isDir bool) bool {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		if m.match(strings.Join(parts[:i], "/"), true) {
			return true
		}
	}
	return m.match(rel, isDir)
}

func (m *ignoreMatcher) match(rel string, isDir bool) bool {
	ignored := false
	for _, r := range m.rules {
		if r.dirOnly && !isDir {
			continue
		}
		if r.re.MatchString(rel) {
			ignored = !r.negate
		}
	}
	return ignored
}

// globRegexp translates one gitignore glob to a regular expression.
func globRegexp(glob string) string {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch {
		case strings.HasPrefix(glob[i:], "**/"):
			b.WriteString(`(?:.*/)?`)
			i += 2
		case strings.HasPrefix(glob[i:], "/**") && i+3 == len(glob):
			b.WriteString(`/.*`)
			i += 2
		case strings.HasPrefix(glob[i:], "**"):
			b.WriteString(`.*`)
			i++
		case c == '*':
			b.WriteString(`[^/]*`)
		case c == '?':
			b.WriteString(`[^/]`)
		case c == '[':
			if j := strings.IndexByte(glob[i+1:], ']'); j >= 0 {
				class := glob[i+1 : i+1+j]
				if strings.HasPrefix(class, "!") {
					class = "^" + class[1:]
				}
				b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
				i += j + 1
				continue
			}
			b.WriteString(`\[`)
		case c == '\\' && i+1 < len(glob):
			i++
			b.WriteString(regexp.QuoteMeta(string(glob[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// --- checks -----------------------------------------------------------------

// assetsOnly is a worker with assets and no code of its own.
func (a WorkerArgs) assetsOnly() bool {
	return a.Assets != nil && a.Content == "" && a.Script == nil && len(a.Modules) == 0
}

// assetFailures checks the assets inputs and, when the files can be read,
// Cloudflare's limits (file size, file count) naming the file, before any
// remote call. A field a preview does not know yet (unknown, by path: the
// rendered web directory depends on generated secrets) is not checked, and
// neither are the files when their directory or list is unknown; the other
// fields still are.
func (a WorkerArgs) assetFailures(lim config.WorkerLimits, unknown func(string) bool) []p.CheckFailure {
	if a.Assets == nil {
		return nil
	}
	var failures []p.CheckFailure
	fail := knownOnly(unknown, func(field, format string, args ...any) {
		failures = append(failures, p.CheckFailure{Property: field, Reason: fmt.Sprintf(format, args...)})
	})
	as := a.Assets
	filesUnknown := unknown("assets.directory") || unknown("assets.files")
	switch {
	case as.Directory != "" && len(as.Files) > 0:
		fail("assets.files", "set either assets.directory or assets.files, not both")
	case as.Directory == "" && len(as.Files) == 0 && !filesUnknown:
		fail("assets.directory", "the assets have no files: set assets.directory or assets.files")
	}
	for _, key := range slices.Sorted(maps.Keys(as.Files)) {
		if problem := assetKeyProblem(key); problem != "" {
			fail(family.KeyPath("assets.files", key), "%s", problem)
		}
	}
	if as.HTMLHandling != "" && !slices.Contains(htmlHandlings, as.HTMLHandling) {
		fail("assets.htmlHandling", "%q is not an HTML handling: use one of %s", as.HTMLHandling, strings.Join(htmlHandlings, ", "))
	}
	if as.NotFoundHandling != "" && !slices.Contains(notFoundHandlings, as.NotFoundHandling) {
		fail("assets.notFoundHandling", "%q is not a not-found handling: use one of %s", as.NotFoundHandling, strings.Join(notFoundHandlings, ", "))
	}
	if as.RunWorkerFirst != nil && len(as.RunWorkerFirstRoutes) > 0 {
		fail("assets.runWorkerFirstRoutes", "set either assets.runWorkerFirst or assets.runWorkerFirstRoutes, not both")
	}
	positive := false
	for i, r := range as.RunWorkerFirstRoutes {
		rule := strings.TrimPrefix(r, "!")
		if !strings.HasPrefix(rule, "/") {
			fail(fmt.Sprintf("assets.runWorkerFirstRoutes[%d]", i), "%q must start with / or !/", r)
		}
		positive = positive || !strings.HasPrefix(r, "!")
	}
	if len(as.RunWorkerFirstRoutes) > 0 && !positive {
		fail("assets.runWorkerFirstRoutes", "at least one route must not be an exclusion (!): Cloudflare refuses exclusions alone")
	}
	if !unknown("content") && !unknown("script") && !unknown("modules") && a.assetsOnly() {
		if (as.RunWorkerFirst != nil && *as.RunWorkerFirst) || len(as.RunWorkerFirstRoutes) > 0 {
			fail("assets.runWorkerFirst", "an assets-only worker has no code to run first: set content or script, or drop runWorkerFirst")
		}
		if as.Binding != "" {
			fail("assets.binding", "an assets-only worker has no code to use the binding %s: set content or script, or drop the binding", as.Binding)
		}
	}
	if len(failures) > 0 || filesUnknown {
		return failures
	}
	set, err := as.read()
	if err != nil {
		fail(problemField(err, "assets.directory"), "%v", err)
		return failures
	}
	field := "assets.directory"
	if as.Directory == "" {
		field = "assets.files"
	}
	if len(set.files) == 0 {
		fail(field, "no asset files to publish (the directory is empty, or holds only ignored and _headers/_redirects files): "+
			"point assets.directory at the built site, or leave assets out")
	}
	if n := len(set.files); n > lim.MaxAssetFiles {
		fail(field, "%d asset files: Cloudflare allows %d per worker version; see openinspect:workerAssetsFileLimit", n, lim.MaxAssetFiles)
	}
	for _, urlPath := range slices.Sorted(maps.Keys(set.files)) {
		f := set.files[urlPath]
		if f.Size > maxAssetFileBytes {
			fail(field, "asset %s (%s) is %s; Cloudflare refuses asset files over %s",
				urlPath, f.local, config.FormatSize(f.Size), config.FormatSize(maxAssetFileBytes))
		}
	}
	if as.Directory != "" && !set.hasIgnoreFile {
		for _, urlPath := range slices.Sorted(maps.Keys(set.files)) {
			if urlPath == "/"+pagesWorkerFile || strings.HasPrefix(urlPath, "/"+pagesWorkerFile+"/") {
				fail(field, "%s would be published as an asset (it is a Pages worker: server code); add it to a %s file "+
					"in the directory, or add an empty %s to publish it", urlPath, assetsIgnoreFile, assetsIgnoreFile)
				break
			}
		}
	}
	return failures
}

// assetKeyProblem: an assets.files key is the URL path the file is served
// at (a leading '/' is added), so it has no '.' or '..' segment: served as
// given, `/../../etc/passwd` is a path no request reaches, or one a proxy
// normalises onto another file.
func assetKeyProblem(key string) string {
	if strings.Contains(key, "\\") {
		return fmt.Sprintf("%q holds a backslash: separate the URL path's parts with '/', e.g. /css/site.css", key)
	}
	for _, seg := range strings.Split(strings.TrimLeft(key, "/"), "/") {
		if seg == "." || seg == ".." {
			return fmt.Sprintf("%q has a '.' or '..' segment: give the URL path the file is served at, e.g. /index.html", key)
		}
	}
	return ""
}

// --- hashing, upload and state ------------------------------------------------

// assetsDigest covers everything about the assets that is uploaded: the
// manifest, the config and the _headers and _redirects text. It is part of
// the worker's content hash, so unchanged assets mean no upload at all.
func (a WorkerArgs) assetsDigest() (string, error) {
	if a.Assets == nil {
		return "", nil
	}
	set, err := a.Assets.read()
	if err != nil {
		return "", err
	}
	return digestAssets(a.Assets, set)
}

func digestAssets(as *WorkerAssets, set *assetSet) (string, error) {
	raw, err := json.Marshal(struct {
		Manifest cfapi.AssetManifest
		Config   *cfapi.AssetsConfig
	}{set.manifest(), as.config(set)})
	if err != nil {
		return "", err
	}
	return family.SHA256Hex(raw), nil
}

// uploadedAssets is what an asset sync produced: the metadata for the
// script upload and what state records once that upload landed.
type uploadedAssets struct {
	metadata *cfapi.ScriptAssets
	hashes   map[string]string
	digest   string
}

// syncAssets uploads what Cloudflare lacks of the worker's assets and
// returns the script metadata carrying the completion token (nil for a
// worker without assets).
func syncAssets(ctx context.Context, client *cfapi.Client, args WorkerArgs) (*uploadedAssets, error) {
	if args.Assets == nil {
		return nil, nil
	}
	set, err := args.Assets.read()
	if err != nil {
		return nil, err
	}
	digest, err := digestAssets(args.Assets, set)
	if err != nil {
		return nil, err
	}
	jwt, stats, err := client.SyncAssets(ctx, args.Name, set.manifest(), set)
	if err != nil {
		return nil, err
	}
	p.GetLogger(ctx).Infof("worker %s: assets: %d files, %d uploaded in %d buckets (%d upload sessions)",
		args.Name, len(set.files), stats.Files, stats.Buckets, stats.Sessions)
	return &uploadedAssets{
		metadata: &cfapi.ScriptAssets{JWT: jwt, Config: args.Assets.config(set)},
		hashes:   set.hashes(),
		digest:   digest,
	}, nil
}

// recordAssets notes in state the assets the last script upload carried.
func (s *WorkerState) recordAssets(u *uploadedAssets) {
	if u == nil {
		s.AssetsManifest, s.AssetsDigest = nil, ""
		return
	}
	s.AssetsManifest, s.AssetsDigest = u.hashes, u.digest
}

// --- diff -------------------------------------------------------------------

// maxNamedAssets bounds how many paths of each kind the preview names.
const maxNamedAssets = 20

// assets records what moved in the assets: each config field, and the
// added, changed and removed paths against the manifest recorded at the
// last upload. A files map gets one detailed-diff entry per path; a
// directory's paths are named in the preview's message under
// assets.directory, since they are not inputs.
func (c *workerChanges) assets(state WorkerState, news WorkerArgs) error {
	olds := state.WorkerArgs.Assets
	switch {
	case olds == nil && news.Assets == nil:
		return nil
	case news.Assets == nil:
		c.add("assets", p.Delete, &c.content, "assets removed")
		return nil
	case olds == nil:
		c.add("assets", p.Add, &c.content, "assets added")
		return nil
	}
	var added, changed, removed []string
	set, err := news.Assets.read()
	if err != nil {
		return err
	}
	for _, path := range slices.Sorted(maps.Keys(set.files)) {
		old, had := state.AssetsManifest[path]
		switch {
		case !had:
			added = append(added, path)
		case old != set.files[path].Hash:
			changed = append(changed, path)
		}
	}
	for _, path := range slices.Sorted(maps.Keys(state.AssetsManifest)) {
		if _, kept := set.files[path]; !kept {
			removed = append(removed, path)
		}
	}
	c.scalar("assets.binding", olds.Binding != news.Assets.Binding, &c.settings)
	c.scalar("assets.htmlHandling", olds.HTMLHandling != news.Assets.HTMLHandling, &c.settings)
	c.scalar("assets.notFoundHandling", olds.NotFoundHandling != news.Assets.NotFoundHandling, &c.settings)
	c.scalar("assets.runWorkerFirst", differ(olds.RunWorkerFirst, news.Assets.RunWorkerFirst), &c.settings)
	c.scalar("assets.runWorkerFirstRoutes", differ(olds.RunWorkerFirstRoutes, news.Assets.RunWorkerFirstRoutes), &c.settings)
	if len(added)+len(changed)+len(removed) == 0 {
		return nil
	}
	if news.Assets.Directory == "" {
		keyOf := func(path string) string {
			for k := range news.Assets.Files {
				if assetURLPath(k) == path {
					return k
				}
			}
			for k := range olds.Files {
				if assetURLPath(k) == path {
					return k
				}
			}
			return path
		}
		for kind, paths := range map[p.DiffKind][]string{p.Add: added, p.Update: changed, p.Delete: removed} {
			for _, path := range paths {
				c.detailed[fmt.Sprintf("assets.files[%q]", keyOf(path))] = p.PropertyDiff{Kind: kind, InputDiff: true}
			}
		}
	} else {
		c.detailed["assets.directory"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	var what []string
	for _, group := range []struct {
		verb  string
		paths []string
	}{{"added", added}, {"changed", changed}, {"removed", removed}} {
		if len(group.paths) > 0 {
			what = append(what, fmt.Sprintf("%d %s: %s", len(group.paths), group.verb, namePaths(group.paths)))
		}
	}
	c.content = append(c.content, "assets "+strings.Join(what, "; "))
	return nil
}

// namePaths lists paths, at most maxNamedAssets of them.
func namePaths(paths []string) string {
	if len(paths) <= maxNamedAssets {
		return strings.Join(paths, " ")
	}
	return strings.Join(paths[:maxNamedAssets], " ") + fmt.Sprintf(" and %d more", len(paths)-maxNamedAssets)
}

// assetsFromSettings is the assets binding an imported script has; the
// files themselves cannot be read back, so the program supplies them.
func assetsFromSettings(b cfapi.Binding) *WorkerAssets {
	return &WorkerAssets{Binding: b.Name}
}

// script is the metadata.assets of the upload, nil without assets.
func (u *uploadedAssets) script() *cfapi.ScriptAssets {
	if u == nil {
		return nil
	}
	return u.metadata
}
