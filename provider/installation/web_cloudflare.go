package installation

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/esm"
	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/provider/installation/webbuild"
	"github.com/openinspect/pulumi-openinspect/provider/internal/artefacts"
)

// The web UI on Cloudflare (web.platform cloudflare): upstream's OpenNext
// build as a Worker with static assets. The facts are upstream's at the pin
// (terraform/environments/production/web-cloudflare.tf, the wrangler config
// it generates, and packages/web/wrangler.toml); the build is the placeholder
// build webbuild makes right for this installation.

const (
	// webLogical is the web Worker's logical name: <prefix>-web-<deployment>.
	webLogical = "web"
	// webBuildPath is where a checkout (or the embedded artefacts) holds
	// the placeholder OpenNext build, with its webbuild manifest.
	webBuildPath = artefacts.WebBuildDir
	// webCompatibilityDate is upstream's web's, not the other workers'.
	webCompatibilityDate = "2025-08-15"
	// The web's bindings: its assets, the control plane (service binding),
	// and the service-auth secret, the control plane's SERVICE_AUTH_SECRET_WEB.
	webAssetsBinding       = "ASSETS"
	webControlPlaneBinding = "CONTROL_PLANE_WORKER"
	webServiceAuthSecret   = "SERVICE_AUTH_SECRET"
	webServiceAuthKey      = "serviceAuthSecretWeb"
	// webMainModule is the module name the build's worker is uploaded as.
	webMainModule = "worker.js"
	// webRenderDir is where rendered builds go under the provider's cache.
	webRenderDir = "web"
)

var webCompatibilityFlags = []string{"nodejs_compat", "global_fetch_strictly_public"}

// webBuildKeys are the keys Next fixes per build, generated once per
// installation as GeneratedSecret children (so they are Pulumi secrets and
// never change by themselves) and put into the build by webbuild: shipped in
// the public plugin, the build's own would be every installation's. Their
// shapes are the build's (webbuild.Secrets).
var webBuildKeys = []struct {
	name, alphabet string
	length         int
	set            func(*webbuild.Secrets, string)
}{
	{"webServerActionsEncryptionKey", "base64", 32, func(s *webbuild.Secrets, v string) { s.ServerActionsEncryptionKey = v }},
	{"webPreviewModeId", "hex", 32, func(s *webbuild.Secrets, v string) { s.PreviewModeID = v }},
	{"webPreviewModeSigningKey", "hex", 64, func(s *webbuild.Secrets, v string) { s.PreviewModeSigningKey = v }},
	{"webPreviewModeEncryptionKey", "hex", 64, func(s *webbuild.Secrets, v string) { s.PreviewModeEncryptionKey = v }},
}

// plannedWeb is the web Worker.
type plannedWeb struct {
	Name string
	// Build is the placeholder build's directory, BuildField the input it
	// came from (for messages).
	Build, BuildField string
	// Pinned: the build is the embedded artefacts', made at the pin.
	Pinned       bool
	Manifest     *webbuild.Manifest
	CustomDomain *web.CustomDomain
}

// workersDev: upstream turns workers.dev off when a custom domain serves the web.
func (w *plannedWeb) workersDev() bool { return w.CustomDomain == nil }

