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
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/openinspect/pulumi-openinspect/internal/reporoot"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/providertest/pulumitest/opttest"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emumodal "github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
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

func repoRoot() string { return reporoot.Dir() }

// BenchmarkFullInstallation is the side-by-side table's full-installation
// rows alone, with the breakdown: `go test -run '^$' -bench FullInstallation
// -benchtime 1x ./tests/wrangler/` (needs make pulumi-tools and make provider).
func BenchmarkFullInstallation(b *testing.B) {
	for b.Loop() {
		var rows []benchRow
		rows = append(rows, installationRows(b)...)
		printTable(rows)
	}
}

// installationRows are the full installation's rows at 0 and 50 ms, on the
// fixture checkout and on upstream's real set when the plugin embeds one
// (a release build), or a row saying that the real set was skipped.
func installationRows(b *testing.B) []benchRow {
	var rows []benchRow
	for _, set := range []artefactSet{fixtureSet, embeddedSet} {
		for _, lat := range []time.Duration{0, 50 * time.Millisecond} {
			rows = append(rows, fullInstallation(b, lat, set)...)
		}
	}
	return rows
}

// artefactSet is what the installation deploys: this project's fixture
// checkout, or the upstream set a release build embeds in the plugin.
type artefactSet string

const (
	fixtureSet  artefactSet = "fixture checkout"
	embeddedSet artefactSet = "upstream's embedded set"
)

// embedsArtefacts reports whether a plugin built from this tree (make
// provider) embeds upstream's artefacts: the release step writes their
// manifest where the plugin's go:embed reads it.
func embedsArtefacts() bool {
	_, err := os.Stat(filepath.Join(repoRoot(), "provider", "internal", "artefacts", "dist", "manifest.json"))
	return err == nil
}

