package wrangler_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/d1"
	"github.com/cloudflare/cloudflare-go/v4/kv"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/cloudflare/cloudflare-go/v4/queues"
	"github.com/cloudflare/cloudflare-go/v4/r2"
	"github.com/cloudflare/cloudflare-go/v4/workers"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/migrationset"
)

type benchRow struct {
	op, latency, path string
	calls             int
	wall              time.Duration
	ratio             string
	note              string
}

// measure runs f against emu and reports its Cloudflare calls and time.
func measure(emu *emulator.Server, f func() error) (int, time.Duration, error) {
	emu.ResetCounts()
	start := time.Now()
	err := f()
	return emu.CloudflareCalls(), time.Since(start), err
}

// BenchmarkSideBySide puts the provider's request path and wrangler side by
// side against one emulator: the same worker (the conformance fixture, with
// D1/KV/R2/queue/var/Durable Object bindings and a queue consumer) uploaded
// as a new script, and the same 66 migration files applied to a fresh
// database, each with 0 ms and 50 ms of latency injected on every API
// route. It prints a table; the numbers are not assertions. Run it with
// `make bench` (-benchtime 1x: one pass is already tens of wrangler runs).
//
// The provider side makes the provider's cloudflare-go/v4 requests in
// process: the upload's as provider_path_test.go builds them, the
// migrations' through D1Migrations itself (provider_migrations_test.go);
// wrangler runs as a process, so its
// wall time includes Node's start and esbuild's bundling, which the
// "wrangler --version" row isolates.
func BenchmarkSideBySide(b *testing.B) {
	for b.Loop() {
		sideBySide(b)
	}
}

