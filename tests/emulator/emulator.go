// Package emulator is a hermetic local cloud for OpenInspect: the slice of
// the Cloudflare v4 API it uses (D1 on real SQLite files, KV, R2, Queues,
// zones and custom domains, Workers scripts run in workerd) and the sandbox
// APIs (Modal, Daytona, E2B, OpenComputer, Vercel).
//
// It serves two audiences. Tests start it in-process (Start) and point the
// official clients at it (CloudflareBaseURL, URL() + a family's APIPrefix);
// the standalone binary in cmd/openinspect-emulator lets a newcomer run
// `pulumi up` with no cloud account at all. Official clients must work
// unchanged, so responses copy the real envelopes, status codes and error
// codes as closely as we could establish them (each package's ledger;
// package cloudflare's ledger.go has the shared rows).
//
// This package is the composer: Options has one struct per family, New
// builds the families in one list (buildFamilies) over one core.Core and
// data directory, wires what each needs of another (small interfaces the
// consumer declares) and mounts their routes; accessors (D1(), Queues(),
// Modal()...) reach each family's own API. It also keeps the Inventory
// across families, the admin routes that span them and the split of a
// legacy state.json. Each Cloudflare API is a package under cloudflare/
// (d1, kv, r2, queues, zones, workers, assets); the sandbox families are
// modal, daytona, e2b, opencomputer and vercel; github and anthropic are the
// stand-ins for GitHub and the model API; outbound routes what scripts and
// sandboxes fetch; core is what every family shares. It may import every
// family package; none imports it.
package emulator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/anthropic"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/assets"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/d1"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/kv"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/queues"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/r2"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/zones"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/github"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/opencomputer"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/outbound"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
)

// DefaultToken is the API token accepted when Options.Tokens is nil. It is
// also the token the standalone binary documents for demos, so it must never
// be mistaken for a secret.
const DefaultToken = cloudflare.DefaultToken

// DefaultAccountID is the account DefaultToken may access. It has the shape
// of a real account ID (32 hex digits) so client-side validation passes.
const DefaultAccountID = cloudflare.DefaultAccountID

// Options configures a Server.
type Options struct {
	// DataDir holds the SQLite files and the persisted metadata. Empty means
	// a fresh temporary directory that Close removes.
	DataDir string
	// Tokens maps each accepted API token to the one account ID it may
	// access. Nil means DefaultToken -> DefaultAccountID.
	Tokens map[string]string
	// Logf, when set, receives one line per request. Authorization headers
	// and request bodies are never logged.
	Logf func(format string, args ...any)
	// Addr is the address Start listens on. Empty means 127.0.0.1:0 (a free
	// loopback port). New ignores it.
	Addr string

	D1 d1.Options // package d1
	KV kv.Options // package kv
	R2 r2.Options // package r2
	// Queues and Zones configure packages queues and zones; their Logf
	// defaults to Logf.
	Queues queues.Options
	Zones  zones.Options
	// Workers and Assets configure packages workers (scripts, the runtime,
	// crons, local origins; its Logf defaults to Logf) and assets.
	Workers workers.Options
	Assets  assets.Options

	// The sandbox families (packages modal, daytona, e2b, opencomputer,
	// vercel); zero values take each package's defaults. Modal's BaseURL
	// and Logf, and Daytona's Logf, default to the Server's.
	Modal             modal.Options
	Daytona           daytona.Options
	E2B               e2b.Options
	OpenComputer      opencomputer.Options
	Vercel            vercel.Options
	GitHub            github.Options    // the GitHub stand-in; its Logf and BaseURL default to the Server's
	Anthropic         anthropic.Options // the model stand-in; its keys default to what the installation seeds (anthropic.New)
	OutboundProxyAddr string            // where the outbound gateway listens as an HTTP(S) proxy (outbound.ProxyOptions)
}

