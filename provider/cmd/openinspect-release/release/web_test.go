package release

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/installation/webbuild"
	"github.com/openinspect/pulumi-openinspect/provider/internal/artefacts"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// fakeNPM stands in for npm and node: the workers' steps and the installs do
// nothing (the fixture tree holds its bundles), `npm install --prefix P geist@…`
// writes the two font files, `npm run build:cloudflare` writes an OpenNext-
// shaped output whose BUILD_ID and keys are random per run (as Next's are),
// with the NEXT_PUBLIC_* values it was given and the stylesheet module it was
// pointed at, the control plane's build:vercel-base-snapshot writes its
// bundle, and wrangler's dry run bundles .open-next/worker.js into --outdir.
// It logs every call.
const fakeNPM = `#!/bin/sh
set -e
echo "$0 $*" >> "$FAKE_LOG"
rnd() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }
case "$*" in
*"install --no-save"*)
  prefix=$(echo "$*" | sed 's/.*--prefix \([^ ]*\).*/\1/')
  mkdir -p "$prefix/node_modules/geist/dist/fonts/geist-sans" "$prefix/node_modules/geist/dist/fonts/geist-mono"
  echo sans > "$prefix/node_modules/geist/dist/fonts/geist-sans/Geist-Variable.woff2"
  echo mono > "$prefix/node_modules/geist/dist/fonts/geist-mono/GeistMono-Variable.woff2" ;;
*"build:cloudflare"*)
  test -f "$NEXT_FONT_GOOGLE_MOCKED_RESPONSES"
  cd packages/web
  rm -rf .next .open-next
  id=$(rnd 10 | cut -c1-21)
  mkdir -p .next/server ".open-next/assets/_next/static/$id" .open-next/assets/_next/static/chunks
  printf %s "$id" > .next/BUILD_ID
  k1=$(rnd 16); k2=$(rnd 32); k3=$(rnd 32); k4=$(head -c 32 /dev/urandom | base64)
  echo "{\"preview\":{\"previewModeId\":\"$k1\",\"previewModeSigningKey\":\"$k2\",\"previewModeEncryptionKey\":\"$k3\"}}" > .next/prerender-manifest.json
  echo "{\"encryptionKey\":\"$k4\"}" > .next/server/server-reference-manifest.json
  echo "self.__BUILD_MANIFEST={buildId:\"$id\"};" > ".open-next/assets/_next/static/$id/_buildManifest.js"
  echo "const app=\"$NEXT_PUBLIC_APP_NAME\";const ws=\"$NEXT_PUBLIC_WS_URL\";" > .open-next/assets/_next/static/chunks/0a1b2c3d4e5f6a7b.js
  echo "<!doctype html><title>$NEXT_PUBLIC_APP_NAME</title>" > .open-next/assets/index.html
  echo "export default {buildId:\"$id\",keys:[\"$k1\",\"$k2\",\"$k3\",\"$k4\"],icon:\"$NEXT_PUBLIC_APP_ICON_URL\",sandbox:\"$NEXT_PUBLIC_SANDBOX_PROVIDER\",appDir:\"$PWD\",threads:$UV_THREADPOOL_SIZE,__BUILD_TIMESTAMP_MS__: $(date +%s%N | cut -c1-13)};" > .open-next/worker.js
  mkdir -p .open-next/cache/"$id" && echo "{}" > .open-next/cache/"$id"/index.cache ;;
*"build:vercel-base-snapshot"*)
  mkdir -p packages/control-plane/dist
  echo "// the Vercel base-snapshot builder, bundled" > packages/control-plane/dist/vercel-base-snapshot.js ;;
*"deploy --dry-run"*)
  out=$(echo "$*" | sed 's/.*--outdir \([^ ]*\).*/\1/')
  mkdir -p "$out" && cp .open-next/worker.js "$out/worker.js" && echo map > "$out/worker.js.map" ;;
esac
`

