package wrangler_test

// The full installation's wall time against its critical path: `pulumi up`
// of examples/yaml (the whole OpenInspect component, with this project's
// fixture upstream checkout) through the real engine and plugin against an
// in-process emulator that timestamps every request. The critical path is
// the chain nothing else can overlap: from the D1 create's start to the end
// of the control plane's upload, which needs the database's ID and runs
// after the migrations. It needs the pulumi CLI and YAML plugin (make
// pulumi-tools) and the plugin binary (make provider); without them the row
// says what is missing.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/providertest/pulumitest/opttest"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// requestLog keeps each request's start and end, from the emulator's log.
type requestLog struct {
	mu      sync.Mutex
	entries []loggedRequest
}

type loggedRequest struct {
	method, path string
	start, end   time.Time
}

// logf receives the emulator's "METHOD path -> status (duration)" lines.
func (l *requestLog) logf(format string, args ...any) {
	end := time.Now()
	if len(args) < 4 {
		return
	}
	method, _ := args[0].(string)
	path, _ := args[1].(string)
	dur, _ := args[3].(time.Duration)
	l.mu.Lock()
	l.entries = append(l.entries, loggedRequest{method: method, path: path, start: end.Add(-dur), end: end})
	l.mu.Unlock()
}

// benchPT adapts *testing.B to pulumitest, which wants a deadline.
type benchPT struct{ *testing.B }

func (benchPT) Deadline() (time.Time, bool) { return time.Time{}, false }

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// fullInstallation returns the installation's row and its critical path's,
// or one row saying why it did not run.
func fullInstallation(b *testing.B) []benchRow {
	const op = "full installation (pulumi up, examples/yaml)"
	path := os.Getenv("PATH") + string(os.PathListSeparator) + toolchain.BinDir()
	b.Setenv("PATH", path)
	var missing []string
	for _, tool := range []string{"pulumi", "pulumi-language-yaml"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	// The plugin make provider just built, never one found elsewhere on PATH
	// or in the plugin cache: an older build would lack newer inputs.
	plugin := filepath.Join(repoRoot(), "bin", "pulumi-resource-openinspect")
	if _, err := os.Stat(plugin); err != nil {
		missing = append(missing, plugin)
	}
	if len(missing) > 0 {
		return []benchRow{{op: op, latency: "0 ms", path: "engine",
			note: "not run: " + strings.Join(missing, ", ") + " missing (make pulumi-tools, make provider)"}}
	}

	var log requestLog
	emu, err := emulator.Start(emulator.Options{Logf: log.logf})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = emu.Close() })

	pt := pulumitest.NewPulumiTest(benchPT{b}, filepath.Join(repoRoot(), "examples", "yaml"),
		opttest.LocalProviderPath("openinspect", filepath.Dir(plugin)),
		opttest.SkipInstall(),
		opttest.DisableGrpcLog(),
		opttest.Env("PULUMI_SKIP_UPDATE_CHECK", "true"),
	)
	ctx := b.Context()
	stack := pt.CurrentStack()
	for key, value := range map[string]auto.ConfigValue{
		"openinspect:cloudflareApiToken":   {Value: emulator.DefaultToken, Secret: true},
		"openinspect:cloudflareAccountId":  {Value: emulator.DefaultAccountID},
		"openinspect:cloudflareApiBaseUrl": {Value: emu.CloudflareBaseURL()},
		"openinspect:workersDevBaseUrl":    {Value: emu.URL() + "/__workers"},
		// The example deploys the sandbox too: the emulator's Modal, through
		// the real Modal CLI in the tools cache's virtual environment.
		"openinspect:modalServerUrl":   {Value: emu.URL()},
		"openinspect:modalTokenId":     {Value: emulator.DefaultModalTokenID},
		"openinspect:modalTokenSecret": {Value: emulator.DefaultModalTokenSecret, Secret: true},
		"openinspect:pythonPath":       {Value: toolchain.Python(b)},
		"openinspect:cacheDir":         {Value: toolchain.CacheDir()},
		"deploymentName":               {Value: "bench"},
		"upstreamCheckout":             {Value: filepath.Join(repoRoot(), "tests", "fixtures", "upstream")},
		"anthropicApiKey":              {Value: "sk-ant-bench-0123456789abcdef", Secret: true},
		"githubAppPrivateKey":          {Value: "-----BEGIN PRIVATE KEY-----bench-key", Secret: true},
		"browserAuthSecret":            {Value: "browser-auth-secret-with-at-least-32-characters", Secret: true},
		"tokenEncryptionKey":           {Value: "dG9rZW4tZW5jcnlwdGlvbi1rZXktb2YtMzItYnl0ZXM=", Secret: true},
		"repoSecretsEncryptionKey":     {Value: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", Secret: true},
		// What upstream's gates require beyond examples/yaml's placeholders.
		"githubOAuthClientSecret": {Value: "oi-bench-oauth-client-secret", Secret: true},
		"slackBotToken":           {Value: "xoxb-oi-bench-placeholder", Secret: true},
		"slackSigningSecret":      {Value: "oi-bench-slack-signing-secret", Secret: true},
	} {
		if err := stack.SetConfig(ctx, key, value); err != nil {
			b.Fatal(err)
		}
	}
	emu.ResetCounts()
	start := time.Now()
	pt.Up(benchPT{b})
	wall := time.Since(start)
	calls := emu.CloudflareCalls()

	// The chain: D1 create -> migrations -> the control plane's upload.
	var d1Start, cpEnd time.Time
	migrations := 0
	log.mu.Lock()
	for _, e := range log.entries {
		switch {
		case e.method == "POST" && strings.HasSuffix(e.path, "/d1/database") && d1Start.IsZero():
			d1Start = e.start
		case e.method == "POST" && strings.HasSuffix(e.path, "/query"):
			migrations++
		case e.method == "PUT" && strings.HasSuffix(e.path, "/workers/scripts/open-inspect-control-plane-bench"):
			cpEnd = e.end
		}
	}
	log.mu.Unlock()
	rows := []benchRow{{op: op, latency: "0 ms", path: "engine", calls: calls, wall: wall,
		note: "engine start, plugin, every resource"}}
	if d1Start.IsZero() || cpEnd.IsZero() {
		return append(rows, benchRow{op: "  critical path inside it", latency: "0 ms", path: "engine", note: "not found in the request log"})
	}
	critical := cpEnd.Sub(d1Start)
	return append(rows, benchRow{op: "  critical path inside it", latency: "0 ms", path: "engine", wall: critical,
		note: fmt.Sprintf("D1 create -> migrations (%d D1 queries) -> control-plane upload; %.0f%% of the up", migrations,
			100*critical.Seconds()/wall.Seconds())})
}
