package outbound

// The gateway as an HTTP(S) proxy, for processes outside workerd (a
// sandbox's git, OpenCode, Python) that reach the same hosts a script does:
// they are given HTTPS_PROXY=<ProxyURL> and the local cloud's CA, and
//
//   - CONNECT to a host a family answers (api.github.com, github.com,
//     api.anthropic.com, ...) is terminated here with a certificate for
//     that host issued by the local CA, and each request inside is routed
//     as a script's fetch is (ServeOutbound): logged, and answered by the
//     family;
//   - CONNECT to one of the emulator's own addresses (a Worker's
//     *.workers.localhost origin) is a plain tunnel to it on loopback, so
//     a WebSocket through the proxy works;
//   - a plain-HTTP proxy request (absolute URL) is routed as a fetch;
//   - anything else is refused (CONNECT with 403, a request with 502) and
//     logged as refused: nothing leaves the machine.

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ProxyOptions configures StartProxy.
type ProxyOptions struct {
	// Addr is where to listen; "" is 127.0.0.1:0.
	Addr string
	// Certificate issues a certificate for a host from the local CA; it is
	// called at the first CONNECT to that host, so the CA may load later.
	Certificate func(host string) (*tls.Certificate, error)
	// Local says a host[:port] is one of the emulator's own addresses.
	Local func(hostport string) bool
	// Next serves a request once rewritten (the emulator's handler).
	Next http.Handler
	// EmulatorAddr is the emulator's listener (host:port): where a tunnel
	// to one of its names on the default ports (a zone's hostname) goes.
	EmulatorAddr string
}

type proxy struct {
	opts  ProxyOptions
	url   string
	srv   *http.Server
	done  chan struct{}
	certs sync.Map // host -> *tls.Certificate

	mu    sync.Mutex
	conns map[net.Conn]struct{} // hijacked tunnels, closed with the proxy
}

// StartProxy listens as an HTTP(S) proxy, at ProxyURL
// (http://127.0.0.1:PORT) from then on.
func (g *Gateway) StartProxy(o ProxyOptions) error {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Certificate == nil || o.Next == nil || o.Local == nil {
		return errors.New("emulator: the outbound proxy needs Certificate, Local and Next")
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("emulator: outbound proxy: listen %s: %w", o.Addr, err)
	}
	p := &proxy{opts: o, url: "http://" + ln.Addr().String(), done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.serveProxy(p, w, r) }),
		ReadHeaderTimeout: 30 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(ln)
	}()
	g.mu.Lock()
	g.proxy = p
	g.mu.Unlock()
	return nil
}

// ProxyURL is the proxy's URL, "" when it is not running.
func (g *Gateway) ProxyURL() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.proxy == nil {
		return ""
	}
	return g.proxy.url
}

// Close stops the proxy and every tunnel through it.
func (g *Gateway) Close() error {
	g.mu.Lock()
	p := g.proxy
	g.proxy = nil
	g.mu.Unlock()
	if p == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if err != nil {
		err = p.srv.Close()
	}
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	<-p.done
	if errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	return err
}

// proxyClient names who is asking: "proxy", or "proxy/<user>" when the
// client sent Proxy-Authorization (a sandbox names itself so).
func proxyClient(r *http.Request) string {
	h := r.Header.Get("Proxy-Authorization")
	if scheme, v, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "basic") {
		if b, err := base64.StdEncoding.DecodeString(v); err == nil {
			if user, _, _ := strings.Cut(string(b), ":"); user != "" {
				return "proxy/" + user
			}
		}
	}
	return "proxy"
}

func (g *Gateway) serveProxy(p *proxy, w http.ResponseWriter, r *http.Request) {
	client := proxyClient(r)
	r.Header.Del("Proxy-Authorization")
	if r.Method != http.MethodConnect {
		if !r.URL.IsAbs() {
			http.Error(w, "the local cloud's outbound proxy answers proxy requests only (an absolute URL, or CONNECT)", http.StatusBadRequest)
			return
		}
		g.ServeOutbound(w, r, client, p.opts.Local, p.opts.Next)
		return
	}
	hostport := strings.ToLower(r.Host)
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, "443"
	}
	_, _, family := g.route(hostport, "/")
	local := p.opts.Local(hostport)
	if !family && !local {
		g.record(Entry{At: time.Now().UTC(), Script: client, Method: http.MethodConnect, URL: hostport, Refused: true, Status: http.StatusForbidden})
		http.Error(w, fmt.Sprintf("the local cloud sends no request off this machine: %s is none of the hosts it answers for", host), http.StatusForbidden)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	if !p.track(conn) {
		_ = conn.Close()
		return
	}
	defer p.untrack(conn)
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		return
	}
	in := &bufferedConn{Conn: conn, r: buf.Reader}
	if local && !family {
		// The emulator's own address: a plain tunnel to its listener on
		// loopback (a Worker's name resolves nowhere else); a name on a
		// default port (a zone's hostname) to the emulator's own port.
		addr := net.JoinHostPort("127.0.0.1", port)
		if (port == "443" || port == "80") && p.opts.EmulatorAddr != "" {
			addr = p.opts.EmulatorAddr
		}
		g.tunnel(in, addr, client, hostport)
		return
	}
	// A family's host: terminate TLS (or read plain HTTP, for a CONNECT to
	// port 80) and route each request inside.
	var c net.Conn = in
	if first, err := in.r.Peek(1); err == nil && first[0] == 0x16 {
		c = tls.Server(in, &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"},
			GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
				return p.certificate(host)
			}})
	}
	scheme := "http"
	if _, isTLS := c.(*tls.Conn); isTLS {
		scheme = "https"
	}
	authority := host
	if (scheme == "https" && port != "443") || (scheme == "http" && port != "80") {
		authority = hostport
	}
	one := newOneConnListener(c)
	srv := &http.Server{ReadHeaderTimeout: 30 * time.Second, ErrorLog: log.New(io.Discard, "", 0),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.URL.Scheme, r.URL.Host = scheme, authority
			g.ServeOutbound(w, r, client, p.opts.Local, p.opts.Next)
		}),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				one.Close()
			}
		}}
	_ = srv.Serve(one)
}

// tunnel copies bytes both ways between in and addr.
func (g *Gateway) tunnel(in net.Conn, addr, client, hostport string) {
	out, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return
	}
	defer out.Close()
	g.record(Entry{At: time.Now().UTC(), Script: client, Method: http.MethodConnect, URL: hostport, To: "emulator", Status: http.StatusOK})
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
	<-done
}

func (p *proxy) certificate(host string) (*tls.Certificate, error) {
	if c, ok := p.certs.Load(host); ok {
		return c.(*tls.Certificate), nil
	}
	c, err := p.opts.Certificate(host)
	if err != nil {
		return nil, err
	}
	p.certs.Store(host, c)
	return c, nil
}

// track records a hijacked connection; false once the proxy is closing.
func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return false
	default:
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

// bufferedConn reads what the hijack's reader already buffered first.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// oneConnListener hands out one connection, then waits until closed.
type oneConnListener struct {
	conn   net.Conn
	once   sync.Once
	closed chan struct{}
	mu     sync.Mutex
	given  bool
}

func newOneConnListener(c net.Conn) *oneConnListener {
	return &oneConnListener{conn: c, closed: make(chan struct{})}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if !l.given {
		l.given = true
		l.mu.Unlock()
		return l.conn, nil
	}
	l.mu.Unlock()
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }
