package cloudflare_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// checkReasons runs Check and returns each failure's reason by field.
func checkReasons(t *testing.T, h *providertest.Harness, inputs map[string]any) map[string]string {
	t.Helper()
	check, err := h.Server.Check(p.CheckRequest{Urn: providertest.URN(cloudflare.WorkerToken, "w"), Inputs: providertest.Props(t, inputs)})
	require.NoError(t, err)
	reasons := family.ProblemsByField(check.Failures)
	return reasons
}

// randomText is incompressible text of n bytes.
func randomText(n int) string {
	raw := make([]byte, n)
	_, _ = rand.Read(raw)
	return base64.StdEncoding.EncodeToString(raw)[:n]
}

// TestWorkerCheckRefusesWhatCloudflareRefuses: the platform's limits are
// checked at preview, by the configured plan, before any call.
func TestWorkerCheckRefusesWhatCloudflareRefuses(t *testing.T) {
	h := providertest.NewHarness(t)
	base := func() map[string]any {
		return map[string]any{"name": "oi-limits", "content": "export default { fetch() { return new Response('ok') } }"}
	}

	t.Run("vars and secrets counted together by plan", func(t *testing.T) {
		in := base()
		vars := map[string]any{}
		for i := range 100 {
			vars[fmt.Sprintf("V%03d", i)] = "x"
		}
		in["vars"] = vars
		in["secrets"] = map[string]any{"S1": "a", "S2": "b"}
		assert.Empty(t, checkReasons(t, h, in), "102 fit the paid plan's 128")

		h.Configure(t, map[string]property.Value{"workersPlan": property.New("free")})
		t.Cleanup(func() { h.Configure(t, map[string]property.Value{"workersPlan": property.New("paid")}) })
		assert.Equal(t, "102 vars and secrets: the Workers free plan allows 64 per Worker (secrets and text combined)",
			checkReasons(t, h, in)["vars"])
	})

	t.Run("one variable over 5 KB, secret value never quoted", func(t *testing.T) {
		in := base()
		big := randomText(5*1024 + 1)
		in["vars"] = map[string]any{"BIG": big, "SMALL": strings.Repeat("x", 5*1024)}
		in["secrets"] = map[string]any{"HUGE_SECRET": big}
		reasons := checkReasons(t, h, in)
		assert.Equal(t, "BIG is over Cloudflare's 5 KiB limit for one variable", reasons["vars.BIG"])
		assert.Equal(t, "HUGE_SECRET is over Cloudflare's 5 KiB limit for one variable", reasons["secrets.HUGE_SECRET"])
		assert.NotContains(t, reasons, "vars.SMALL")
		for _, r := range reasons {
			assert.NotContains(t, r, big[:32])
		}
	})

	t.Run("size after compression when so configured", func(t *testing.T) {
		in := base()
		in["content"] = "export default {};\n// " + randomText(2<<20)
		assert.Empty(t, checkReasons(t, h, in), "2 MiB is under the default 64 MiB")

		h.Configure(t, map[string]property.Value{"workerSizeLimit": property.New("1MiB compressed")})
		t.Cleanup(func() { h.Configure(t, map[string]property.Value{"workerSizeLimit": property.New("64MiB")}) })
		reason := checkReasons(t, h, in)["content"]
		assert.Contains(t, reason, "after gzip; Cloudflare refuses Workers over 1 MiB (10027): see openinspect:workerSizeLimit")

		// Text that compresses well passes the same compressed limit.
		in["content"] = "export default {};\n// " + strings.Repeat("a", 4<<20)
		assert.Empty(t, checkReasons(t, h, in))
	})

	t.Run("Durable Object class not exported by the main module", func(t *testing.T) {
		in := base()
		in["mainModule"] = "index.js"
		in["content"] = "export * from './do.js';\nclass Hidden {}\nexport default {};"
		in["modules"] = map[string]any{"do.js": "export class SessionDO {}"}
		in["durableObjects"] = providertest.List(
			map[string]any{"binding": "SESSION", "className": "SessionDO"},
			map[string]any{"binding": "HIDDEN", "className": "Hidden"},
			map[string]any{"binding": "OTHER", "className": "Elsewhere", "scriptName": "another-worker"},
		)
		reasons := checkReasons(t, h, in)
		assert.Equal(t, map[string]string{"durableObjects[1].className": "the main module index.js does not export class Hidden; " +
			"Cloudflare refuses the binding (10061) and its migration (10070)"}, reasons)
	})

	t.Run("bad plan names the key", func(t *testing.T) {
		err := h.Server.Configure(p.ConfigureRequest{Args: h.Config().Set("workersPlan", property.New("pro"))})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `openinspect:workersPlan: "pro" is not a Workers plan: use free or paid`)
		// A failed Configure keeps the decoded value: configure a good one.
		h.Configure(t, map[string]property.Value{"workersPlan": property.New("paid")})
	})
	assert.Zero(t, h.Emu.CloudflareCalls(), "every check is made before any call")
}