// fullInstallation returns the installation's row and its critical path's,
// with latency injected on every Cloudflare call, or one row saying why it
// did not run. With latency it also prints the breakdown: when each child's
// calls started and ended, so which waits on which shows.
func fullInstallation(b *testing.B, latency time.Duration, set artefactSet) []benchRow {
	op := "full installation (pulumi up, examples/yaml, " + string(set) + ")"
	label := fmt.Sprintf("%d ms", latency.Milliseconds())
	if set == embeddedSet && !embedsArtefacts() {
		if latency > 0 {
			return nil // one line says it
		}
		return []benchRow{{op: op, latency: "-", path: "engine",
			note: "skipped: bin/pulumi-resource-openinspect embeds no upstream artefacts (a release build does: docs/releases.md)"}}
	}
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
		return []benchRow{{op: op, latency: label, path: "engine",
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
		"openinspect:modalTokenId":     {Value: emumodal.DefaultTokenID},
		"openinspect:modalTokenSecret": {Value: emumodal.DefaultTokenSecret, Secret: true},
		"openinspect:pythonPath":       {Value: toolchain.Python(b)},
		"openinspect:cacheDir":         {Value: toolchain.CacheDir()},
		"deploymentName":               {Value: "bench"},
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
	if set == fixtureSet {
		if err := stack.SetConfig(ctx, "upstreamCheckout", auto.ConfigValue{Value: filepath.Join(repoRoot(), "tests", "fixtures", "upstream")}); err != nil {
			b.Fatal(err)
		}
	} else {
		// The example names a checkout by default; without one the plugin
		// deploys what it embeds, verified against the pin.
		program := filepath.Join(pt.WorkingDir(), "Pulumi.yaml")
		raw, err := os.ReadFile(program)
		if err != nil {
			b.Fatal(err)
		}
		edited := strings.Replace(string(raw), "        checkout: ${upstreamCheckout}\n", "", 1)
		if edited == string(raw) {
			b.Fatal("examples/yaml no longer names upstream.checkout as this benchmark expects")
		}
		if err := os.WriteFile(program, []byte(edited), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := stack.SetConfig(ctx, "allowUnverified", auto.ConfigValue{Value: "false"}); err != nil {
			b.Fatal(err)
		}
	}
	if latency > 0 {
		emu.InjectFault(emulator.Fault{Kind: emulator.FaultLatency, Latency: latency})
	}
	emu.ResetCounts()
	start := time.Now()
	wall, err := cliUp(ctx, stack)
	if err != nil {
		b.Fatal(err)
	}
	calls := emu.CloudflareCalls()

	// The chain nothing overlaps: the control plane's upload needs the D1
	// database migrated and the sandbox (Modal) deployed, whose URL it
	// carries; the web worker binds the control plane and is uploaded after
	// it. The critical path runs from the up's first call to the web's
	// upload; its gate is whichever of the migrations and the sandbox ends
	// last before the control plane's upload starts.
	var first, d1Start, migEnd, sandboxEnd, cpStart, cpEnd, webEnd time.Time
	migrations := 0
	log.mu.Lock()
	for _, e := range log.entries {
		if first.IsZero() || e.start.Before(first) {
			first = e.start
		}
		switch {
		case e.method == "POST" && strings.HasSuffix(e.path, "/d1/database") && d1Start.IsZero():
			d1Start = e.start
		case e.method == "POST" && strings.HasSuffix(e.path, "/query"):
			migrations++
			migEnd = later(migEnd, e.end)
		case e.method == "PUT" && strings.HasSuffix(e.path, "/workers/scripts/open-inspect-control-plane-bench"):
			cpStart, cpEnd = e.start, e.end
		case e.method == "PUT" && strings.HasSuffix(e.path, "/workers/scripts/open-inspect-web-bench"):
			webEnd = e.end
		}
	}
	for _, e := range log.entries {
		if strings.HasPrefix(e.path, "/modal.") && !cpStart.IsZero() && e.end.Before(cpStart) {
			sandboxEnd = later(sandboxEnd, e.end)
		}
	}
	log.mu.Unlock()
	rows := []benchRow{{op: op, latency: label, path: "engine", calls: calls, wall: wall,
		note: "engine start, plugin, every resource"}}
	if d1Start.IsZero() || cpEnd.IsZero() || webEnd.IsZero() {
		return append(rows, benchRow{op: "  critical path inside it", latency: label, path: "engine", note: "not found in the request log"})
	}
	if latency > 0 {
		printBreakdown(log.children(start), label)
	}
	gate, gateName := migEnd, "migrations"
	if sandboxEnd.After(migEnd) {
		gate, gateName = sandboxEnd, "sandbox deploy"
	}
	at := func(t time.Time) string { return t.Sub(first).Round(10 * time.Millisecond).String() }
	critical := webEnd.Sub(first)
	return append(rows, benchRow{op: "  critical path inside it", latency: label, path: "engine", wall: critical,
		note: fmt.Sprintf("first call -> D1 + %d queries done at %s, sandbox (Modal) at %s -> control-plane upload %s-%s (gated by the %s, waited %s) -> web upload done %s; the up is %.2fx it",
			migrations, at(migEnd), at(sandboxEnd), at(cpStart), at(cpEnd), gateName, cpStart.Sub(gate).Round(time.Millisecond), at(webEnd),
			wall.Seconds()/critical.Seconds())})
}

// cliUp runs the CLI's `pulumi up --yes --skip-preview` for the stack, as
// one process, and returns how long that process ran: the time a user
// waits for the update. The Automation API's Up is not timed, because it
// runs two more CLI processes after the update (`stack output` and
// `stack history`), about a second here that no user of `pulumi up` waits.
func cliUp(ctx context.Context, stack *auto.Stack) (time.Duration, error) {
	ws := stack.Workspace()
	var env []string
	if home := ws.PulumiHome(); home != "" {
		env = append(env, "PULUMI_HOME="+home)
	}
	for k, v := range ws.GetEnvVars() {
		env = append(env, k+"="+v)
	}
	start := time.Now()
	stdout, stderr, code, err := ws.PulumiCommand().Run(ctx, ws.WorkDir(), nil, nil, nil, env,
		"up", "--yes", "--skip-preview", "--non-interactive", "--stack", stack.Name())
	if err != nil {
		return 0, fmt.Errorf("pulumi up exited %d: %w\n%s\n%s", code, err, stdout, stderr)
	}
	return time.Since(start), nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// child is one resource's calls in the request log: what it addresses
// (workers/scripts/NAME, d1/database/ID, queues/ID, ...), when its first
// call started and its last ended, relative to the up's start.
type child struct {
	key        string
	calls      int
	start, end time.Duration
}

// children groups the log's Cloudflare calls by the object they address.
func (l *requestLog) children(upStart time.Time) []child {
	l.mu.Lock()
	defer l.mu.Unlock()
	byKey := map[string]*child{}
	var order []*child
	for _, e := range l.entries {
		var key string
		if rest, ok := strings.CutPrefix(e.path, "/client/v4/accounts/"); ok {
			parts := strings.Split(rest, "/")[1:] // after the account ID
			n := min(len(parts), 3)
			if len(parts) >= 2 && parts[0] == "storage" {
				n = min(len(parts), 4) // storage/kv/namespaces/ID
			}
			key = strings.Join(parts[:n], "/")
		} else {
			// Not Cloudflare (Modal's API, a worker's URL): no latency there.
			parts := strings.Split(strings.TrimPrefix(e.path, "/"), "/")
			key = "(not Cloudflare) /" + strings.Join(parts[:min(len(parts), 2)], "/")
		}
		c := byKey[key]
		if c == nil {
			c = &child{key: key, start: e.start.Sub(upStart)}
			byKey[key] = c
			order = append(order, c)
		}
		c.calls++
		c.start = min(c.start, e.start.Sub(upStart))
		c.end = max(c.end, e.end.Sub(upStart))
	}
	out := make([]child, 0, len(order))
	for _, c := range order {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// printBreakdown prints each child's span: a child that starts when another
// ends is waiting on it (a dependency in the program's graph).
func printBreakdown(children []child, label string) {
	fmt.Printf("\nFull installation at %s per call: each child's Cloudflare calls, from the up's start\n\n", label)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "first call\tlast ends\tcalls\tchild")
	for _, c := range children {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", c.start.Round(time.Millisecond), c.end.Round(time.Millisecond), c.calls, c.key)
	}
	_ = tw.Flush()
}