// resolveWeb plans the web Worker when the spec puts the web on Cloudflare:
// it finds the placeholder build (web.bundleDir, else the checkout's or the
// embedded artefacts'), reads its manifest, and checks that this
// installation's values can be put into it, all before anything is
// registered. The WebSocket URL is checked when it is known (it is the
// control plane's URL, which WorkerUrls reads from the account).
func resolveWeb(plan *installPlan, s *spec, emb *embedded) []error {
	if s.Web == nil || s.Web.OnPlatform() != web.PlatformCloudflare {
		return nil
	}
	var errs problems
	for i, w := range s.Workers {
		if w.Name == webLogical {
			errs.add(fmt.Sprintf("workers[%d].name", i), "%q is the web UI's Worker (%s) with web.platform %q; give this worker another name",
				webLogical, plan.resourceName(webLogical), web.PlatformCloudflare)
		}
	}
	dir, field := s.WebBundleDir, "web.bundleDir"
	if dir == "" {
		checkout := s.Upstream.Checkout
		if checkout == "" {
			errs.add("web", "no web build to deploy: this plugin embeds no upstream artefacts; set upstream.checkout to a checkout "+
				"holding the placeholder OpenNext build under %s, or web.bundleDir", webBuildPath)
			return errs
		}
		dir, field = filepath.Join(checkout, filepath.FromSlash(webBuildPath)), "upstream.checkout"
		if emb != nil && checkout == emb.dir {
			field = embeddedField
		}
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		errs.add(field, "the web build directory %s is missing: it holds the placeholder OpenNext build and its %s "+
			"(the release step builds it; see docs/component.md, Web UI on Cloudflare)", dir, webbuild.ManifestFile)
		return errs
	}
	m, err := webbuild.ReadManifest(os.DirFS(dir))
	if err != nil {
		errs.add(field, "the web build in %s: %v", dir, err)
		return errs
	}
	// Each value the build inlines, checked alone so the message names the
	// input it came from.
	for _, v := range []struct {
		field  string
		values webbuild.Values
	}{
		{"appName", webbuild.Values{AppName: plan.AppName}},
		{"appIconUrl", webbuild.Values{AppIconURL: plan.AppIconURL}},
		{"sandbox.provider", webbuild.Values{SandboxProvider: plan.SandboxProvider}},
	} {
		if err := v.values.Check(m); err != nil {
			errs.add(v.field, "cannot go into the web build: %v", err)
		}
	}
	plan.Web = &plannedWeb{Name: plan.resourceName(webLogical), Build: dir, BuildField: field, Manifest: m, CustomDomain: s.Web.CustomDomain,
		Pinned: field == embeddedField}
	return errs
}

// embeddedField names the embedded set in messages and marks its web build.
const embeddedField = "the embedded artefacts"

// webOnCloudflare registers the web Worker: its per-build keys, then the
// Worker with the build rendered for this installation. The rendering waits
// for the WebSocket URL and the keys; its directory is named by the
// result's digest, so an unchanged installation renders the same path and
// the same bytes, and the Worker uploads nothing.
func (b *installer) webOnCloudflare(controlPlaneURL pulumi.StringOutput, adopt pulumi.BoolInput) error {
	w, plan := b.plan.Web, b.plan
	cache, err := cacheRoot(b.ctx.Context())
	if err != nil {
		return err
	}
	inputs := []any{b.workerURL(controlPlane, urlWebSocket)}
	for _, k := range webBuildKeys {
		g, err := register(b, "GeneratedSecret", "secret-"+k.name, pulumi.Map{
			"length": pulumi.Int(k.length), "alphabet": pulumi.String(k.alphabet),
		}, &generatedSecretChild{})
		if err != nil {
			return err
		}
		b.generated[k.name] = g
		inputs = append(inputs, g.Value)
	}
	values := webbuild.Values{SandboxProvider: plan.SandboxProvider, AppName: plan.AppName, AppIconURL: plan.AppIconURL}
	rendered := pulumi.All(inputs...).ApplyT(func(v []any) (string, error) {
		in := webbuild.Installation{Values: values}
		in.Values.WSURL = v[0].(string)
		for i, k := range webBuildKeys {
			k.set(&in.Secrets, v[i+1].(string))
		}
		return renderWeb(w.Build, filepath.Join(cache, webRenderDir), in, w.Pinned)
	}).(pulumi.StringOutput)
	// The path is named by a digest over the rendered files, the worker
	// module with the keys among them: a SHA-256 over 32 random bytes and
	// more reveals nothing of them, and a secret path would make the
	// Worker's script and assets inputs secret, hiding what changed.
	dir := pulumi.Unsecret(rendered).(pulumi.StringOutput)
	script := dir.ApplyT(func(d string) pulumi.AssetOrArchive {
		return pulumi.NewFileAsset(filepath.Join(d, filepath.FromSlash(w.Manifest.Worker)))
	}).(pulumi.AssetOrArchiveOutput)
	assetsDir := dir.ApplyT(func(d string) string { return filepath.Join(d, filepath.FromSlash(w.Manifest.Assets)) }).(pulumi.StringOutput)

	props := pulumi.Map{
		"name":               pulumi.String(w.Name),
		"script":             script,
		"mainModule":         pulumi.String(webMainModule),
		"compatibilityDate":  pulumi.String(webCompatibilityDate),
		"compatibilityFlags": pulumi.ToStringArray(webCompatibilityFlags),
		"workersDev":         pulumi.Bool(w.workersDev()),
		"adoptExisting":      adopt,
		"services": pulumi.Array{pulumi.Map{
			"binding": pulumi.String(webControlPlaneBinding),
			"service": pulumi.String(plan.scriptName(controlPlane)),
		}},
		// Upstream's vars: the server code reads CONTROL_PLANE_URL, and the
		// NEXT_PUBLIC_* are what the build was made with.
		"vars": pulumi.StringMap{
			"CONTROL_PLANE_URL":         controlPlaneURL,
			webbuild.VarWSURL:           b.workerURL(controlPlane, urlWebSocket),
			webbuild.VarSandboxProvider: pulumi.String(plan.SandboxProvider),
			webbuild.VarAppName:         pulumi.String(plan.AppName),
			webbuild.VarAppIconURL:      pulumi.String(plan.AppIconURL),
		},
		"secrets": pulumi.ToSecret(pulumi.StringMap{webServiceAuthSecret: b.generated[webServiceAuthKey].Value}),
		"assets": pulumi.Map{
			"directory": assetsDir,
			"binding":   pulumi.String(webAssetsBinding),
		},
	}
	if d := w.CustomDomain; d != nil {
		props["domains"] = pulumi.Array{pulumi.Map{"hostname": pulumi.String(d.Hostname), "zoneId": pulumi.String(d.ZoneID)}}
	}
	// No dependency on the control plane's Worker: its URL comes from
	// WorkerUrls, so the web renders its build and sends its assets while
	// the control plane waits for the database and the sandbox; the Worker
	// is uploaded without the binding to the control plane, then again with
	// it the moment the control plane exists (as for a cycle of bindings).
	_, err = register(b, "Worker", "worker-"+webLogical, b.owned(props), &workerChild{})
	return err
}

