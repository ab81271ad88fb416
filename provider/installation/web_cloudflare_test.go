package installation

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/provider/installation/webbuild"
)

// webMocks answer GeneratedSecret with values of the shape the real one
// makes for its length and alphabet (the web's keys are checked for it),
// derived from the child's name so runs repeat.
type webMocks struct{ recordingMocks }

func (m *webMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	id, out, err := m.recordingMocks.NewResource(args)
	if err != nil || args.TypeToken != "openinspect:index:GeneratedSecret" {
		return id, out, err
	}
	length := int(args.Inputs["length"].NumberValue())
	seed := sha256.Sum256([]byte(args.Name))
	raw := append(seed[:], seed[:]...)
	var v string
	switch args.Inputs["alphabet"].StringValue() {
	case "base64":
		v = base64.StdEncoding.EncodeToString(raw[:length])
	case "hex":
		v = hex.EncodeToString(raw)[:length]
	default:
		v = "generated-" + args.Name
	}
	out["value"] = resource.MakeSecret(resource.NewProperty(v))
	return id, out, nil
}

// generatedValue is what webMocks gave the child named name.
func (m *webMocks) generatedValue(t *testing.T, name string) string {
	t.Helper()
	r := m.byName(t, name)
	_, out, err := (&webMocks{}).NewResource(r)
	require.NoError(t, err)
	return out["value"].SecretValue().Element.StringValue()
}

func cloudflareWeb(args OpenInspectArgs) OpenInspectArgs {
	platform := web.PlatformCloudflare
	args.Web = &web.Args{Platform: &platform}
	return args
}

// runWeb runs the component against webMocks and returns its webUrl and
// webPlatform once resolved.
func runWeb(t *testing.T, args OpenInspectArgs) (*webMocks, string, string) {
	t.Helper()
	mocks := &webMocks{}
	var mu sync.Mutex
	var url, platform string
	require.NoError(t, pulumi.RunErr(func(ctx *pulumi.Context) error {
		comp, err := NewOpenInspect(ctx, "oi", args)
		if err != nil {
			return err
		}
		// Exported, so the run waits for it.
		ctx.Export("web", pulumi.All(comp.WebURL, comp.WebPlatform).ApplyT(func(v []any) string {
			mu.Lock()
			defer mu.Unlock()
			url, platform = v[0].(string), v[1].(string)
			return url
		}))
		return nil
	}, pulumi.WithMocks("project", "stack", mocks)))
	mu.Lock()
	defer mu.Unlock()
	return mocks, url, platform
}

func unwrapSecret(v resource.PropertyValue) resource.PropertyValue {
	for v.IsSecret() {
		v = v.SecretValue().Element
	}
	return v
}

// renderedDir is the web Worker's rendered build: the assets directory's parent.
func renderedDir(t *testing.T, worker resource.PropertyMap) string {
	t.Helper()
	assets := worker["assets"].ObjectValue()
	dir := assets["directory"]
	require.False(t, dir.ContainsSecrets(), "the rendered directory is not secret, so the Worker's diff shows it")
	return filepath.Dir(dir.StringValue())
}

// assetDigests maps each file under dir to its content's SHA-256.
func assetDigests(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(b)
		out[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	}))
	return out
}

