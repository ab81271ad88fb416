package wrangler_test

// Peak RSS of the real provider plugin (pulumi-resource-openinspect, built by
// `make provider` into bin/, which `make bench` puts on PATH) while it
// creates five Workers with 5 MB bundles at once. The engine is not needed
// for that: the plugin is started the way the engine starts it (its one
// argument is the engine's gRPC address, here a stand-in that accepts log
// messages), then configured and sent five Create calls over its gRPC
// interface, concurrently as the engine would send them. Peak RSS is the
// kernel's VmHWM of the plugin process.

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/asset"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// fakeEngine accepts the plugin's log messages; nothing else is called
// during Configure and Create.
type fakeEngine struct {
	pulumirpc.UnimplementedEngineServer
}

func (fakeEngine) Log(context.Context, *pulumirpc.LogRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// bundle5MBBytes is a 5 MB ES module, different per seed: a large string
// constant, as a bundled asset would be. It is built in place, so making it
// costs one 5 MB buffer.
func bundle5MBBytes(seed int64) []byte {
	const prefix, suffix = "const BLOB = \"", "\";\nexport default { fetch() { return new Response(BLOB.length + \"\"); } };\n"
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	rnd := rand.New(rand.NewSource(seed))
	out := make([]byte, 0, len(prefix)+(5<<20)+len(suffix))
	out = append(out, prefix...)
	for range 5 << 20 {
		out = append(out, alphabet[rnd.Intn(len(alphabet))])
	}
	return append(out, suffix...)
}

// pluginMemory is what pluginRSS measures of the plugin process.
type pluginMemory struct {
	// idle is the resident set after Configure, before any Create, and
	// idleFile the part of it that is pages of the binary file itself
	// (RssFile: code and read-only data the kernel maps in, shared and
	// reclaimable, not heap).
	idle, idleFile int64
	// peak is VmHWM after the five creates.
	peak int64
	wall time.Duration
}

func (m pluginMemory) note() string {
	return fmt.Sprintf("peak RSS %.1f MiB (plugin binary, VmHWM); idle %.1f MiB, of which %.1f MiB pages of the binary file",
		mib(m.peak), mib(m.idle), mib(m.idleFile))
}

// pluginRSSOp names the measurement in the table.
func pluginRSSOp(fromFiles bool) string {
	if fromFiles {
		return "five 5 MB Workers (script: file assets), concurrent Creates"
	}
	return "five 5 MB Workers (content: inline), concurrent Creates"
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// BenchmarkPluginRSS is the side-by-side table's plugin row alone, for
// working on the upload path's memory: `go test -run '^$' -bench PluginRSS
// -benchtime 1x ./tests/wrangler/` with bin/ on PATH (make provider).
func BenchmarkPluginRSS(b *testing.B) {
	bin, err := exec.LookPath("pulumi-resource-openinspect")
	if err != nil {
		b.Fatalf("the plugin binary is not on PATH (make provider builds it into bin/): %v", err)
	}
	for b.Loop() {
		for _, fromFiles := range []bool{true, false} {
			emu := startEmulator(b)
			m, err := pluginRSS(bin, emu, fromFiles, b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			fmt.Printf("%s: %s, wall %s\n", pluginRSSOp(fromFiles), m.note(), m.wall.Round(time.Millisecond))
		}
	}
}

// pluginRSS runs the plugin binary bin against emu and returns its idle and
// peak RSS and the wall time of the five creates. fromFiles sends each
// bundle as a file asset written under dir, otherwise inline as content.
func pluginRSS(bin string, emu *emulator.Server, fromFiles bool, dir string) (pluginMemory, error) {
	var m pluginMemory
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return m, err
	}
	srv := grpc.NewServer()
	pulumirpc.RegisterEngineServer(srv, fakeEngine{})
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	cmd := exec.Command(bin, ln.Addr().String())
	cmd.Env = append(os.Environ(), "PULUMI_DEBUG_GRPC=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return m, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return m, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	// The plugin prints its port as its first line.
	portLine, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return m, fmt.Errorf("plugin did not print its port: %w: %s", err, stderr.String())
	}
	port, err := strconv.Atoi(strings.TrimSpace(portLine))
	if err != nil {
		return m, fmt.Errorf("plugin printed %q, not a port", portLine)
	}
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return m, err
	}
	defer conn.Close()
	prov := pulumirpc.NewResourceProviderClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	cfg := map[string]any{
		"cloudflareApiToken":   emulator.DefaultToken,
		"cloudflareAccountId":  emulator.DefaultAccountID,
		"cloudflareApiBaseUrl": emu.CloudflareBaseURL(),
	}
	args, err := structpb.NewStruct(cfg)
	if err != nil {
		return m, err
	}
	if _, err := prov.Configure(ctx, &pulumirpc.ConfigureRequest{Args: args,
		AcceptSecrets: true, AcceptResources: true}); err != nil {
		return m, fmt.Errorf("configure: %w: %s", err, stderr.String())
	}
	if m.idle, err = procStatus(cmd.Process.Pid, "VmRSS"); err != nil {
		return m, err
	}
	if m.idleFile, err = procStatus(cmd.Process.Pid, "RssFile"); err != nil {
		return m, err
	}

	// Each Worker's code input: the bundle inline, or a file asset as the
	// installation passes its bundles (the engine sends the path and the
	// hash it computed, not the content).
	code := make([]map[string]any, 5)
	for i := range code {
		bundle := bundle5MBBytes(int64(i))
		if !fromFiles {
			code[i] = map[string]any{"content": string(bundle)}
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("bundle-%d.js", i))
		if err := os.WriteFile(path, bundle, 0o644); err != nil {
			return m, err
		}
		file, err := asset.FromPath(path)
		if err != nil {
			return m, err
		}
		code[i] = map[string]any{"script": file.Serialize()}
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(code))
	for i, input := range code {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("plugin-rss-%s-%d", slices.Collect(maps.Keys(input))[0], i)
			inputs := map[string]any{
				"name": name, "compatibilityDate": "2025-01-01",
				"vars": map[string]any{"MODE": "rss"}, "workersDev": false,
			}
			maps.Copy(inputs, input)
			props, err := structpb.NewStruct(inputs)
			if err != nil {
				errs <- err
				return
			}
			_, err = prov.Create(ctx, &pulumirpc.CreateRequest{
				Urn:        "urn:pulumi:bench::openinspect::openinspect:index:Worker::" + name,
				Name:       name,
				Type:       "openinspect:index:Worker",
				Properties: props,
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	m.wall = time.Since(start)
	for err := range errs {
		if err != nil {
			return m, fmt.Errorf("create: %w: %s", err, stderr.String())
		}
	}
	m.peak, err = vmHWM(cmd.Process.Pid)
	return m, err
}

// vmHWM reads a process's peak resident set size from /proc.
func vmHWM(pid int) (int64, error) { return procStatus(pid, "VmHWM") }

// procStatus reads one size field (kB in the file) of /proc/pid/status, in bytes.
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