// renderWeb writes the build made right for one installation under root,
// in a directory named by the result's digest, and returns that directory.
// A directory of that name already holds exactly these files (it is only
// ever made by a rename of a complete rendering), so it is kept. The
// directories are private: the worker module holds the installation's keys.
// The worker module of a pinned build is vouched for (esm.Vouch): the
// rendering only replaces string literals, each kept valid in its context,
// so the Worker's check need not parse it.
func renderWeb(build, root string, in webbuild.Installation, pinned bool) (string, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("web: %w", err)
	}
	tmp, err := os.MkdirTemp(root, ".render-")
	if err != nil {
		return "", fmt.Errorf("web: %w", err)
	}
	res, err := webbuild.Render(os.DirFS(build), in, webbuild.Dir(tmp))
	if err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("web: rendering the build in %s for this installation: %w", build, err)
	}
	final := filepath.Join(root, res.Digest)
	if err := os.Rename(tmp, final); err != nil {
		_ = os.RemoveAll(tmp)
		if _, statErr := os.Stat(filepath.Join(final, filepath.FromSlash(path.Clean(res.Worker)))); statErr != nil {
			return "", fmt.Errorf("web: %w", errors.Join(err, statErr))
		}
	}
	now := time.Now()
	if err := os.Chtimes(final, now, now); err != nil {
		return "", fmt.Errorf("web: %w", err)
	}
	pruneRenderedWeb(root, now)
	if pinned {
		module, err := os.ReadFile(filepath.Join(final, filepath.FromSlash(path.Clean(res.Worker))))
		if err != nil {
			return "", fmt.Errorf("web: %w", err)
		}
		esm.Vouch(module)
	}
	return final, nil
}

// webRenderKept is how long a rendering nobody used stays in the cache. A
// rendering is about the size of the build (tens of MB for upstream's web)
// and every changed value makes a new one, so the directory would only grow;
// each use marks its own as used, and any pruned one is rendered again, byte
// for byte, when it is next needed (the output is a function of the build
// and the installation's values). Unfinished renderings (a killed plugin)
// go after an hour.
const (
	webRenderKept       = 7 * 24 * time.Hour
	webRenderUnfinished = time.Hour
)

// pruneRenderedWeb removes the renderings under root unused for
// webRenderKept, and unfinished ones. It is best effort: a directory another
// plugin is renaming or using is left to the next run.
func pruneRenderedWeb(root string, now time.Time) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !e.IsDir() {
			continue
		}
		age := now.Sub(info.ModTime())
		if (strings.HasPrefix(e.Name(), ".render-") && age > webRenderUnfinished) || (isDigest(e.Name()) && age > webRenderKept) {
			_ = os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}

// isDigest says whether name is a rendering's name (a hex SHA-256).
func isDigest(name string) bool {
	if len(name) != 64 {
		return false
	}
	for _, r := range name {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}
