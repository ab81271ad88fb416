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
	"math/rand"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

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

// pluginRSS runs the plugin binary bin against emu and returns its peak RSS
// and the wall time of the five creates.
func pluginRSS(bin string, emu *emulator.Server) (int64, time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	srv := grpc.NewServer()
	pulumirpc.RegisterEngineServer(srv, fakeEngine{})
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	cmd := exec.Command(bin, ln.Addr().String())
	cmd.Env = append(os.Environ(), "PULUMI_DEBUG_GRPC=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, 0, err
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
		return 0, 0, fmt.Errorf("plugin did not print its port: %w: %s", err, stderr.String())
	}
	port, err := strconv.Atoi(strings.TrimSpace(portLine))
	if err != nil {
		return 0, 0, fmt.Errorf("plugin printed %q, not a port", portLine)
	}
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return 0, 0, err
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
		return 0, 0, err
	}
	if _, err := prov.Configure(ctx, &pulumirpc.ConfigureRequest{Args: args,
		AcceptSecrets: true, AcceptResources: true}); err != nil {
		return 0, 0, fmt.Errorf("configure: %w: %s", err, stderr.String())
	}

	bundles := make([]string, 5)
	for i := range bundles {
		bundles[i] = string(bundle5MBBytes(int64(i)))
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(bundles))
	for i, content := range bundles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("plugin-rss-%d", i)
			props, err := structpb.NewStruct(map[string]any{
				"name": name, "content": content, "compatibilityDate": "2025-01-01",
				"vars": map[string]any{"MODE": "rss"}, "workersDev": false,
			})
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
	wall := time.Since(start)
	for err := range errs {
		if err != nil {
			return 0, wall, fmt.Errorf("create: %w: %s", err, stderr.String())
		}
	}
	hwm, err := vmHWM(cmd.Process.Pid)
	return hwm, wall, err
}

// vmHWM reads a process's peak resident set size from /proc.
func vmHWM(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
