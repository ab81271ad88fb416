// Command openinspect-emulator serves the Cloudflare v4 API emulator so that
// `pulumi up` can run with no Cloudflare account. State persists in -data-dir
// between runs.
//
//	openinspect-emulator -listen 127.0.0.1:8787 -data-dir ./.emulator -addr-file ./.emulator/url
//
// Point the provider at the printed URL + "/client/v4/" with the token
// "emulator-token" (or -token) and the account -account. The same URL is a
// Modal server: MODAL_SERVER_URL=<URL> with MODAL_TOKEN_ID / MODAL_TOKEN_SECRET
// set to -modal-token-id / -modal-token-secret (workspace -modal-workspace).
// The Daytona API is at the URL + "/daytona/api" with the key
// "emulator-daytona-key" (or -daytona-api-key).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/openinspect/pulumi-openinspect/provider/pyfind"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/anthropic"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
	emuzones "github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/zones"
	emudaytona "github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
	emugithub "github.com/openinspect/pulumi-openinspect/tests/emulator/github"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	emuvercel "github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (port 0 picks a free port)")
	dataDir := flag.String("data-dir", "", "directory for SQLite files and metadata (default: a temporary directory deleted on exit)")
	token := flag.String("token", emulator.DefaultToken, "API token to accept")
	account := flag.String("account", emulator.DefaultAccountID, "account ID the token may access")
	addrFile := flag.String("addr-file", "", "write the base URL to this file once listening (removed on exit)")
	verbose := flag.Bool("v", false, "log every request (method, path, status; never headers or bodies)")
	workersSubdomain := flag.String("workers-subdomain", workers.DefaultSubdomain, "the account's workers.dev subdomain until one is set with PUT workers/subdomain")
	modalToken := modal.Token{ID: modal.DefaultTokenID, Secret: modal.DefaultTokenSecret, Workspace: modal.DefaultWorkspace}
	flag.StringVar(&modalToken.ID, "modal-token-id", modalToken.ID, "Modal token ID to accept")
	flag.StringVar(&modalToken.Secret, "modal-token-secret", modalToken.Secret, "Modal token secret to accept")
	flag.StringVar(&modalToken.Workspace, "modal-workspace", modalToken.Workspace, "Modal workspace the token belongs to")
	daytonaKey := flag.String("daytona-api-key", emudaytona.DefaultAPIKey, "Daytona API key to accept")
	daytonaOrg := flag.String("daytona-organization", emudaytona.DefaultOrganizationID, "organization ID the Daytona API key belongs to")
	daytonaBuild := flag.Duration("daytona-build-time", emudaytona.DefaultBuildTime, "how long a Daytona snapshot build takes (negative: done within the request)")
	vercelBuild := flag.Duration("vercel-build-time", emuvercel.DefaultBuildTime, "how long a Vercel deployment builds")
	workersPlan := flag.String("workers-plan", "paid", "the Workers plan whose limits uploads are refused by: free or paid")
	sizeLimit := flag.Int64("worker-size-limit", 0, "the largest Worker in bytes (default: the plan's 64 MiB)")
	sizeCompressed := flag.Bool("worker-size-limit-compressed", false, "measure -worker-size-limit after gzip (Cloudflare's rule before September 2026)")
	zones := flag.String("zones", emuzones.DefaultZone, "comma-separated zones the account has (custom domains and routes attach to them)")
	runCrons := flag.Bool("run-crons", false, "fire deployed scripts' cron triggers on schedule (otherwise only on POST /__emulator/scheduled/<script>)")
	modelPassThrough := flag.String("model-passthrough", "", "opt-in: send model calls on to this Messages API base (e.g. https://api.anthropic.com/v1) with the key in $OPENINSPECT_MODEL_API_KEY, instead of the scripted agent; the installation's seeded key is still checked first")
	modalSandboxes := flag.Bool("modal-sandboxes", false, "run each Modal sandbox's command under bubblewrap with slirp4netns (both on PATH; .ci/sandbox-tools.sh installs them), its HTTPS through the outbound proxy")
	modalPython := flag.String("modal-python", "", "the Python (3.12+) deployed Modal apps' web endpoints run with, in virtualenvs made from it (\"auto\": found as the provider finds it; default: none run)")
	modalRunners := flag.String("modal-runners", "", "where those virtualenvs are kept (default: in -data-dir)")
	modalImageCache := flag.String("modal-image-cache", "", "with -modal-sandboxes: where images' RUN steps (pip, npm installs) are materialised once per recipe (default: in -data-dir)")
	proxyAddr := flag.String("outbound-proxy-addr", "127.0.0.1:0", "where the outbound gateway listens as an HTTP(S) proxy for processes outside workerd, a sandbox's (port 0 picks one; GET /__emulator/outbound-proxy says where)")
	githubAddr := flag.String("github-browser-addr", "127.0.0.1:0", "where the GitHub stand-in serves the pages a browser opens, over https (port 0 picks one; GET /__emulator/github says where)")
	workerdBin := flag.String("workerd", "", "the workerd binary deployed scripts run in (default: $OPENINSPECT_WORKERD, else workerd on PATH)")
	localOrigins := map[string]string{}
	flag.Func("local-origin", "SCRIPT=HOST:PORT: also serve that script at the root of its own loopback port, as `wrangler dev` does (repeatable; port 0 picks one; GET /__emulator/local-origins lists them)", func(v string) error {
		script, addr, err := workers.ParseLocalOrigin(v)
		if err == nil {
			localOrigins[script] = addr
		}
		return err
	})
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "openinspect-emulator: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	// opts holds what the flags set beyond the Cloudflare account, the
	// address and the data directory (run adds those).
	opts := emulator.Options{Workers: workers.Options{Subdomain: *workersSubdomain},
		Modal:   modal.Options{Tokens: []modal.Token{modalToken}, Python: *modalPython, RunnerCache: *modalRunners},
		Daytona: emudaytona.Options{APIKeys: map[string]string{*daytonaKey: *daytonaOrg}, BuildTime: *daytonaBuild},
		Vercel:  emuvercel.Options{BuildTime: *vercelBuild},
		GitHub:  emugithub.Options{BrowserAddr: *githubAddr}, OutboundProxyAddr: *proxyAddr}
	if *daytonaBuild == 0 {
		opts.Daytona.BuildTime = emudaytona.InstantBuilds // 0 in Options means the default
	}
	switch *workersPlan {
	case "free":
		opts.Workers.Limits = workers.FreePlanLimits
	case "paid":
	default:
		fmt.Fprintf(os.Stderr, "openinspect-emulator: -workers-plan %q: use free or paid\n", *workersPlan)
		os.Exit(2)
	}
	if *modelPassThrough != "" {
		opts.Anthropic.PassThrough = anthropic.PassThrough{URL: *modelPassThrough, APIKey: os.Getenv("OPENINSPECT_MODEL_API_KEY")}
		if err := opts.Anthropic.PassThrough.Validate(); err != nil {
			fmt.Fprintf(os.Stderr, "openinspect-emulator: -model-passthrough: %v (the key comes from $OPENINSPECT_MODEL_API_KEY)\n", err)
			os.Exit(2)
		}
	}
	if *modalSandboxes {
		for _, bin := range []struct {
			name string
			to   *string
		}{{"bwrap", &opts.Modal.Sandboxes.Bwrap}, {"slirp4netns", &opts.Modal.Sandboxes.Slirp4netns}} {
			path, err := exec.LookPath(bin.name)
			if err != nil {
				fmt.Fprintf(os.Stderr, "openinspect-emulator: -modal-sandboxes needs %s on PATH (.ci/sandbox-tools.sh installs it): %v\n", bin.name, err)
				os.Exit(2)
			}
			*bin.to = path
		}
	}
	if *modalPython == "auto" {
		python, _, err := pyfind.Find("")
		if err != nil {
			fmt.Fprintln(os.Stderr, "openinspect-emulator: -modal-python auto:", err)
			os.Exit(2)
		}
		opts.Modal.Python = python
	}
	if *modalSandboxes {
		opts.Modal.Sandboxes.Python = opts.Modal.Python // `python` in a sandbox, when one was given
		opts.Modal.Sandboxes.ImageCache = *modalImageCache
	}
	opts.Workers.Limits.MaxScriptBytes = *sizeLimit
	opts.Workers.Limits.Compressed = *sizeCompressed
	opts.Workers.Workerd, opts.Workers.RunCrons, opts.Workers.LocalOrigins = *workerdBin, *runCrons, localOrigins
	opts.Zones.Seeded = map[string][]string{"*": {}}
	for _, z := range strings.Split(*zones, ",") {
		if z = strings.TrimSpace(z); z != "" {
			opts.Zones.Seeded["*"] = append(opts.Zones.Seeded["*"], z)
		}
	}
	if err := run(*listen, *dataDir, *token, *account, *addrFile, *verbose, opts); err != nil {
		fmt.Fprintln(os.Stderr, "openinspect-emulator:", err)
		os.Exit(1)
	}
}

