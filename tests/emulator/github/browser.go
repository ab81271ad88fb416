package github

// The stand-in's browser origin: the pages a person's browser opens
// (authorize, avatars) on an https loopback listener of their own,
// https://github.localhost:PORT. https because upstream's web refuses to
// send a browser to a sign-in URL that is not (its signIn checks the URL's
// protocol); its certificate is issued by a local CA the emulator makes once
// per data directory (github-ca.pem, beside github.json), which a person
// trusts once or clicks through.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// BrowserHost is the browser origin's hostname; browsers send every name
// under .localhost to loopback by themselves.
const BrowserHost = "github.localhost"

// CAFileName is the local CA's certificate in the data directory: what a
// person adds to their browser's trusted authorities to be spared the
// warning.
const CAFileName = "github-ca.pem"

const caKeyFileName = "github-ca-key.pem"

type browserOrigin struct {
	url  string
	srv  *http.Server
	done chan struct{}
	// caPEM is the CA that issued the listener's certificate; ca and caKey
	// issue the outbound proxy's certificates (IssueCertificate).
	caPEM []byte
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
}

// Start listens on the browser origin (Options.BrowserAddr) and serves the
// web routes at its root through handler, the emulator's own (so counting,
// faults and the request log apply); logged wraps it with the request log.
func (s *Service) Start(handler http.Handler, logged func(http.Handler) http.Handler) error {
	ca, caKey, caPEM, err := loadOrMakeCA(s.dataDir)
	if err != nil {
		return fmt.Errorf("emulator: GitHub stand-in's CA: %w", err)
	}
	leaf, err := issueLeaf(ca, caKey)
	if err != nil {
		return fmt.Errorf("emulator: GitHub stand-in's certificate: %w", err)
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("emulator: GitHub stand-in's browser origin: listen %s: %w", s.addr, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	b := &browserOrigin{url: "https://" + net.JoinHostPort(BrowserHost, strconv.Itoa(port)), done: make(chan struct{}), caPEM: caPEM, ca: ca, caKey: caKey}
	b.srv = &http.Server{Handler: logged(s.browserHandler(handler)), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12},
		// A browser that does not trust the CA yet ends its first handshake:
		// that is expected, not worth a line on stderr.
		ErrorLog: log.New(io.Discard, "", 0)}
	go func() {
		defer close(b.done)
		_ = b.srv.ServeTLS(ln, "", "")
	}()
	s.mu.Lock()
	s.browser = b
	s.mu.Unlock()
	return nil
}

// Close stops the browser origin.
func (s *Service) Close() error {
	s.mu.Lock()
	b := s.browser
	s.browser = nil
	s.mu.Unlock()
	if b == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := b.srv.Shutdown(ctx)
	if err != nil {
		err = b.srv.Close()
	}
	<-b.done
	return err
}

// BrowserURL is the browser origin, https://github.localhost:PORT, once
// Start ran; before, the web routes' path on the emulator's own address.
func (s *Service) BrowserURL() string {
	s.mu.Lock()
	b := s.browser
	s.mu.Unlock()
	if b != nil {
		return b.url
	}
	return s.baseURL() + Prefix
}

// CACertificate is the PEM of the CA the browser origin's certificate
// chains to (nil before Start): what a client trusts to reach it.
func (s *Service) CACertificate() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.browser == nil {
		return nil
	}
	return append([]byte(nil), s.browser.caPEM...)
}

// RewriteBrowserURL points a URL of GitHub's OAuth pages
// (https://github.com/login/oauth/...) at the stand-in's browser origin,
// reporting whether it was one: the local cloud's rewrite of the
// redirects a script sends a browser on (package workers applies it).
func (s *Service) RewriteBrowserURL(u string) (string, bool) {
	const github = "https://github.com/login/oauth/"
	if !strings.HasPrefix(u, github) {
		return u, false
	}
	return s.BrowserURL() + "/login/oauth/" + strings.TrimPrefix(u, github), true
}

