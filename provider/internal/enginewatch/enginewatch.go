// Package enginewatch ends the plugin when the engine that started it is
// gone.
//
// A `pulumi` CLI killed outright (SIGKILL, OOM, a CI runner timing out)
// cannot tell its plugins to stop: the plugin is reparented and keeps
// serving until Pulumi's own health check notices, which polls the engine
// every five minutes. Meanwhile it holds whatever it was doing (a builder,
// `modal deploy`, a held upload) and the next `pulumi up` meets it. Watching
// the parent process (a cheap getppid poll) and the engine's gRPC health
// endpoint every second brings that down to about a second; the children
// the plugin started die with it (their parent-death signal), so stopping
// the plugin stops the run.
package enginewatch

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
)

// Watch cancels its context once the engine is gone and, if the plugin has
// not exited by itself within its grace period, exits the process.
type Watch struct {
	cancel context.CancelFunc
	every  time.Duration
	grace  time.Duration
	log    io.Writer
	exit   func(code int)
	once   sync.Once
}

// Options tune a Watch; the zero value is what the plugin uses.
type Options struct {
	// Every is how often the parent and the engine are checked (1 s).
	Every time.Duration
	// Grace is how long in-flight calls get to return after the engine
	// went before the process exits anyway (3 s): their contexts are
	// cancelled, but a call that ignores its context must not keep the
	// plugin alive.
	Grace time.Duration
	// Log receives the one line saying why the plugin stops (stderr).
	Log io.Writer
	// Exit ends the process (os.Exit); tests replace it.
	Exit func(code int)
	// Parent reports the current parent pid (os.Getppid); tests replace it.
	Parent func() int
}

// Start watches the process that started this one from now on. The returned
// context is cancelled when that parent exits (the kernel reparents this
// process, so its parent pid changes) or when Engine's health check fails.
func Start(ctx context.Context, opts Options) (context.Context, *Watch) {
	if opts.Every <= 0 {
		opts.Every = time.Second
	}
	if opts.Grace <= 0 {
		opts.Grace = 3 * time.Second
	}
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.Exit == nil {
		opts.Exit = os.Exit
	}
	if opts.Parent == nil {
		opts.Parent = os.Getppid
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Watch{cancel: cancel, every: opts.Every, grace: opts.Grace, log: opts.Log, exit: opts.Exit}
	parent := opts.Parent()
	go func() {
		tick := time.NewTicker(opts.Every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if now := opts.Parent(); now != parent {
					w.stop(fmt.Sprintf("its parent process %d exited", parent))
					return
				}
			}
		}
	}()
	return ctx, w
}

// Engine adds a health check of the engine at addr (the address the engine
// passes as the plugin's argument) to the watch: when the engine stops
// answering, the plugin stops too. The watch's context bounds the check.
func (w *Watch) Engine(ctx context.Context, addr string) error {
	if err := rpcutil.Healthcheck(ctx, addr, w.every, func() {
		w.stop("the engine at " + addr + " stopped answering")
	}); err != nil {
		return fmt.Errorf("watching the engine at %s: %w", addr, err)
	}
	return nil
}

// stop cancels the watch's context once and arms the forced exit.
func (w *Watch) stop(why string) {
	w.once.Do(func() {
		fmt.Fprintf(w.log, "openinspect: stopping: %s\n", why)
		w.cancel()
		time.AfterFunc(w.grace, func() { w.exit(1) })
	})
}