func sideBySide(b *testing.B) {
	emu := startEmulator(b)
	e := newEnv(b, emu)
	cf := cfClient(emu)
	ctx := context.Background()
	var rows []benchRow

	// wrangler's own start, for scale.
	r := e.run(b.TempDir(), "", "--version")
	if r.err != nil {
		b.Fatalf("%s", r)
	}
	rows = append(rows, benchRow{op: "wrangler --version (process start)", latency: "-", path: "wrangler", wall: r.duration})

	kvNS, err := cf.KV.Namespaces.New(ctx, kv.NamespaceNewParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("bench-cache")})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cf.R2.Buckets.New(ctx, r2.BucketNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("bench-files")}); err != nil {
		b.Fatal(err)
	}
	module, err := os.ReadFile(filepath.Join("testdata", "worker", "src", "index.js"))
	if err != nil {
		b.Fatal(err)
	}
	files := migrationset.Files() // the provider's own benchmark applies the same set
	srv := providerServer(b, emu)

	for _, lat := range []time.Duration{0, 50 * time.Millisecond} {
		label := fmt.Sprintf("%d ms", lat.Milliseconds())
		suffix := fmt.Sprintf("%dms", lat.Milliseconds())
		// Resources each path needs of its own (a queue has one consumer;
		// migrations need a fresh database), made before latency is on.
		newDB := func(name string) string {
			db, err := cf.D1.Database.New(ctx, d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F(name)})
			if err != nil {
				b.Fatal(err)
			}
			return db.UUID
		}
		newQueue := func(name string) string {
			q, err := cf.Queues.New(ctx, queues.QueueNewParams{AccountID: cloudflare.F(acct), QueueName: cloudflare.F(name)})
			if err != nil {
				b.Fatal(err)
			}
			return q.QueueID
		}
		pDB, wDB := newDB("bench-p-"+suffix), newDB("bench-w-"+suffix)
		pQueue := newQueue("bench-p-" + suffix)
		newQueue("bench-w-" + suffix)

		project := b.TempDir()
		copyDir(b, filepath.Join("testdata", "worker"), project)
		migDir := filepath.Join(project, "bench-migrations")
		if err := os.MkdirAll(migDir, 0o755); err != nil {
			b.Fatal(err)
		}
		for name, sql := range files {
			if err := os.WriteFile(filepath.Join(migDir, name), []byte(sql), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		cfg := fixtureConfig{name: "bench-w-" + suffix, greeting: "hello", dbName: "bench-w-" + suffix, dbID: wDB, kvID: kvNS.ID,
			bucket: "bench-files", queue: "bench-w-" + suffix, migrationsDir: "bench-migrations"}.json()
		if err := os.WriteFile(filepath.Join(project, "wrangler.json"), []byte(cfg), 0o644); err != nil {
			b.Fatal(err)
		}

		emu.ClearFaults()
		if lat > 0 {
			emu.InjectFault(emulator.Fault{Kind: emulator.FaultLatency, Latency: lat})
		}

		ct, body := multipartUpload("index.js", map[string][]byte{"index.js": module},
			fixtureBindings(pDB, kvNS.ID, "bench-files", "bench-p-"+suffix),
			&pMigration{NewTag: "v1", NewSqliteClasses: []string{"Counter"}})
		pCalls, pWall, err := measure(emu, func() error {
			return providerCreateWorker(ctx, cf, acct, "bench-p-"+suffix, pQueue, ct, body)
		})
		if err != nil {
			b.Fatal(err)
		}
		var wr result
		wCalls, wWall, _ := measure(emu, func() error { wr = e.run(project, "", "deploy"); return wr.err })
		if wr.err != nil || !strings.Contains(wr.out, "Current Version ID") {
			b.Fatalf("%s", wr)
		}
		rows = append(rows,
			benchRow{op: "worker upload, new script", latency: label, path: "provider", calls: pCalls, wall: pWall},
			benchRow{op: "worker upload, new script", latency: label, path: "wrangler", calls: wCalls, wall: wWall, ratio: ratio(wWall, pWall)})

		pCalls, pWall, err = measure(emu, func() error { return providerMigrate(srv, pDB, files) })
		if err != nil {
			b.Fatal(err)
		}
		wCalls, wWall, _ = measure(emu, func() error {
			wr = e.run(project, "", "d1", "migrations", "apply", "bench-w-"+suffix, "--remote")
			return wr.err
		})
		if wr.err != nil || !strings.Contains(wr.out, "0067_step_67.sql") {
			b.Fatalf("%s", wr)
		}
		rows = append(rows,
			benchRow{op: "66 migrations, fresh database", latency: label, path: "provider", calls: pCalls, wall: pWall},
			benchRow{op: "66 migrations, fresh database", latency: label, path: "wrangler", calls: wCalls, wall: wWall, ratio: ratio(wWall, pWall)})

		// The installation's critical path, D1 -> migrations -> worker
		// upload, through the provider's requests.
		cpCalls, cpWall, err := measure(emu, func() error {
			db, err := cf.D1.Database.New(ctx, d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("bench-cp-" + suffix)})
			if err != nil {
				return err
			}
			if err := providerMigrate(srv, db.UUID, files); err != nil {
				return err
			}
			ct, body := providerUpload("bench-cp-"+suffix, db.UUID, map[string]string{"SERVICE_AUTH_SECRET_WEB": "k"}, module)
			_, err = cf.Workers.Scripts.Update(ctx, "bench-cp-"+suffix, workers.ScriptUpdateParams{AccountID: cloudflare.F(acct)},
				option.WithRequestBody(ct, body))
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		rows = append(rows, benchRow{op: "critical path: D1 + 66 migrations + upload", latency: label, path: "provider",
			calls: cpCalls, wall: cpWall, note: "sequential requests only; see the note below"})
		emu.ClearFaults()
	}

	if bin, err := exec.LookPath("pulumi-resource-openinspect"); err == nil {
		for _, fromFiles := range []bool{true, false} {
			emu.ResetCounts()
			m, err := pluginRSS(bin, emu, fromFiles, b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			rows = append(rows, benchRow{op: pluginRSSOp(fromFiles), latency: "0 ms", path: "plugin", calls: emu.CloudflareCalls(), wall: m.wall,
				note: m.note()})
		}
	} else {
		rows = append(rows, benchRow{op: "five 5 MB Workers, concurrent Creates", latency: "0 ms", path: "plugin",
			note: "not run: pulumi-resource-openinspect is not on PATH (make bench builds it into bin/)"})
	}
	rss, wall, err := uploadRSS(emu)
	if err != nil {
		b.Fatal(err)
	}
	rows = append(rows, benchRow{op: "five 5 MB bundles, concurrent uploads", latency: "0 ms", path: "provider", calls: 5, wall: wall,
		note: fmt.Sprintf("peak RSS %.1f MiB (request path only, child process)", float64(rss)/(1<<20))})

	rows = append(rows, assetsRows(b)...)
	rows = append(rows, installationRows(b)...)
	printTable(rows)
}

func ratio(w, p time.Duration) string {
	if p <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", float64(w)/float64(p))
}

func printTable(rows []benchRow) {
	var load string
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	fmt.Printf("\nSide by side against one in-process emulator (%d CPUs, load average %s)\n\n", runtime.NumCPU(), load)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "operation\tlatency\tpath\tAPI calls\twall\twrangler/provider\tnote")
	for _, r := range rows {
		calls := "-"
		if r.calls > 0 {
			calls = fmt.Sprint(r.calls)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.op, r.latency, r.path, calls, r.wall.Round(time.Millisecond), orDash(r.ratio), r.note)
	}
	_ = tw.Flush()
	fmt.Print(`
provider = the provider's cloudflare-go/v4 requests, made in process in the
provider's order (tests/wrangler/provider_path_test.go), not the plugin binary.
Latency is injected by the emulator on every /client/v4/ route.
plugin = the real plugin binary (bin/pulumi-resource-openinspect) started as the
engine starts it and sent Configure and five concurrent Worker Creates over
gRPC (tests/wrangler/plugin_rss_test.go); its peak RSS is the kernel's VmHWM.
The last row runs only the multipart build and upload in a child process (the
test binary re-executed); neither RSS counts the in-process emulator.
The critical-path rows under "provider" are the D1 -> migrations ->
control-plane upload chain made as bare sequential requests; the full
installation row is a real pulumi up of examples/yaml (engine, YAML plugin,
the plugin binary, the fixture upstream checkout with its 6 migrations), and
the row under it is its critical path read from the emulator's request log:
from the first call, through the later of the migrations and the sandbox's
Modal deploy (no latency is injected on Modal), to the control plane's and
then the web's upload; the breakdown above the table shows each child's calls.
`)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// rssChildEnv marks the test binary re-executed by uploadRSS.
const rssChildEnv = "OPENINSPECT_BENCH_RSS_CHILD"

// uploadRSS re-executes the test binary to upload five 5 MB bundles to emu
// the provider's way, concurrently, and returns the child's peak RSS as the
// child reads it (VmHWM of its own address space: the rusage maxrss of a
// child can carry the forking parent's high-water mark, and the parent here
// holds the emulator).
func uploadRSS(emu *emulator.Server) (int64, time.Duration, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), rssChildEnv+"="+emu.CloudflareBaseURL())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("rss child: %w: %s", err, out)
	}
	var wall time.Duration
	var hwm int64
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "upload-wall "); ok {
			wall, _ = time.ParseDuration(strings.TrimSpace(v))
		}
		if v, ok := strings.CutPrefix(line, "vmhwm "); ok {
			hwm, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if hwm == 0 {
		return 0, wall, fmt.Errorf("rss child printed no vmhwm: %s", out)
	}
	return hwm, wall, nil
}

// rssChild is the child's work (called from TestMain): the five modules are
// made first (the plugin holds its inputs too), then uploaded at once.
func rssChild(base string) {
	c := cloudflare.NewClient(option.WithBaseURL(base), option.WithAPIToken(emulator.DefaultToken), option.WithMaxRetries(0))
	ctx := context.Background()
	modules := make([][]byte, 5)
	for i := range modules {
		modules[i] = bundle5MBBytes(int64(i))
	}
	runtime.GC()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(modules))
	for i, module := range modules {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("rss-bundle-%d", i)
			ct, body := multipartUpload("index.js", map[string][]byte{"index.js": module},
				[]pBinding{{Type: "plain_text", Name: "MODE", Text: text("rss")}}, nil)
			_, err := c.Workers.Scripts.Update(ctx, name, workers.ScriptUpdateParams{AccountID: cloudflare.F(emulator.DefaultAccountID)},
				option.WithRequestBody(ct, body))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fmt.Printf("upload-wall %s\n", time.Since(start))
	hwm, err := vmHWM(os.Getpid())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("vmhwm %d\n", hwm)
}