// A release run builds the web twice, in two trees, with random per-build
// values and build times, and yields one byte-identical placeholder build: the bundled worker, the
// assets (not OpenNext's prerender cache) and a manifest carrying the
// contract's placeholders and stand-ins derived from the commit, which
// webbuild then renders for an installation.
func TestReleaseBuildsTheWebPlaceholderBuild(t *testing.T) {
	res, out, log := fakeRelease(t)
	assert.Equal(t, 1, strings.Count(string(log), "geist@1.9.2"), "the font package is installed once: %s", log)
	assert.Equal(t, 2, strings.Count(string(log), "build:cloudflare"), "%s", log)
	assert.Equal(t, 2, strings.Count(string(log), "deploy --dry-run"), "%s", log)

	var web []string
	for _, f := range res.Manifest.Files {
		if f.Kind == artefacts.KindWeb {
			web = append(web, strings.TrimPrefix(f.Path, artefacts.WebBuildDir+"/"))
		}
	}
	stand := webStandIns("0123456789abcdef0123456789abcdef01234567")
	assert.ElementsMatch(t, []string{
		"worker.js", "openinspect-web.json", "assets/index.html",
		"assets/_next/static/chunks/0a1b2c3d4e5f6a7b.js",
		"assets/_next/static/" + stand.BuildID + "/_buildManifest.js",
	}, web, "the prerender cache and the source map stay out")

	// Unpack the written set and render it as an installation would.
	loaded, err := artefacts.Load(os.DirFS(out), ".")
	require.NoError(t, err)
	set := t.TempDir()
	require.NoError(t, loaded.Extract(set))
	build := filepath.Join(set, filepath.FromSlash(artefacts.WebBuildDir))
	m, err := webbuild.ReadManifest(os.DirFS(build))
	require.NoError(t, err)
	c, err := upstream.Load()
	require.NoError(t, err)
	assert.Equal(t, c.Artefacts.Web.Placeholders, m.Placeholders)
	assert.Equal(t, stand.BuildID, m.BuildID)
	worker, err := os.ReadFile(filepath.Join(build, "worker.js"))
	require.NoError(t, err)
	assert.Contains(t, string(worker), `appDir:"/background-agents/packages/web",threads:1,`, "the tree's path is the stand-in; one fs thread")
	built, err := time.Parse(time.RFC3339, c.Upstream.CommitDate)
	require.NoError(t, err)
	assert.Contains(t, string(worker), fmt.Sprintf("__BUILD_TIMESTAMP_MS__: %d}", built.UnixMilli()), "the build time is the commit's")
	for _, key := range []string{stand.BuildID, m.BuildSecrets.PreviewModeID, m.BuildSecrets.PreviewModeSigningKey,
		m.BuildSecrets.PreviewModeEncryptionKey, m.BuildSecrets.ServerActionsEncryptionKey} {
		assert.Contains(t, string(worker), key, "the build's random values are replaced by the stand-ins")
	}
	secrets, err := webbuild.GenerateSecrets(strings.NewReader(strings.Repeat("k", 256)))
	require.NoError(t, err)
	rendered := t.TempDir()
	_, err = webbuild.Render(os.DirFS(build), webbuild.Installation{
		Values:  webbuild.Values{WSURL: "wss://cp.example.workers.dev", SandboxProvider: "modal", AppName: "Acme Inspect"},
		Secrets: secrets,
	}, webbuild.Dir(rendered))
	require.NoError(t, err)
	page, err := os.ReadFile(filepath.Join(rendered, "assets", "index.html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), "<title>Acme Inspect</title>")
}

// fakeRelease runs the release step on the fixture tree with fakeNPM for
// npm and node; it returns the result, the set's directory and the calls.
func fakeRelease(t *testing.T) (*Result, string, []byte) {
	t.Helper()
	tool := filepath.Join(t.TempDir(), "fake-npm")
	require.NoError(t, os.WriteFile(tool, []byte(fakeNPM), 0o755))
	calls := filepath.Join(t.TempDir(), "calls.log")
	t.Setenv("FAKE_LOG", calls)
	out := t.TempDir()
	res, err := Run(context.Background(), Options{
		Source: filepath.Join("..", "..", "..", "..", "tests", "fixtures", "upstream"),
		Commit: "0123456789abcdef0123456789abcdef01234567", Out: out, Unverified: true,
		NPM: tool, Node: tool, Log: t.Logf,
	})
	require.NoError(t, err)
	log, err := os.ReadFile(calls)
	require.NoError(t, err)
	return res, out, log
}

// A release builds the control plane's Vercel base-snapshot bundle with
// upstream's own script, in both trees, and the set carries it with the
// builder's script, the client it drives and the package manifest, and
// nothing else of the control plane's source, so that VercelSnapshot runs
// from the set with no checkout.
func TestReleaseCarriesTheVercelBuilder(t *testing.T) {
	res, out, log := fakeRelease(t)
	assert.Equal(t, 2, strings.Count(string(log), "run build:vercel-base-snapshot --workspace packages/control-plane"), "%s", log)
	var sandboxFiles []string
	for _, f := range res.Manifest.Files {
		if f.Kind == artefacts.KindSandbox && strings.HasPrefix(f.Path, "packages/control-plane/") {
			sandboxFiles = append(sandboxFiles, f.Path)
		}
	}
	assert.ElementsMatch(t, []string{
		"packages/control-plane/package.json",
		"packages/control-plane/scripts/build-vercel-base-snapshot.ts",
		"packages/control-plane/dist/vercel-base-snapshot.js",
		"packages/control-plane/src/sandbox/providers/vercel/client.ts",
	}, sandboxFiles)
	loaded, err := artefacts.Load(os.DirFS(out), ".")
	require.NoError(t, err)
	set := t.TempDir()
	require.NoError(t, loaded.Extract(set))
	bundle, err := os.ReadFile(filepath.Join(set, "packages", "control-plane", "dist", "vercel-base-snapshot.js"))
	require.NoError(t, err)
	assert.Contains(t, string(bundle), "the Vercel base-snapshot builder, bundled", "the bundle the build wrote is the one carried")
}

// The stylesheet module maps each recorded URL to a face served from the
// font package on loopback.
func TestServeFontsAnswersTheRecordedStylesheets(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "dist"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dist", "G.woff2"), []byte("font bytes"), 0o644))
	fonts := upstream.WebFonts{Package: "geist@1.9.2", Stylesheets: map[string]upstream.WebFontFace{
		"https://fonts.googleapis.com/css2?family=G:wght@100..900&display=swap": {Family: "G", File: "dist/G.woff2", Weight: "100 900"},
	}}
	module, stop, err := serveFonts(dir, fonts)
	require.NoError(t, err)
	defer stop()
	assert.Contains(t, string(module), `"https://fonts.googleapis.com/css2?family=G:wght@100..900\u0026display=swap"`)
	src := regexp.MustCompile(`url\((http://127\.0\.0\.1:\d+/dist/G\.woff2)\)`).FindStringSubmatch(string(module))
	require.Len(t, src, 2, "%s", module)
	resp, err := http.Get(src[1])
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, "font bytes", string(body))

	fonts.Stylesheets["x"] = upstream.WebFontFace{Family: "X", File: "dist/missing.woff2"}
	_, _, err = serveFonts(dir, fonts)
	assert.ErrorContains(t, err, "geist@1.9.2 has no dist/missing.woff2")
}

// A release carries upstream's web source as Vercel builds it (web-source
// files with their digests: the root manifest and lock, the shared and web
// packages, never a build output), so web.platform vercel deploys from the
// set with no checkout.
func TestReleaseCarriesTheWebSource(t *testing.T) {
	res, out, _ := fakeRelease(t)
	var src []string
	for _, f := range res.Manifest.Files {
		if f.Kind != artefacts.KindWebSource {
			continue
		}
		src = append(src, f.Path)
		assert.Regexp(t, `^[0-9a-f]{64}$`, f.SHA256, f.Path)
		for _, skipped := range []string{"/.open-next/", "/.next/", "/node_modules/"} {
			assert.NotContains(t, "/"+f.Path, skipped, "a build output is never carried as source")
		}
	}
	for _, want := range []string{"package.json", "package-lock.json", "packages/shared/package.json", "packages/web/package.json",
		"packages/web/next.config.ts", "packages/web/src/app/page.tsx"} {
		assert.Contains(t, src, want)
	}
	loaded, err := artefacts.Load(os.DirFS(out), ".")
	require.NoError(t, err)
	assert.Contains(t, loaded.Summary(), fmt.Sprintf("%d web source files", len(src)))
	set := t.TempDir()
	require.NoError(t, loaded.Extract(set))
	_, err = os.Stat(filepath.Join(set, "packages", "web", "src", "app", "page.tsx"))
	assert.NoError(t, err, "the extracted set holds the web source")
}
