package workerd

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

//go:embed gateway.js
var gatewayJS []byte

//go:embed tail.js
var tailJS []byte

// StartTimeout bounds how long a configuration may take to start serving.
const StartTimeout = 30 * time.Second

// Runtime starts workerd processes from one binary, keeping their files
// under Dir.
type Runtime struct {
	Binary string
	Dir    string
	// Logf, if set, receives what the scripts log (console.log) and
	// workerd's own messages, one line at a time.
	Logf func(format string, args ...any)
}

// Process is one running workerd.
type Process struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{}
	stderr *lineLog
	once   sync.Once
}

// URL is the gateway's base URL, e.g. http://127.0.0.1:41234.
func (p *Process) URL() string { return p.url }

// StartError is a configuration workerd refused or a script that did not
// start: Message is what workerd printed, without its source-file prefixes.
type StartError struct{ Message string }

func (e *StartError) Error() string { return "workerd did not start: " + e.Message }

// Start renders cfg into dir (a directory of its own under r.Dir) and runs
// workerd on it, returning once the gateway answers. A script that throws
// at startup, a syntax error or a compatibility date workerd cannot serve
// is a *StartError holding workerd's message.
func (r *Runtime) Start(ctx context.Context, name string, cfg Config) (*Process, error) {
	dir := filepath.Join(r.Dir, name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("workerd: clear %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("workerd: %w", err)
	}
	own := OwnModules{Gateway: filepath.Join(dir, "gateway.js"), Tail: filepath.Join(dir, "tail.js")}
	for path, code := range map[string][]byte{own.Gateway: gatewayJS, own.Tail: tailJS} {
		if err := os.WriteFile(path, code, 0o600); err != nil {
			return nil, fmt.Errorf("workerd: %w", err)
		}
	}
	if cfg.StorageDir != "" {
		if err := os.MkdirAll(cfg.StorageDir, 0o700); err != nil {
			return nil, fmt.Errorf("workerd: %w", err)
		}
	}
	text, err := Render(cfg, own, dir)
	if err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "config.capnp")
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		return nil, fmt.Errorf("workerd: %w", err)
	}
	// The listener is bound here and handed over (--socket-fd): the port is
	// known before workerd starts, and connections made before it is ready
	// wait in the backlog instead of being refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("workerd: listen: %w", err)
	}
	file, err := ln.(*net.TCPListener).File()
	_ = ln.Close() // the duplicate in file keeps the socket open
	if err != nil {
		return nil, fmt.Errorf("workerd: listener: %w", err)
	}
	defer file.Close()

	cmd := exec.Command(r.Binary, "serve", "--experimental", "--socket-fd", "http=3", config)
	cmd.Dir = dir
	cmd.ExtraFiles = []*os.File{file}
	p := &Process{url: "http://" + ln.Addr().String(), cmd: cmd, exited: make(chan struct{}), stderr: &lineLog{logf: r.Logf}}
	cmd.Stdout, cmd.Stderr = p.stderr, p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("workerd: start %s: %w", r.Binary, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitReady(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func (p *Process) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	ready := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/", nil)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return p.startError()
		case <-time.After(2 * time.Second):
			return fmt.Errorf("workerd: gateway did not answer: %w", err)
		}
	case <-p.exited:
		return p.startError()
	case <-ctx.Done():
		return fmt.Errorf("workerd: not ready after %s: %w; it printed: %s", StartTimeout, ctx.Err(), p.stderr.String())
	}
}

// workerdPrefix is what workerd puts before a message about a service
// ("service w:acct/name: Uncaught Error: ...").
var workerdPrefix = regexp.MustCompile(`(?m)^service \S+: `)

var workerdWarning = regexp.MustCompile(`^workerd/\S+: warning: `)

func (p *Process) startError() error {
	var lines []string
	for _, l := range strings.Split(p.stderr.String(), "\n") {
		// workerd's own warnings ("workerd/server/...: warning: ...") are
		// not why a script did not start.
		if !workerdWarning.MatchString(l) {
			lines = append(lines, l)
		}
	}
	msg := strings.TrimSpace(strings.Join(lines, "\n"))
	msg = workerdPrefix.ReplaceAllString(msg, "")
	if msg == "" {
		msg = "workerd exited (" + p.cmd.ProcessState.String() + ")"
	}
	return &StartError{Message: msg}
}

// Stop ends the process and waits for it. It is idempotent.
func (p *Process) Stop() {
	p.once.Do(func() {
		if p.cmd.Process != nil {
			_ = p.cmd.Process.Kill()
		}
		<-p.exited
	})
}

// Exited is closed when the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Output is what the process printed so far (bounded).
func (p *Process) Output() string { return p.stderr.String() }

// lineLog keeps the last output of a process and passes whole lines on.
type lineLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	partial []byte
	logf    func(format string, args ...any)
}

const lineLogLimit = 64 << 10

func (l *lineLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(b)
	if l.buf.Len() > lineLogLimit {
		keep := l.buf.Bytes()[l.buf.Len()-lineLogLimit/2:]
		l.buf = *bytes.NewBuffer(append([]byte(nil), keep...))
	}
	if l.logf != nil {
		l.partial = append(l.partial, b...)
		for {
			i := bytes.IndexByte(l.partial, '\n')
			if i < 0 {
				break
			}
			l.logf("workerd: %s", l.partial[:i])
			l.partial = l.partial[i+1:]
		}
	}
	return len(b), nil
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// ErrNoBinary is returned by Find when no workerd binary is configured.
var ErrNoBinary = errors.New("no workerd binary: install it with .ci/workerd-tools.sh, put it on PATH or set OPENINSPECT_WORKERD")

// Find locates the workerd binary: explicit, else $OPENINSPECT_WORKERD, else
// workerd on PATH.
func Find(explicit string) (string, error) {
	for _, c := range []string{explicit, os.Getenv("OPENINSPECT_WORKERD")} {
		if c != "" {
			if _, err := os.Stat(c); err != nil {
				return "", fmt.Errorf("workerd binary %s: %w", c, err)
			}
			return c, nil
		}
	}
	if p, err := exec.LookPath("workerd"); err == nil {
		return p, nil
	}
	return "", ErrNoBinary
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }
