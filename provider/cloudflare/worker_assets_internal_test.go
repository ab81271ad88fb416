package cloudflare

import (
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"lukechampine.com/blake3"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/tests/filetree"
)

func TestReadAssetDirectory(t *testing.T) {
	dir := filetree.Write(t, map[string]string{
		"index.html":          "<h1>home</h1>",
		"css/site.css":        "body{}",
		"drafts/wip.html":     "no",
		"notes.md":            "ignored by glob",
		"keep/notes.md":       "re-included",
		".assetsignore":       "# comment\ndrafts/\n*.md\n!keep/notes.md\n",
		"_headers":            "/*\n  X-Test: 1\n",
		"_redirects":          "/old /new 301\n",
		"deep/a/b/c/leaf.txt": "leaf",
	})
	require.NoError(t, os.Symlink(filepath.Join(dir, "index.html"), filepath.Join(dir, "link.html")))

	set, err := readAssetDirectory(dir)
	require.NoError(t, err)
	paths := []string{}
	for path := range set.files {
		paths = append(paths, path)
	}
	assert.ElementsMatch(t, []string{"/index.html", "/css/site.css", "/keep/notes.md", "/deep/a/b/c/leaf.txt"}, paths,
		"symlinks, ignored files and the config files are not assets")
	assert.Equal(t, "/*\n  X-Test: 1\n", set.headers)
	assert.Equal(t, "/old /new 301\n", set.redirects)
	assert.True(t, set.hasIgnoreFile)
	assert.Equal(t, int64(len("<h1>home</h1>")), set.files["/index.html"].Size)
}

// The content key is wrangler's: BLAKE3 over base64(content) + extension,
// 32 hex digits, so both tools recognise each other's uploads.
func TestAssetHashIsWranglers(t *testing.T) {
	dir := filetree.Write(t, map[string]string{"app.js": "console.log(1)", ".htaccess": "deny", "noext": "x"})
	for name, ext := range map[string]string{"app.js": "js", ".htaccess": "", "noext": ""} {
		content, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		sum := blake3.Sum256([]byte(base64.StdEncoding.EncodeToString(content) + ext))
		f, err := hashAssetFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, hex.EncodeToString(sum[:])[:32], f.Hash, name)
	}
}

func TestIgnoreMatcher(t *testing.T) {
	m := newIgnoreMatcher([]string{"/root-only.txt", "build/", "**/secret/**", "*.log", "!important.log", "a/**/z", "q?.txt", "[ab].bin"})
	for rel, want := range map[string]bool{
		"root-only.txt": true, "sub/root-only.txt": false,
		"build/x.js": true, "sub/build/x.js": true,
		"x/secret/y/z": true, "secret/key": true,
		"debug.log": true, "sub/debug.log": true, "important.log": false,
		"a/z": true, "a/b/c/z": true,
		"q1.txt": true, "q12.txt": false,
		"a.bin": true, "c.bin": false,
		"index.html": false,
	} {
		assert.Equal(t, want, m.ignored(rel, false), rel)
	}
}

func TestAssetFailuresNameTheFile(t *testing.T) {
	dir := filetree.Write(t, map[string]string{"a.txt": "a", "b.txt": "b", "c.txt": "c"})
	big := filepath.Join(dir, "video.mp4")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(maxAssetFileBytes+1)) // sparse: no 25 MiB written
	require.NoError(t, f.Close())

	args := WorkerArgs{Name: "site", Assets: &WorkerAssets{Directory: dir}}
	failures := args.assetFailures(config.WorkerLimits{MaxAssetFiles: 3}, func(string) bool { return false })
	reasons := map[string][]string{}
	for _, f := range failures {
		reasons[family.FailureField(f)] = append(reasons[family.FailureField(f)], family.FailureProblem(f))
	}
	require.Len(t, reasons["assets.directory"], 2, "%v", failures)
	assert.Contains(t, reasons["assets.directory"][0], "4 asset files: Cloudflare allows 3")
	assert.Contains(t, reasons["assets.directory"][1], "asset /video.mp4")
	assert.Contains(t, reasons["assets.directory"][1], "over 25 MiB")
}

