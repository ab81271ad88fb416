package engine

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
)

// BenchmarkLocalRuntime deploys the demo installation (examples/yaml with the
// fixture checkout, web UI on Cloudflare, sandbox unmanaged) and measures the
// local Workers runtime it runs in: a cold start (workerd stopped, then the
// control plane's /health asked), a reconfiguration (a secret of the control
// plane changed through the Cloudflare API, then /health asked: workerd is
// restarted on the new configuration) and the resident memory workerd adds.
// Numbers only: `make bench` prints them.
func BenchmarkLocalRuntime(b *testing.B) {
	t := benchTB{b}
	requirePulumi(t)
	emu := startEmulator(t)
	pt := newInstallationWithWebTest(t, emu)
	editProgram(t, pt, withSandbox(unmanagedSandbox))
	up := previewUp(t, pt)
	cp, _ := up.Outputs["controlPlaneUrl"].Value.(string)
	require.NotEmpty(t, cp, "controlPlaneUrl output")
	cpURL, err := url.Parse(cp)
	require.NoError(t, err)
	script, _, _ := strings.Cut(cpURL.Hostname(), ".") // http://<script>.workers.localhost:PORT

	health := func() time.Duration {
		start := time.Now()
		res, err := loopback.Client(0).Get(cp + "/health")
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		return time.Since(start)
	}
	var stats struct {
		Starts      int     `json:"starts"`
		LastStartMs float64 `json:"last_start_ms"`
		LastWorkers int     `json:"last_workers"`
		RSSBytes    int64   `json:"rss_bytes"`
	}
	var cold, reconf, warm time.Duration
	var coldStart, reconfStart float64
	n := 0
	for b.Loop() {
		n++
		emu.admin(t, http.MethodDelete, "runtime", nil)
		cold += health()
		emu.admin(t, http.MethodGet, "runtime", &stats)
		coldStart += stats.LastStartMs
		warm += health()

		body := fmt.Sprintf(`{"name":"BENCH_MARK","text":"%d","type":"secret_text"}`, n)
		req, err := http.NewRequest(http.MethodPut, emu.cloudflareBaseURL()+"accounts/"+emulatorAccount+"/workers/scripts/"+script+"/secrets", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+emulatorToken)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		reconf += health()
		emu.admin(t, http.MethodGet, "runtime", &stats)
		reconfStart += stats.LastStartMs
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000/float64(n)) }
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "workers\tcold: workerd start ms\tcold: first /health ms\treconfigure: start ms\treconfigure: first /health ms\twarm /health ms\tworkerd RSS MiB\t\n")
	fmt.Fprintf(w, "%d\t%.1f\t%s\t%.1f\t%s\t%s\t%.1f\t\n", stats.LastWorkers, coldStart/float64(n), ms(cold),
		reconfStart/float64(n), ms(reconf), ms(warm), float64(stats.RSSBytes)/(1<<20))
	require.NoError(t, w.Flush())
	fmt.Printf("(the demo installation; averages of %d rounds on this machine)\n", n)
}