// TestWebOnCloudflare: web.platform cloudflare registers upstream's web as a
// Worker with static assets, its vars, binding, secret, compatibility date
// and flags, from the fixture's placeholder build rendered with this
// installation's values and its own keys; the control plane's WEB_APP_URL
// and the webUrl output are the web Worker's workers.dev URL.
func TestWebOnCloudflare(t *testing.T) {
	t.Setenv("OPENINSPECT_CACHE_DIR", t.TempDir())
	args := cloudflareWeb(unmanaged(requiredArgs()))
	mocks, url, platform := runWeb(t, args)
	const webURL = "https://open-inspect-web-t1.acct.workers.dev"
	assert.Equal(t, webURL, url)
	assert.Equal(t, "cloudflare", platform)
	assert.Equal(t, webURL, mocks.byName(t, "oi-worker-control-plane").Inputs["vars"].ObjectValue()["WEB_APP_URL"].StringValue(),
		"the control plane's web origin follows the web Worker")
	scripts := mocks.byName(t, "oi-worker-urls").Inputs["scripts"].ArrayValue()
	assert.Contains(t, scripts, resource.NewProperty("open-inspect-web-t1"))

	w := mocks.byName(t, "oi-worker-web").Inputs
	assert.Equal(t, "open-inspect-web-t1", w["name"].StringValue())
	assert.Equal(t, "2025-08-15", w["compatibilityDate"].StringValue())
	assert.Equal(t, []resource.PropertyValue{resource.NewProperty("nodejs_compat"), resource.NewProperty("global_fetch_strictly_public")},
		w["compatibilityFlags"].ArrayValue())
	assert.True(t, w["workersDev"].BoolValue())
	assert.Equal(t, "worker.js", w["mainModule"].StringValue())
	const cpURL = "https://open-inspect-control-plane-t1.acct.workers.dev"
	const wsURL = "wss://open-inspect-control-plane-t1.acct.workers.dev"
	assert.Equal(t, map[string]any{
		"CONTROL_PLANE_URL":            cpURL,
		"NEXT_PUBLIC_WS_URL":           wsURL,
		"NEXT_PUBLIC_SANDBOX_PROVIDER": "modal",
		"NEXT_PUBLIC_APP_NAME":         "Open-Inspect",
		"NEXT_PUBLIC_APP_ICON_URL":     "",
	}, w["vars"].ObjectValue().Mappable())
	svc := w["services"].ArrayValue()
	require.Len(t, svc, 1)
	assert.Equal(t, map[string]any{"binding": "CONTROL_PLANE_WORKER", "service": "open-inspect-control-plane-t1"}, svc[0].ObjectValue().Mappable())
	assert.True(t, w["secrets"].ContainsSecrets())
	serviceAuth := unwrapSecret(unwrapSecret(w["secrets"]).ObjectValue()["SERVICE_AUTH_SECRET"]).StringValue()
	assert.Equal(t, mocks.generatedValue(t, "oi-secret-serviceAuthSecretWeb"), serviceAuth,
		"the web signs with the key the control plane knows as SERVICE_AUTH_SECRET_WEB")
	assert.Equal(t, "ASSETS", w["assets"].ObjectValue()["binding"].StringValue())
	assert.NotContains(t, w, "domains")

	dir := renderedDir(t, w)
	assert.Equal(t, filepath.Join(os.Getenv("OPENINSPECT_CACHE_DIR"), "web"), filepath.Dir(dir))
	assert.Regexp(t, `^[0-9a-f]{64}$`, filepath.Base(dir), "named by the rendering's digest")
	assert.Equal(t, filepath.Join(dir, "worker.js"), w["script"].AssetValue().Path)
	module, err := os.ReadFile(filepath.Join(dir, "worker.js"))
	require.NoError(t, err)
	manifest, err := webbuild.ReadManifest(os.DirFS(filepath.Join(fixtureCheckout, webBuildPath)))
	require.NoError(t, err)
	assert.Contains(t, string(module), wsURL)
	assert.NotContains(t, string(module), manifest.BuildSecrets.ServerActionsEncryptionKey, "the build's keys are replaced")
	assert.NotContains(t, string(module), manifest.BuildSecrets.PreviewModeSigningKey)
	for _, k := range webBuildKeys {
		assert.Contains(t, string(module), mocks.generatedValue(t, "oi-secret-"+k.name), "the installation's %s", k.name)
	}
	page, err := os.ReadFile(filepath.Join(dir, "assets", "404.html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), " · Open-Inspect</title>")
	assert.Contains(t, string(page), `data-ws-url="`+wsURL+`"`)
	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "the rendering holds the keys: private")

	// The same installation renders the same directory: nothing to upload.
	again, _, _ := runWeb(t, args)
	assert.Equal(t, dir, renderedDir(t, again.byName(t, "oi-worker-web").Inputs))

	// Another app name: another directory, where only the files holding the
	// name (and those naming a renamed chunk) differ.
	name := "Acme Inspect"
	args.AppName = &name
	renamed, _, _ := runWeb(t, args)
	other := renderedDir(t, renamed.byName(t, "oi-worker-web").Inputs)
	require.NotEqual(t, dir, other)
	before, after := assetDigests(t, filepath.Join(dir, "assets")), assetDigests(t, filepath.Join(other, "assets"))
	assert.Equal(t, before["robots.txt"], after["robots.txt"], "a file without the name is unchanged")
	assert.NotEqual(t, before["404.html"], after["404.html"])
	same := 0
	for p, sum := range after {
		if before[p] == sum {
			same++
		}
	}
	assert.Positive(t, same, "unchanged files keep their path and content")
	assert.Less(t, same, len(after))
}

// TestWebOnCloudflareCustomDomain: the hostname is attached to the web
// Worker, whose workers.dev is off, and https://<hostname> is the web URL
// and the control plane's WEB_APP_URL.
func TestWebOnCloudflareCustomDomain(t *testing.T) {
	t.Setenv("OPENINSPECT_CACHE_DIR", t.TempDir())
	args := cloudflareWeb(unmanaged(requiredArgs()))
	args.Web.CustomDomain = &web.CustomDomain{Hostname: "inspect.example.com", ZoneID: strings.Repeat("ab", 16)}
	mocks, url, _ := runWeb(t, args)
	assert.Equal(t, "https://inspect.example.com", url)
	assert.Equal(t, "https://inspect.example.com", mocks.byName(t, "oi-worker-control-plane").Inputs["vars"].ObjectValue()["WEB_APP_URL"].StringValue())
	w := mocks.byName(t, "oi-worker-web").Inputs
	assert.False(t, w["workersDev"].BoolValue())
	domains := w["domains"].ArrayValue()
	require.Len(t, domains, 1)
	assert.Equal(t, map[string]any{"hostname": "inspect.example.com", "zoneId": strings.Repeat("ab", 16)}, domains[0].ObjectValue().Mappable())
	assert.NotContains(t, mocks.byName(t, "oi-worker-urls").Inputs["scripts"].ArrayValue(), resource.NewProperty("open-inspect-web-t1"))

	// webAppUrl still wins, as on Kubernetes.
	origin := "https://inspect.acme.test"
	args.WebAppURL = &origin
	_, url, _ = runWeb(t, args)
	assert.Equal(t, origin, url)
}

// TestWebOnCloudflareValidation: bad web inputs are refused before anything
// is registered, each naming its field.
func TestWebOnCloudflareValidation(t *testing.T) {
	t.Setenv("OPENINSPECT_CACHE_DIR", t.TempDir())
	missing := filepath.Join(t.TempDir(), "nowhere")
	empty := t.TempDir()
	for _, tc := range []struct {
		name string
		edit func(*OpenInspectArgs)
		want []string
	}{
		{"unknown platform", func(a *OpenInspectArgs) { p := "netlify"; a.Web.Platform = &p }, []string{`web.platform: must be "kubernetes", "cloudflare" or "vercel", got "netlify"`}},
		{"kubernetes fields", func(a *OpenInspectArgs) { a.Web.Image, a.Web.Namespace = "web:1", "oi" },
			[]string{`web.image: only for platform "kubernetes"`, `web.namespace: only for platform "kubernetes"`}},
		{"hostname", func(a *OpenInspectArgs) {
			a.Web.CustomDomain = &web.CustomDomain{Hostname: "https://x.example.com/", ZoneID: strings.Repeat("0", 32)}
		}, []string{`web.customDomain.hostname: "https://x.example.com/" is not a lower-case hostname`}},
		{"zone", func(a *OpenInspectArgs) {
			a.Web.CustomDomain = &web.CustomDomain{Hostname: "x.example.com", ZoneID: "example.com"}
		},
			[]string{`web.customDomain.zoneId: "example.com" is not a Cloudflare zone ID`}},
		{"bundle dir missing", func(a *OpenInspectArgs) { a.Web.BundleDir = &missing }, []string{"web.bundleDir: the web build directory " + missing + " is missing"}},
		{"bundle dir without manifest", func(a *OpenInspectArgs) { a.Web.BundleDir = &empty }, []string{"web.bundleDir: the web build in " + empty, "openinspect-web.json"}},
		{"app name", func(a *OpenInspectArgs) { n := "Acme\x07"; a.AppName = &n }, []string{"appName: cannot go into the web build: NEXT_PUBLIC_APP_NAME: holds the control character U+0007"}},
		{"worker named web", func(a *OpenInspectArgs) { a.Workers = []InstallationWorkerArgs{{Name: "web"}} },
			[]string{`workers[0].name: "web" is the web UI's Worker (open-inspect-web-t1)`}},
		{"custom domain on kubernetes", func(a *OpenInspectArgs) {
			a.Web = &web.Args{Image: "web:1", Namespace: "oi", CustomDomain: &web.CustomDomain{Hostname: "x.example.com", ZoneID: strings.Repeat("0", 32)}}
		}, []string{`web.customDomain: only for platform "cloudflare"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := cloudflareWeb(unmanaged(requiredArgs()))
			tc.edit(&args)
			mocks := &webMocks{}
			err := pulumi.RunErr(func(ctx *pulumi.Context) error {
				_, err := NewOpenInspect(ctx, "oi", args)
				return err
			}, pulumi.WithMocks("project", "stack", mocks))
			require.Error(t, err)
			for _, want := range tc.want {
				assert.Contains(t, err.Error(), want)
			}
			assert.Empty(t, mocks.registered(), "nothing is registered for an invalid spec")
		})
	}
}

// TestWebOnCloudflareFromEmbeddedArtefacts: with no upstream input the web
// build comes from the artefacts the plugin embeds (the release step puts
// the checkout's placeholder build in the set); web.bundleDir wins over it.
func TestWebOnCloudflareFromEmbeddedArtefacts(t *testing.T) {
	fixtureSet(t)
	args := cloudflareWeb(requiredArgs())
	args.Upstream = nil
	plan, emb, err := planEmbedded(t, args)
	require.NoError(t, err)
	require.NotNil(t, emb)
	require.NotNil(t, plan.Web)
	assert.Equal(t, filepath.Join(emb.dir, "packages", "web", ".open-next"), plan.Web.Build)
	assert.Equal(t, "the embedded artefacts", plan.Web.BuildField)

	own := filepath.Join(fixtureCheckout, webBuildPath)
	args.Web.BundleDir = &own
	plan, _, err = planEmbedded(t, args)
	require.NoError(t, err)
	assert.Equal(t, own, plan.Web.Build)
	assert.Equal(t, "web.bundleDir", plan.Web.BuildField)
}

// Rendering marks its own directory as used and removes renderings unused
// for a week and unfinished ones older than an hour, nothing else; a pruned
// rendering comes back byte for byte when it is needed again.
func TestRenderWebPrunesUnusedRenderings(t *testing.T) {
	root := t.TempDir()
	build := filepath.Join(fixtureCheckout, webBuildPath)
	secrets, err := webbuild.GenerateSecrets(strings.NewReader(strings.Repeat("s", 256)))
	require.NoError(t, err)
	in := webbuild.Installation{Values: webbuild.Values{WSURL: "wss://cp.example.workers.dev", SandboxProvider: "modal", AppName: "A"}, Secrets: secrets}
	first, err := renderWeb(build, root, in, false)
	require.NoError(t, err)
	worker, err := os.ReadFile(filepath.Join(first, "worker.js"))
	require.NoError(t, err)

	old := time.Now().Add(-8 * 24 * time.Hour)
	recent := time.Now().Add(-2 * time.Hour)
	mk := func(name string, at time.Time) string {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(p, 0o700))
		require.NoError(t, os.Chtimes(p, at, at))
		return p
	}
	stale := mk(strings.Repeat("a", 64), old)
	inUse := mk(strings.Repeat("b", 64), recent)
	crashed := mk(".render-123", recent)
	unfinished := mk(".render-456", time.Now())
	foreign := mk("not-a-rendering", old)
	require.NoError(t, os.Chtimes(first, old, old)) // unused for a week, but rendered again now

	again, err := renderWeb(build, root, in, false)
	require.NoError(t, err)
	assert.Equal(t, first, again)
	for _, gone := range []string{stale, crashed} {
		assert.NoDirExists(t, gone)
	}
	for _, kept := range []string{inUse, unfinished, foreign, again} {
		assert.DirExists(t, kept)
	}
	require.NoError(t, os.RemoveAll(again))
	third, err := renderWeb(build, root, in, false)
	require.NoError(t, err)
	rerendered, err := os.ReadFile(filepath.Join(third, "worker.js"))
	require.NoError(t, err)
	assert.Equal(t, worker, rerendered)
}