// run serves opts (the families' options the flags set) with the account,
// address and data directory until interrupted.
func run(listen, dataDir, token, account, addrFile string, verbose bool, opts emulator.Options) error {
	if token == "" || account == "" {
		return fmt.Errorf("-token and -account must not be empty")
	}
	if addrFile != "" {
		// A file left by a previous run would make a waiting script connect
		// to a dead port.
		if err := os.Remove(addrFile); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	opts.DataDir, opts.Tokens, opts.Addr = dataDir, map[string]string{token: account}, listen
	logger := log.New(os.Stderr, "openinspect-emulator: ", log.LstdFlags)
	if verbose {
		opts.Logf = logger.Printf
	}
	// A script's uncaught exception is always worth a line: it says which
	// request failed and where the script's log is.
	opts.Workers.ExceptionLogf = logger.Printf
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	srv, err := emulator.Start(opts)
	if err != nil {
		return err
	}
	fmt.Printf("openinspect-emulator listening on %s\n", srv.URL())
	if addrFile != "" {
		if err := writeAtomic(addrFile, srv.URL()); err != nil {
			_ = srv.Close()
			return err
		}
		defer os.Remove(addrFile)
	}
	<-ctx.Done()
	return srv.Close()
}

// writeAtomic makes the file appear complete or not at all, so a script
// polling for it never reads a partial URL.
func writeAtomic(path, content string) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