// browserHandler serves the web routes at the origin's root: /login/oauth/,
// /avatars/ and git's smart HTTP paths become Prefix + path on the
// emulator's handler; nothing else is there.
func (s *Service) browserHandler(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if !strings.HasPrefix(p, "/login/oauth/") && !strings.HasPrefix(p, "/avatars/") && !isGitPath(p) {
			writePage(w, http.StatusNotFound, "Not Found", "The GitHub stand-in serves its sign-in pages here, nothing else.")
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = Prefix+p, ""
		r2.RequestURI = r2.URL.RequestURI()
		handler.ServeHTTP(w, r2)
	})
}

// isGitPath says p is one of the smart protocol's paths under a
// repository: /{owner}/{repo}/info/refs or /{owner}/{repo}/git-*-pack.
func isGitPath(p string) bool {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	return len(parts) == 3 && parts[0] != "" && parts[1] != "" &&
		(parts[2] == "info/refs" || parts[2] == "git-upload-pack" || parts[2] == "git-receive-pack")
}

// avatar is GET /avatars/u/{id}: a picture with the account's initial.
func (s *Service) avatar(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	initial := "#"
	s.mu.Lock()
	for _, u := range s.st.Users {
		if u.ID == id && u.Login != "" {
			initial = strings.ToUpper(u.Login[:1])
		}
	}
	s.mu.Unlock()
	hue := id * 47 % 360
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "max-age=300")
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="80" height="80" viewBox="0 0 80 80">`+
		`<rect width="80" height="80" fill="hsl(%d,55%%,45%%)"/><text x="40" y="52" font-size="36" text-anchor="middle" `+
		`fill="#fff" font-family="sans-serif">%s</text></svg>`, hue, initial)
}

// loadOrMakeCA reads the data directory's CA, making one the first time.
func loadOrMakeCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	certPath, keyPath := filepath.Join(dir, CAFileName), filepath.Join(dir, caKeyFileName)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	if certErr == nil && keyErr == nil {
		cb, _ := pem.Decode(certPEM)
		kb, _ := pem.Decode(keyPEM)
		if cb != nil && kb != nil {
			cert, err1 := x509.ParseCertificate(cb.Bytes)
			key, err2 := x509.ParseECPrivateKey(kb.Bytes)
			if err1 == nil && err2 == nil && time.Now().Before(cert.NotAfter) {
				return cert, key, certPEM, nil
			}
		}
	} else if !errors.Is(certErr, os.ErrNotExist) && certErr != nil {
		return nil, nil, nil, certErr
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "openinspect local cloud CA " + serial.Text(16)[:8], Organization: []string{"openinspect local cloud"}},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(10, 0, 0),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, nil, nil, err
	}
	if err := os.WriteFile(certPath, certPEM, 0o644); err != nil {
		return nil, nil, nil, err
	}
	return cert, key, certPEM, nil
}

// IssueCertificate makes a certificate for host from the local CA: what
// the outbound proxy presents for the real hosts it answers (github.com,
// api.anthropic.com, ...), so a client trusting the CA (CACertificate)
// trusts it. Start must have run.
func (s *Service) IssueCertificate(host string) (*tls.Certificate, error) {
	s.mu.Lock()
	b := s.browser
	s.mu.Unlock()
	if b == nil {
		return nil, errors.New("emulator: the local CA is not loaded (the GitHub stand-in has not started)")
	}
	c, err := issueLeafFor(b.ca, b.caKey, []string{host}, nil)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// CAFile is where the local CA's certificate is: what a sandbox's clients
// are pointed at (SSL_CERT_FILE, GIT_SSL_CAINFO, NODE_EXTRA_CA_CERTS).
func (s *Service) CAFile() string { return filepath.Join(s.dataDir, CAFileName) }

// issueLeaf makes the listener's certificate, for github.localhost,
// localhost and the loopback addresses.
func issueLeaf(ca *x509.Certificate, caKey *ecdsa.PrivateKey) (tls.Certificate, error) {
	return issueLeafFor(ca, caKey, []string{BrowserHost, "localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback})
}

// issueLeafFor makes a server certificate for names and ips, signed by ca.
func issueLeafFor(ca *x509.Certificate, caKey *ecdsa.PrivateKey, names []string, ips []net.IP) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(0, 0, 90),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    names,
		IPAddresses: ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Raw}, PrivateKey: key}, nil
}