// Server is one emulator instance. All methods are safe for concurrent use.
type Server struct {
	cf      *cloudflare.Accounts // the tokens and their accounts, and v4 route registration
	dataDir string
	tempDir bool
	logf    func(format string, args ...any)

	core    *core.Core // mux, counts, faults and holds shared by every family
	mux     *http.ServeMux
	handler http.Handler

	d1     *d1.Service     // the D1 API and binding backend (package d1), own lock and file
	kv     *kv.Service     // the KV API and binding backend (package kv), own lock and file
	r2     *r2.Service     // the R2 API and binding backend (package r2), own lock and file
	queues *queues.Service // Queues, consumers and the broker (package queues), own lock and file
	zones  *zones.Service  // zones, custom domains, routes (package zones), own lock and file

	workers *workers.Service // scripts, the runtime, serving (package workers), own lock and file
	assets  *assets.Service  // static assets (package assets), own lock and file

	modal *modal.Service // the Modal API (package modal), with its own lock and file

	daytona *daytona.Service // Daytona API and object storage (package daytona), own lock and file

	e2b *e2b.Service // E2B API (package e2b), own lock and file

	opencomputer *opencomputer.Service // OpenComputer API (package opencomputer), own lock and file

	vercel *vercel.Service    // Vercel Sandbox API (package vercel), own lock and file
	github *github.Service    // the GitHub stand-in (package github), own lock, file and browser origin
	model  *anthropic.Service // the model stand-in (package anthropic), no state file
	out    *outbound.Gateway  // where the scripts' fetch() calls go (package outbound), with its log

	httpSrv   *http.Server
	url       string
	serveDone chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// New creates a Server without listening, loading persisted state from
// opts.DataDir when present. Use Handler to mount it, or Start to serve it.
func New(opts Options) (*Server, error) {
	c := core.New()
	accounts, err := cloudflare.NewAccounts(c, opts.Tokens)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cf:   accounts,
		logf: opts.Logf,
		core: c,
	}
	if opts.DataDir == "" {
		dir, err := os.MkdirTemp("", "openinspect-emulator-")
		if err != nil {
			return nil, fmt.Errorf("emulator: %w", err)
		}
		s.dataDir, s.tempDir = dir, true
	} else {
		dir, err := filepath.Abs(opts.DataDir)
		if err != nil {
			return nil, fmt.Errorf("emulator: %w", err)
		}
		s.dataDir = dir
	}
	if err := os.MkdirAll(s.dataDir, 0o700); err != nil {
		s.removeTemp()
		return nil, fmt.Errorf("emulator: %w", err)
	}
	if err := core.SplitLegacyState(s.dataDir, legacyStateFile, legacyKeys, legacyStateVersion); err != nil {
		s.removeTemp()
		return nil, err
	}
	if err := s.buildFamilies(opts); err != nil {
		s.removeTemp()
		return nil, err
	}
	s.mux = s.core.Mux()
	s.routes()
	// Vercel deployments' hosts are answered before the Workers' hosts.
	s.handler = s.vercel.ServeHosts(s.workers.Handler(s.mux, s.logged))
	return s, nil
}