func TestAssetFailuresOfTheInputs(t *testing.T) {
	dir := filetree.Write(t, map[string]string{"_worker.js": "export default {}"})
	no := func(string) bool { return false }
	lim := config.WorkerLimits{MaxAssetFiles: 100}
	cases := map[string]struct {
		args  WorkerArgs
		field string
		text  string
	}{
		"neither":      {WorkerArgs{Assets: &WorkerAssets{}}, "assets.directory", "set assets.directory or assets.files"},
		"both":         {WorkerArgs{Assets: &WorkerAssets{Directory: dir, Files: map[string]string{"/a": "a"}}}, "assets.files", "not both"},
		"html":         {WorkerArgs{Content: "x", Assets: &WorkerAssets{Directory: dir, HTMLHandling: "sometimes"}}, "assets.htmlHandling", `"sometimes" is not`},
		"notfound":     {WorkerArgs{Content: "x", Assets: &WorkerAssets{Directory: dir, NotFoundHandling: "spa"}}, "assets.notFoundHandling", `"spa" is not`},
		"route":        {WorkerArgs{Content: "x", Assets: &WorkerAssets{Directory: dir, RunWorkerFirstRoutes: []string{"api/*"}}}, "assets.runWorkerFirstRoutes[0]", "must start with /"},
		"only-neg":     {WorkerArgs{Content: "x", Assets: &WorkerAssets{Directory: dir, RunWorkerFirstRoutes: []string{"!/api/*"}}}, "assets.runWorkerFirstRoutes", "at least one"},
		"first-nocode": {WorkerArgs{Assets: &WorkerAssets{Directory: dir, RunWorkerFirst: new(true)}}, "assets.runWorkerFirst", "assets-only"},
		"bind-nocode":  {WorkerArgs{Assets: &WorkerAssets{Directory: dir, Binding: "ASSETS"}}, "assets.binding", "assets-only"},
		"missing-dir":  {WorkerArgs{Content: "x", Assets: &WorkerAssets{Directory: filepath.Join(dir, "nope")}}, "assets.directory", "cannot be read"},
		"missing-file": {WorkerArgs{Content: "x", Assets: &WorkerAssets{Files: map[string]string{"/a.txt": filepath.Join(dir, "nope")}}}, `assets.files["/a.txt"]`, "reading asset"},
		"pages-worker": {WorkerArgs{Content: "x", Assets: &WorkerAssets{Directory: dir}}, "assets.directory", "/_worker.js would be published"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			failures := tc.args.assetFailures(lim, no)
			require.NotEmpty(t, failures)
			assert.Equal(t, tc.field, family.FailureField(failures[0]))
			assert.Contains(t, failures[0].Reason, tc.text)
		})
	}
}

func TestAssetsDiffNamesPaths(t *testing.T) {
	dir := filetree.Write(t, map[string]string{"index.html": "v1", "old.css": "x", "same.js": "s"})
	args := WorkerArgs{Name: "site", Content: "export default {}", Assets: &WorkerAssets{Directory: dir}}
	set, err := args.Assets.read()
	require.NoError(t, err)
	hash, secrets, err := args.hashes()
	require.NoError(t, err)
	state := WorkerState{WorkerArgs: args, Hash: hash, SecretsHash: secrets, AssetsManifest: set.hashes()}

	detailed, message, err := workerDiff(state, args)
	require.NoError(t, err)
	assert.Empty(t, detailed, "an unchanged directory is no change")
	assert.Empty(t, message)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "index.html"), []byte("v2"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "old.css")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new.svg"), []byte("<svg/>"), 0o644))
	detailed, message, err = workerDiff(state, args)
	require.NoError(t, err)
	assert.Equal(t, map[string]p.PropertyDiff{"assets.directory": {Kind: p.Update, InputDiff: true}}, detailed)
	assert.Contains(t, message, "assets 1 added: /new.svg; 1 changed: /index.html; 1 removed: /old.css")

	// A files map gets one detailed entry per path.
	files := WorkerArgs{Name: "site", Content: "export default {}", Assets: &WorkerAssets{Files: map[string]string{
		"/index.html": filepath.Join(dir, "index.html"), "/new.svg": filepath.Join(dir, "new.svg")}}}
	state.WorkerArgs = files
	state.AssetsManifest = map[string]string{"/index.html": set.hashes()["/index.html"], "/gone.txt": "0"}
	detailed, _, err = workerDiff(state, files)
	require.NoError(t, err)
	assert.Equal(t, map[string]p.PropertyDiff{
		`assets.files["/index.html"]`: {Kind: p.Update, InputDiff: true},
		`assets.files["/new.svg"]`:    {Kind: p.Add, InputDiff: true},
		`assets.files["/gone.txt"]`:   {Kind: p.Delete, InputDiff: true},
	}, detailed)
}

