package cloudflare_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// TestWorkerCheckRefusesWhatOnlyDeployingRevealed: inputs that Cloudflare or
// the runtime refuses only after the installation's other objects exist
// (issue 34), refused by Check with the field named.
func TestWorkerCheckRefusesWhatOnlyDeployingRevealed(t *testing.T) {
	h := providertest.NewHarness(t)
	base := func(extra map[string]any) map[string]any {
		in := map[string]any{"name": "oi-bad", "content": "export default { fetch() { return new Response('ok') } }"}
		for k, v := range extra {
			in[k] = v
		}
		return in
	}
	future := time.Now().UTC().AddDate(0, 0, 3).Format(time.DateOnly)
	for _, tc := range []struct {
		name  string
		in    map[string]any
		field string
		want  string
	}{
		{"future compatibility date", base(map[string]any{"compatibilityDate": future}), "compatibilityDate", future + " is in the future"},
		{"not a calendar date", base(map[string]any{"compatibilityDate": "2026-02-30"}), "compatibilityDate", `"2026-02-30" is not a calendar date`},
		{"wasm main module", base(map[string]any{"mainModule": "index.wasm"}), "mainModule", `"index.wasm" is not a JavaScript module`},
		{"text main module", base(map[string]any{"mainModule": "worker.txt"}), "mainModule", `"worker.txt" is not a JavaScript module`},
		{"main module climbing out", base(map[string]any{"mainModule": "../index.js"}), "mainModule", `"../index.js" is not a module name inside the upload`},
		{"reserved var name", base(map[string]any{"vars": map[string]any{"this": "x"}}), "vars.this", `"this" is a JavaScript reserved word`},
		{"reserved r2 binding", base(map[string]any{"r2Buckets": []any{map[string]any{"binding": "delete", "bucketName": "oi-media"}}}),
			"r2Buckets[0].binding", `"delete" is a JavaScript reserved word`},
		{"one queue consumed twice", base(map[string]any{"queueConsumers": []any{map[string]any{"queueId": "q1"}, map[string]any{"queueId": "q1"}}}),
			"queueConsumers[1].queueId", "the worker already consumes this queue (queueConsumers[0])"},
		{"service-worker syntax", base(map[string]any{"content": "addEventListener('fetch', e => e.respondWith(new Response('ok')))"}),
			"content", "the main module index.js is in service-worker syntax"},
		{"module exporting nothing", base(map[string]any{"content": "const handler = 1;"}), "content", "the main module index.js exports nothing"},
		{"misspelt compatibility flag", base(map[string]any{"compatibilityFlags": []any{"nodejs_compat", "nodejs_compatt"}}),
			"compatibilityFlags[1]", `"nodejs_compatt" is not a compatibility flag of the Workers runtime (workerd 2026-11-17): did you mean "nodejs_compat"?`},
		{"made-up compatibility flag", base(map[string]any{"compatibilityFlags": []any{"make_it_fast"}}),
			"compatibilityFlags[0]", `"make_it_fast" is not a compatibility flag of the Workers runtime (workerd 2026-11-17): see https://developers.cloudflare.com/workers/configuration/compatibility-flags/`},
		{"syntax error", base(map[string]any{"content": "export default {\n  fetch() { return new Response('ok' }\n};"}),
			"content", `the module index.js is not valid JavaScript at line 2, column 38: Expected ")" but found "}"`},
		{"module key climbing out", base(map[string]any{"modules": map[string]any{"../../x.js": "export const x = 1;"}}),
			`modules["../../x.js"]`, `"../../x.js" is not a module name inside the upload`},
		{"absolute module key", base(map[string]any{"modules": map[string]any{"/lib/x.mjs": "export const x = 1;"}}),
			`modules["/lib/x.mjs"]`, `"/lib/x.mjs" is not a module name inside the upload`},
		{"duplicated cron", base(map[string]any{"crons": []any{"*/5 * * * *", "0 3 * * *", "*/5 * * * *"}}),
			"crons[2]", `"*/5 * * * *" repeats crons[0]: Cloudflare refuses a schedule that lists an expression twice`},
		{"cron with a no-break space", base(map[string]any{"crons": []any{"0\u00a0* * * *"}}),
			"crons[0]", `separates its fields with something other than single spaces (a tab, a no-break space, or spaces around it): write "0 * * * *"`},
		{"cron with tabs", base(map[string]any{"crons": []any{"7,37\t*  * * *"}}),
			"crons[0]", `write "7,37 * * * *"`},
		{"syntax error in another module", base(map[string]any{"modules": map[string]any{"lib/util.mjs": "export const x = ;"}}),
			`modules["lib/util.mjs"]`, "the module lib/util.mjs is not valid JavaScript at line 1, column 18"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reasons := checkReasons(t, h, tc.in)
			require.Contains(t, reasons, tc.field, "%v", reasons)
			assert.Contains(t, reasons[tc.field], tc.want)
		})
	}

	t.Run("crons over the free plan's account limit", func(t *testing.T) {
		crons := func(n int) map[string]any {
			list := make([]any, n)
			for i := range list {
				list[i] = fmt.Sprintf("%d * * * *", i)
			}
			return base(map[string]any{"crons": list})
		}
		assert.Empty(t, checkReasons(t, h, crons(6)), "six fit the paid plan's 250")
		h.Configure(t, map[string]property.Value{"workersPlan": property.New("free")})
		t.Cleanup(func() { h.Configure(t, map[string]property.Value{"workersPlan": property.New("paid")}) })
		assert.Empty(t, checkReasons(t, h, crons(5)), "five fit the free plan")
		assert.Equal(t, "6 cron triggers: the Workers free plan allows 5 per account", checkReasons(t, h, crons(6))["crons"])
	})

	t.Run("a valid module with a past date passes", func(t *testing.T) {
		assert.Empty(t, checkReasons(t, h, base(map[string]any{"compatibilityDate": "2025-01-01", "mainModule": "src/worker.mjs",
			"compatibilityFlags": []any{"nodejs_compat", "global_fetch_strictly_public", "no_nodejs_compat_v2"}})))
	})
}