// buildFamilies makes every family, in one list: each with its own
// Options, the shared core and data directory, and (the Cloudflare APIs)
// the accounts and what it needs of its siblings.
func (s *Server) buildFamilies(opts Options) error {
	orLogf := func(l func(string, ...any)) func(string, ...any) {
		if l != nil {
			return l
		}
		return opts.Logf
	}
	opts.Queues.Logf, opts.Zones.Logf, opts.Workers.Logf = orLogf(opts.Queues.Logf), orLogf(opts.Zones.Logf), orLogf(opts.Workers.Logf)
	opts.Modal.Logf, opts.Daytona.Logf, opts.GitHub.Logf, opts.Anthropic.Logf = orLogf(opts.Modal.Logf), orLogf(opts.Daytona.Logf), orLogf(opts.GitHub.Logf), orLogf(opts.Anthropic.Logf)
	opts.Workers.BaseURL, opts.GitHub.BaseURL = s.URL, s.URL
	if opts.Modal.BaseURL == nil {
		opts.Modal.BaseURL = s.URL
	}
	opts.Modal.Sandboxes.ProxyURL, opts.Modal.Sandboxes.CAFile = func() string { return s.out.ProxyURL() }, func() string { return s.github.CAFile() }
	opts.Modal.Sandboxes.LocalNames = func() []string { return s.workers.WorkersDevHosts() }
	dir, c, cf := s.dataDir, s.core, s.cf
	families := []func() error{
		func() (err error) { s.github, err = github.New(opts.GitHub, dir, c); return err },
		func() error {
			s.out = outbound.New(outbound.Options{Logf: opts.Logf, BrowserURL: s.github.RewriteBrowserURL, Hosts: map[string]map[string]string{
				"github": github.RealHosts, "anthropic": anthropic.RealHosts, "modal": modal.RealHosts, "e2b": e2b.RealHosts, "vercel": vercel.RealHosts,
				"daytona": daytona.RealHosts, "cloudflare": cloudflare.RealHosts}}, c)
			return nil
		},
		func() (err error) { s.d1, err = d1.New(opts.D1, dir, c, cf); return err },
		func() (err error) { s.kv, err = kv.New(opts.KV, dir, c, cf); return err },
		func() (err error) { s.r2, err = r2.New(opts.R2, dir, c, cf); return err },
		func() (err error) { s.assets, err = assets.New(opts.Assets, dir, c, cf); return err },
		func() (err error) {
			s.workers, err = workers.New(opts.Workers, dir, c, cf, workers.Deps{D1: s.d1, KV: s.kv, R2: s.r2, Assets: s.assets, Outbound: s.out})
			return err
		},
		// Queues and zones reach the scripts through workers, which reaches them back (Wire).
		func() (err error) { s.queues, err = queues.New(opts.Queues, dir, c, cf, s.workers); return err },
		func() (err error) { s.zones, err = zones.New(opts.Zones, dir, c, cf, s.workers); return err },
		func() error { s.workers.Wire(s.queues, s.zones); return nil },
		func() (err error) { s.modal, err = modal.New(opts.Modal, dir, c); return err },
		func() (err error) { s.daytona, err = daytona.New(opts.Daytona, dir, c); return err },
		func() (err error) { s.e2b, err = e2b.New(opts.E2B, dir, c); return err },
		func() (err error) { s.opencomputer, err = opencomputer.New(opts.OpenComputer, dir, c); return err },
		func() (err error) { s.vercel, err = vercel.New(opts.Vercel, dir, c); return err },
		func() error { s.model = anthropic.New(opts.Anthropic, s.modal, c); return nil },
	}
	for _, build := range families {
		if err := build(); err != nil {
			return err
		}
	}
	return nil
}

// Start is New plus listening on opts.Addr (default 127.0.0.1:0) and serving
// in the background until Close.
func Start(opts Options) (*Server, error) {
	s, err := New(opts)
	if err != nil {
		return nil, err
	}
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("emulator: listen %s: %w", addr, err)
	}
	s.url = "http://" + core.URLHost(ln.Addr().(*net.TCPAddr))
	s.httpSrv = &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second, Protocols: modal.Protocols()}
	s.serveDone = make(chan struct{})
	go func() {
		defer close(s.serveDone)
		_ = s.httpSrv.Serve(ln)
	}()
	s.queues.Start()
	// The outbound proxy's certificates come from the local CA; its requests are routed as the scripts' are.
	proxy := outbound.ProxyOptions{Addr: opts.OutboundProxyAddr, Certificate: s.github.IssueCertificate, Local: s.workers.IsLocalHost, Next: s.handler, EmulatorAddr: ln.Addr().String()}
	if err := errors.Join(s.workers.Start(s.logged), s.github.Start(s.handler, s.logged), s.out.StartProxy(proxy)); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// logged wraps h with the request log (core.WithLog).
func (s *Server) logged(h http.Handler) http.Handler { return core.WithLog(s.logf, h) }

// Handler serves the Cloudflare API under /client/v4/, uploaded scripts'
// own HTTP on their own hosts (<script>.workers.localhost, custom domains,
// routes: hosts.go) and under the /__workers/ alias (runtime.go), and the
// admin API under /__emulator/.
func (s *Server) Handler() http.Handler { return s.handler }

// URL is the base URL Start listens on, e.g. http://127.0.0.1:41234. It is
// empty for a Server made with New.
func (s *Server) URL() string { return s.url }

