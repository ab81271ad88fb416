package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckFailuresPrintNoGoValue previews a lone Worker whose nested input
// its Check refuses, through the real pulumi CLI: the engine prints a failure
// that names a property with that property's input as a Go value ({<nil>}
// for a nested path, {map[...]} for a map), so the provider's failures name
// their field in the reason instead, and the CLI prints only the sentence.
func TestCheckFailuresPrintNoGoValue(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	dir := t.TempDir()
	program := `name: check-messages
runtime: yaml
resources:
  worker:
    type: openinspect:index:Worker
    properties:
      name: oi-check-messages
      content: "export default { fetch() { return new Response('ok') } }"
      observability:
        enabled: true
        headSamplingRate: 2
      vars:
        class: reserved
        FINE: value
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(program), 0o644))
	pt := newYAMLTest(t, dir, emu)
	_, err := pt.CurrentStack().Preview(t.Context())
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "has a problem: observability.headSamplingRate: 2 is not a sampling rate")
	assert.Contains(t, msg, `has a problem: vars.class: "class" is a JavaScript reserved word`)
	for _, goValue := range []string{"{<nil>}", "map[", "&{", "value {"} {
		assert.NotContains(t, msg, goValue, "the CLI prints a Go value")
	}
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "a refused check makes no call: %v", counts)
}

// TestPreviewWarnsOfWhatCloudflareIgnores previews a Worker with static
// assets whose _headers and _redirects hold rules Cloudflare ignores, and a
// tail consumer the account lacks: the CLI prints a warning for each,
// naming the file and the line, or the field, and the preview goes on
// (Cloudflare accepts the upload; the rules never apply, the events go
// nowhere). A service target neither the account nor the program has is
// warned about too; two workers of the program binding each other are not.
// An asset file outside the program's directory is published, with a
// warning naming it.
func TestPreviewWarnsOfWhatCloudflareIgnores(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	require.NoError(t, os.MkdirAll(site, 0o755))
	for name, text := range map[string]string{
		"index.html": "<p>hi</p>",
		"_headers":   "/*\n  X-Frame-Options DENY\n",
		"_redirects": "/old /new 404\n/fine /ok 301\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(site, name), []byte(text), 0o644))
	}
	elsewhere := filepath.Join(t.TempDir(), "hostname")
	require.NoError(t, os.WriteFile(elsewhere, []byte("box"), 0o644))
	program := `name: asset-rules
runtime: yaml
resources:
  stray:
    type: openinspect:index:Worker
    properties:
      name: oi-stray-asset
      assets:
        files:
          /host.txt: ` + elsewhere + `
  site:
    type: openinspect:index:Worker
    properties:
      name: oi-asset-rules
      assets:
        directory: site
      tailConsumers:
        - service: oi-nowhere
  lonely:
    type: openinspect:index:Worker
    properties:
      name: oi-lonely
      content: "export default { fetch() { return new Response('lonely') } };"
      services:
        - binding: GONE
          service: oi-gone
  pairA:
    type: openinspect:index:Worker
    properties:
      name: oi-pair-a
      content: "export default { fetch(r, env) { return env.B.fetch(r) } };"
      services:
        - binding: B
          service: oi-pair-b
  pairB:
    type: openinspect:index:Worker
    properties:
      name: oi-pair-b
      content: "export default { fetch(r, env) { return new Response('b') } };"
      services:
        - binding: A
          service: oi-pair-a
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(program), 0o644))
	pt := newYAMLTest(t, dir, emu)
	preview, err := pt.CurrentStack().Preview(t.Context())
	require.NoError(t, err)
	assert.Contains(t, preview.StdOut, `worker oi-asset-rules: assets _headers line 2: "X-Frame-Options DENY" is not a header (write Name: value): Cloudflare ignores this rule`)
	assert.Contains(t, preview.StdOut, `worker oi-asset-rules: assets _redirects line 1: "404" is not a redirect status (200, 301, 302, 303, 307 or 308): Cloudflare ignores this rule`)
	assert.NotContains(t, preview.StdOut, "line 2: the", "the valid redirect is not warned about")
	assert.Contains(t, preview.StdOut, `worker oi-stray-asset: assets.files["/host.txt"] `+elsewhere)
	assert.Contains(t, preview.StdOut, "resolves outside the program's directory")
	// pulumitest runs a copy of dir; the site is copied with it and named
	// relative to the program, so it is inside it.
	assert.NotContains(t, preview.StdOut, "worker oi-asset-rules: assets.directory", "a site inside the program is not warned about")
	assert.Contains(t, preview.StdOut, "tailConsumers[0].service: account "+emulatorAccount+" has no worker oi-nowhere yet; "+
		"unless this program creates it, the trace events of oi-asset-rules go nowhere")
	assert.Contains(t, preview.StdOut, "services[0].service: account "+emulatorAccount+" has no worker oi-gone and no worker "+
		"of this program is named so; unless something else creates it during the up, the up waits 3 minutes for it and then fails")
	assert.NotContains(t, preview.StdOut, "has no worker oi-pair-", "two workers of the program binding each other are not warned about")
}

// TestPreviewRefusesPlainHTTPCloudflareAPI previews a D1 database with
// openinspect:cloudflareApiBaseUrl given as plain http to another host: the
// CLI's preview fails naming the key, before anything is asked of
// Cloudflare (the token would have travelled unencrypted with the first
// read), and the token is nowhere in what it prints.
func TestPreviewRefusesPlainHTTPCloudflareAPI(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	dir := t.TempDir()
	program := `name: plain-http-api
runtime: yaml
resources:
  db:
    type: openinspect:index:D1Database
    properties:
      name: oi-plain-http
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(program), 0o644))
	pt := newYAMLTest(t, dir, emu)
	pt.SetConfig(t, "openinspect:cloudflareApiBaseUrl", "http://cloudflare-gateway.example/client/v4/")
	_, err := pt.CurrentStack().Preview(t.Context())
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "openinspect:cloudflareApiBaseUrl")
	assert.Contains(t, msg, "Cloudflare API token would travel unencrypted")
	assert.NotContains(t, msg, emulatorToken)
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "a refused configuration makes no call: %v", counts)
}