// TestSecretContentNeverInAnError: a Worker's content may be a secret; the
// check that refuses it (service-worker syntax, a module exporting nothing,
// a syntax error)
// says what is wrong in a sentence and never quotes the source.
func TestSecretContentNeverInAnError(t *testing.T) {
	h := providertest.NewHarness(t)
	const token = "sk_live_do_not_print_9f8e7d"
	for _, content := range []string{
		"addEventListener('fetch', () => '" + token + "')",
		"const " + token + " = 1;",
		token,
		"export default { fetch() { return " + token + " " + token + "; } };",
	} {
		inputs := providertest.Props(t, map[string]any{"name": "oi-secret", "content": property.New(content).WithSecret(true)})
		check, err := h.Server.Check(p.CheckRequest{Urn: providertest.URN(cloudflare.WorkerToken, "w"), Inputs: inputs})
		require.NoError(t, err)
		require.NotEmpty(t, check.Failures, "the content is refused")
		for _, f := range check.Failures {
			assert.True(t, strings.HasPrefix(f.Reason, "content: "), f.Reason)
			assert.NotContains(t, f.Reason, token, "the secret source is quoted")
			assert.NotContains(t, f.Property, token)
		}
	}
}

// Asset keys are URL paths; an empty directory publishes nothing.
func TestWorkerAssetsRefusedBeforeUpload(t *testing.T) {
	h := providertest.NewHarness(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "index.html")
	require.NoError(t, os.WriteFile(file, []byte("<p>hi</p>"), 0o644))
	reasons := checkReasons(t, h, map[string]any{"name": "oi-assets", "assets": map[string]any{"files": map[string]any{
		"/../../etc/passwd": file, "/ok.html": file, `\win\path`: file}}})
	assert.Contains(t, reasons[`assets.files["/../../etc/passwd"]`], `"/../../etc/passwd" has a '.' or '..' segment`)
	assert.Contains(t, reasons[`assets.files["\\win\\path"]`], "holds a backslash")
	assert.NotContains(t, reasons, `assets.files["/ok.html"]`)

	empty := t.TempDir()
	reasons = checkReasons(t, h, map[string]any{"name": "oi-assets", "assets": map[string]any{"directory": empty}})
	assert.Contains(t, reasons["assets.directory"], "no asset files to publish")
	assert.Empty(t, checkReasons(t, h, map[string]any{"name": "oi-assets", "assets": map[string]any{"directory": dir}}))
}