// CloudflareBaseURL is what to pass to cloudflare-go's option.WithBaseURL.
func (s *Server) CloudflareBaseURL() string { return s.url + "/client/v4/" }

// DataDir is where state lives; useful when New picked a temporary one.
func (s *Server) DataDir() string { return s.dataDir }

// Close stops listening, closes every SQLite handle, writes the metadata one
// last time and removes the data directory if New created it. It is
// idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		errs = append(errs, s.out.Close(), s.queues.Close(), s.workers.Close(), s.github.Close(), s.modal.Close())
		if s.httpSrv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := s.httpSrv.Shutdown(ctx); err != nil {
				// In-flight requests (e.g. an injected latency) must not keep
				// a test waiting forever.
				_ = s.httpSrv.Close()
			}
			cancel()
			<-s.serveDone
		}
		errs = append(errs, s.d1.Close())
		if !s.tempDir {
			for _, f := range []interface{ Save() error }{s.d1, s.kv, s.r2, s.queues, s.zones, s.workers, s.assets, s.github} {
				errs = append(errs, f.Save())
			}
		}
		if err := s.removeTemp(); err != nil {
			errs = append(errs, err)
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

func (s *Server) removeTemp() error {
	if !s.tempDir {
		return nil
	}
	return os.RemoveAll(s.dataDir)
}

// routes registers every route. Each area owns its routes so that adding an
// API means adding one file and one line here.
func (s *Server) routes() {
	s.core.SetFaultCheck(checkFaultRoute)
	s.core.AllowFaultKind(modal.FaultImageBuildFailure)
	s.core.RegisterAdmin()
	for _, f := range []interface{ Register() }{s.cf, s.d1, s.kv, s.r2, s.queues, s.zones, s.workers, s.assets,
		s.daytona, s.e2b, s.opencomputer, s.vercel, s.modal, s.github, s.model, s.out} {
		f.Register()
	}
	s.registerAdmin()
	s.mux.HandleFunc("/", s.core.Unmatched)
}

// D1 is the D1 API (package d1).
func (s *Server) D1() *d1.Service { return s.d1 }

// KV is the Workers KV API (package kv).
func (s *Server) KV() *kv.Service { return s.kv }

// R2 is the R2 API (package r2): PutObject, DeleteObject.
func (s *Server) R2() *r2.Service { return s.r2 }

// Queues is the Queues API and its broker (package queues): Messages.
func (s *Server) Queues() *queues.Service { return s.queues }

// Zones is the zones, custom domains and routes (package zones): AddZone,
// ZoneID.
func (s *Server) Zones() *zones.Service { return s.zones }

// Workers is the Workers service (package workers): Worker, WorkerURL,
// AppSecrets, RuntimeStats, LocalOrigins and the rest of its Go API.
func (s *Server) Workers() *workers.Service { return s.workers }

// Assets is the static assets service (package assets): Blobs.
func (s *Server) Assets() *assets.Service { return s.assets }

// Modal is the Modal API (package modal).
func (s *Server) Modal() *modal.Service { return s.modal }

// Daytona is the Daytona API and object storage (package daytona); its API
// is at URL() + daytona.APIPrefix.
func (s *Server) Daytona() *daytona.Service { return s.daytona }

// E2B is the E2B API (package e2b), at URL() + e2b.APIPrefix.
func (s *Server) E2B() *e2b.Service { return s.e2b }

// OpenComputer is the OpenComputer API (package opencomputer), at URL() +
// opencomputer.APIPrefix.
func (s *Server) OpenComputer() *opencomputer.Service { return s.opencomputer }

// Vercel is the Vercel Sandbox API (package vercel), at URL() +
// vercel.APIPrefix.
func (s *Server) Vercel() *vercel.Service { return s.vercel }

// Anthropic is the model stand-in (package anthropic).
func (s *Server) Anthropic() *anthropic.Service { return s.model }

// GitHub is the GitHub stand-in (package github): its REST API at URL() +
// github.APIPrefix, its pages at BrowserURL().
func (s *Server) GitHub() *github.Service { return s.github }

// Outbound is the gateway of the scripts' fetch() calls, and its log.
func (s *Server) Outbound() *outbound.Gateway { return s.out }