func TestHeadersProblems(t *testing.T) {
	text := strings.Join([]string{
		"# comment",
		"/*",
		"  X-Frame-Options: DENY",
		"  ! Server",
		"https://example.com/app/*",
		"  Cache-Control: no-store",
		"  NotAHeader",
		"  Bad Name: x",
		"  !",
		"products/*",
		"  X-Robots-Tag: noindex",
		"",
		"  Orphan: yes",
	}, "\n")
	assert.Equal(t, []string{
		`line 7: "NotAHeader" is not a header (write Name: value)`,
		`line 8: "Bad Name: x" is not a header (write Name: value)`,
		`line 9: "!" names no header to remove`,
		`line 10: "products/*" is not a URL pattern (start it with / or https://); header lines below a pattern are indented`,
		"line 11: a header with no URL pattern above it",
		"line 13: a header with no URL pattern above it",
	}, headersProblems(text))
	assert.Empty(t, headersProblems("/*\n  X-A: 1\n\n/api/*\n\tX-B: 2\n"))
}

func TestRedirectsProblems(t *testing.T) {
	text := strings.Join([]string{
		"# comment",
		"/old /new",
		"/a /b 301",
		"/proxy/* /internal/:splat 200",
		"/ext https://example.com/x 308",
		"/only-source",
		"old /new",
		"/x ftp://host/y",
		"/y /z 404",
		"/w https://elsewhere.example/ 200",
		"/too /many 301 fields",
	}, "\n")
	assert.Equal(t, []string{
		`line 6: "/only-source" is not a rule (write: source destination [status])`,
		`line 7: the source "old" is not a path (start it with /)`,
		`line 8: the destination "ftp://host/y" is neither a path nor a URL`,
		`line 9: "404" is not a redirect status (200, 301, 302, 303, 307 or 308)`,
		`line 10: a 200 rule proxies to a path on the same site, not to "https://elsewhere.example/"`,
		`line 11: "/too /many 301 fields" is not a rule (write: source destination [status])`,
	}, redirectsProblems(text))
}

// TestAssetPathWarnings: an assets.directory or assets.files path that
// resolves outside the program's directory (by .., an absolute path or a
// symbolic link) is warned about with the path as written and as
// resolved; paths inside it, or inside the provider's cache directory
// (where the component renders the web), are not.
func TestAssetPathWarnings(t *testing.T) {
	program := t.TempDir()
	elsewhere := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(program, "site"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "hostname"), []byte("box"), 0o644))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(program, "linked")))

	inside := WorkerArgs{Name: "w", Assets: &WorkerAssets{Directory: "site"}}
	assert.Empty(t, inside.assetPathWarnings(program, ""))
	insideFiles := WorkerArgs{Name: "w", Assets: &WorkerAssets{Files: map[string]string{"/a.txt": filepath.Join(program, "site", "a.txt")}}}
	assert.Empty(t, insideFiles.assetPathWarnings(program, ""))

	climbing := WorkerArgs{Name: "w", Assets: &WorkerAssets{Directory: "../" + filepath.Base(elsewhere)}}
	warnings := climbing.assetPathWarnings(program, "")
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "worker w: assets.directory ../"+filepath.Base(elsewhere)+" ("+resolvedPath(elsewhere)+
		") resolves outside the program's directory "+program+": everything it names is published as a public asset")

	files := WorkerArgs{Name: "w", Assets: &WorkerAssets{Files: map[string]string{
		"/host.txt": filepath.Join(elsewhere, "hostname"), "/via-link.txt": "linked/hostname", "/ok.txt": "site/ok.txt"}}}
	warnings = files.assetPathWarnings(program, "")
	require.Len(t, warnings, 2)
	assert.Contains(t, warnings[0], `assets.files["/host.txt"] `+filepath.Join(elsewhere, "hostname"))
	assert.Contains(t, warnings[1], `assets.files["/via-link.txt"] linked/hostname (`+resolvedPath(filepath.Join(elsewhere, "hostname"))+")")

	rendered := WorkerArgs{Name: "w", Assets: &WorkerAssets{Directory: elsewhere}}
	assert.Empty(t, rendered.assetPathWarnings(program, elsewhere), "the provider's cache directory is its own")
	assert.Len(t, rendered.assetPathWarnings(program, filepath.Join(elsewhere, "other")), 1)
}
