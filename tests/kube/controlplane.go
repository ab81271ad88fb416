// Package kube starts a real Kubernetes control plane on loopback for tests:
// etcd and kube-apiserver, and in Full mode also kube-controller-manager,
// kube-scheduler and the kwok fake kubelet (with one fake Node), so that
// Deployments become Ready, Jobs complete and namespace deletion finishes.
// No container runs and nothing listens beyond 127.0.0.1; every run uses
// fresh free ports and a fresh temporary directory.
//
// The binaries come from .ci/kube-tools.sh (see
// /work/shared/design/kubernetes-notes.md), which caches them in
// ${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}/bin.
// Only the standard library is used: the PKI is made with crypto/x509 and the
// Node is created through the REST API with the admin client certificate.
package kube

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// Binary names looked up in Options.BinDir.
const (
	Etcd              = "etcd"
	KubeAPIServer     = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Kwok              = "kwok"
)

// FakeNodeName is the Node created (and managed by kwok) in Full mode.
const FakeNodeName = "kwok-node-0"

// ServiceClusterIPRange is the apiserver's --service-cluster-ip-range.
const ServiceClusterIPRange = "10.0.0.0/24"

// Options configures Start.
type Options struct {
	// Full also starts kube-controller-manager, kube-scheduler and kwok and
	// creates a fake Node, so workloads become Ready.
	Full bool
	// BinDir holds the binaries; default DefaultBinDir().
	BinDir string
	// Logf receives progress lines (e.g. t.Logf); default: discard.
	Logf func(string, ...any)
}

// ControlPlane is a running control plane. Stop it when done.
type ControlPlane struct {
	dir        string
	host       string
	kubeconfig string
	token      string
	client     *http.Client
	logf       func(string, ...any)

	mu      sync.Mutex
	procs   []*process
	stopped bool
}

type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error // Wait's result, valid after done is closed
}

// DefaultBinDir is ${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}/bin,
// where .ci/kube-tools.sh links the binaries.
func DefaultBinDir() string { return toolchain.BinDir() }

// Binaries lists the binaries Start needs for the given mode.
func Binaries(full bool) []string {
	if full {
		return []string{Etcd, KubeAPIServer, ControllerManager, Scheduler, Kwok}
	}
	return []string{Etcd, KubeAPIServer}
}

// CheckBinaries reports which needed binaries are missing from binDir
// (default DefaultBinDir()), with a hint on how to build them. While `make
// test` still builds the Kubernetes lane behind the tests, it first waits
// for that lane (logf, when not nil, hears that it waits).
func CheckBinaries(binDir string, full bool, logf func(format string, args ...any)) error {
	if binDir == "" {
		binDir = DefaultBinDir()
	}
	if err := toolchain.WaitForLane("kubernetes", logf); err != nil {
		return fmt.Errorf("kube: %w", err)
	}
	var missing []string
	for _, b := range Binaries(full) {
		fi, err := os.Stat(filepath.Join(binDir, b))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("kube: missing %s in %s: run .ci/kube-tools.sh all "+
			"(builds and caches the control plane; tens of minutes cold, seconds when cached)",
			strings.Join(missing, ", "), binDir)
	}
	return nil
}

// Start starts the control plane and returns once the apiserver answers
// /readyz with 200 (and, in Full mode, once the controller-manager and the
// scheduler are healthy and the fake Node is Ready). ctx bounds the start-up
// only; the processes run until Stop. On error everything started is stopped.
func Start(ctx context.Context, opts Options) (_ *ControlPlane, err error) {
	if opts.BinDir == "" {
		opts.BinDir = DefaultBinDir()
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if err := CheckBinaries(opts.BinDir, opts.Full, opts.Logf); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kube-controlplane-")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{dir: dir, logf: opts.Logf}
	defer func() {
		if err != nil {
			_ = cp.Stop()
		}
	}()
	begin := time.Now()
	bin := func(name string) string { return filepath.Join(opts.BinDir, name) }

	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort, cmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4]

	pki, err := writePKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("kube: pki: %w", err)
	}
	cp.token = pki.token
	cp.host = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	cp.client = &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			Proxy: nil, // loopback only; never through a proxy
			TLSClientConfig: &tls.Config{
				RootCAs:      pki.caPool,
				Certificates: []tls.Certificate{pki.admin},
				MinVersion:   tls.VersionTLS12,
			},
		},
	}
	cp.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cp.kubeconfig, pki.kubeconfig(cp.host), 0o600); err != nil {
		return nil, err
	}

	// etcd
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	etcdData := filepath.Join(dir, "etcd")
	if err := os.MkdirAll(etcdData, 0o700); err != nil {
		return nil, err
	}
	etcdArgs := []string{
		"--name=default",
		"--data-dir=" + etcdData,
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		"--initial-cluster-state=new",
	}
	if helpMentions(bin(Etcd), "--unsafe-no-fsync") { // etcd >= 3.5
		etcdArgs = append(etcdArgs, "--unsafe-no-fsync")
	}
	etcd, err := cp.spawn(Etcd, bin(Etcd), etcdArgs, nil)
	if err != nil {
		return nil, err
	}
	if err := cp.waitFor(ctx, etcd, 60*time.Second, func() bool {
		body, code, err := getPlain(etcdURL + "/health")
		return err == nil && code == 200 && strings.Contains(body, `"health":"true"`)
	}); err != nil {
		return nil, err
	}
	opts.Logf("kube: etcd ready on %s (%s)", etcdURL, time.Since(begin).Round(time.Millisecond))

	// kube-apiserver
	api, err := cp.spawn(KubeAPIServer, bin(KubeAPIServer), []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--advertise-address=127.0.0.1",
		"--tls-cert-file=" + pki.serverCert,
		"--tls-private-key-file=" + pki.serverKey,
		"--client-ca-file=" + pki.caCert,
		"--token-auth-file=" + pki.tokenFile,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki.saPub,
		"--service-account-signing-key-file=" + pki.saKey,
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		"--cert-dir=" + filepath.Join(dir, "apiserver-certs"),
	}, nil)
	if err != nil {
		return nil, err
	}
	if err := cp.waitFor(ctx, api, 120*time.Second, func() bool {
		code, err := cp.status(ctx, "/readyz")
		return err == nil && code == 200
	}); err != nil {
		return nil, err
	}
	opts.Logf("kube: kube-apiserver ready on %s (%s)", cp.host, time.Since(begin).Round(time.Millisecond))

	if !opts.Full {
		return cp, nil
	}

	// kube-controller-manager and kube-scheduler, authenticated as admin.
	kc := cp.kubeconfig
	cm, err := cp.spawn(ControllerManager, bin(ControllerManager), []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(cmPort),
		"--cert-dir=" + filepath.Join(dir, "controller-manager-certs"),
		"--leader-elect=false",
		"--service-account-private-key-file=" + pki.saKey,
		"--root-ca-file=" + pki.caCert,
		"--cluster-signing-cert-file=" + pki.caCert,
		"--cluster-signing-key-file=" + pki.caKey,
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
	}, nil)
	if err != nil {
		return nil, err
	}
	sched, err := cp.spawn(Scheduler, bin(Scheduler), []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(schedPort),
		"--cert-dir=" + filepath.Join(dir, "scheduler-certs"),
		"--leader-elect=false",
	}, nil)
	if err != nil {
		return nil, err
	}
	// kwok reads ~/.kwok/kwok.yaml if present: give it an empty home.
	kwokHome := filepath.Join(dir, "kwok-home")
	if err := os.MkdirAll(kwokHome, 0o700); err != nil {
		return nil, err
	}
	kwok, err := cp.spawn(Kwok, bin(Kwok), []string{
		"--kubeconfig=" + kc,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--cidr=10.244.0.1/24",
	}, []string{"HOME=" + kwokHome})
	if err != nil {
		return nil, err
	}
	for _, p := range []struct {
		proc *process
		port int
	}{{cm, cmPort}, {sched, schedPort}} {
		url := "https://127.0.0.1:" + strconv.Itoa(p.port) + "/healthz"
		if err := cp.waitFor(ctx, p.proc, 120*time.Second, func() bool {
			_, code, err := getPlain(url)
			return err == nil && code == 200
		}); err != nil {
			return nil, err
		}
		opts.Logf("kube: %s healthy (%s)", p.proc.name, time.Since(begin).Round(time.Millisecond))
	}
	if err := cp.Do(ctx, http.MethodPost, "/api/v1/nodes", fakeNode(), nil); err != nil {
		return nil, fmt.Errorf("kube: create fake node: %w", err)
	}
	if err := cp.waitFor(ctx, kwok, 120*time.Second, func() bool {
		var node struct {
			Status struct {
				Conditions []struct{ Type, Status string }
			}
		}
		if cp.Do(ctx, http.MethodGet, "/api/v1/nodes/"+FakeNodeName, nil, &node) != nil {
			return false
		}
		for _, c := range node.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				return true
			}
		}
		return false
	}); err != nil {
		return nil, err
	}
	opts.Logf("kube: node %s Ready via kwok (%s)", FakeNodeName, time.Since(begin).Round(time.Millisecond))
	return cp, nil
}

// Kubeconfig is the path of a kubeconfig file for the admin user (client
// certificate in group system:masters, CA embedded).
func (c *ControlPlane) Kubeconfig() string { return c.kubeconfig }

// Host is the apiserver URL, https://127.0.0.1:<port>.
func (c *ControlPlane) Host() string { return c.host }

// Token is a bearer token for an admin user in system:masters (from the
// apiserver's --token-auth-file), an alternative to the client certificate.
func (c *ControlPlane) Token() string { return c.token }

// Dir is the temporary directory with the PKI, etcd data and the component
// logs (<name>.log). Stop removes it.
func (c *ControlPlane) Dir() string { return c.dir }

// HTTPClient trusts the cluster CA and authenticates with the admin client
// certificate.
func (c *ControlPlane) HTTPClient() *http.Client { return c.client }

// PIDs maps each started component to its process id.
func (c *ControlPlane) PIDs() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]int{}
	for _, p := range c.procs {
		m[p.name] = p.cmd.Process.Pid
	}
	return m
}

// APIError is a non-2xx answer from the apiserver.
type APIError struct {
	Method, Path string
	StatusCode   int
	Body         string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: %d: %s", e.Method, e.Path, e.StatusCode, strings.TrimSpace(e.Body))
}

// Do sends a request to the apiserver as admin. body, if not nil, is sent as
// JSON (a []byte is sent as is); a 2xx answer is decoded into out if not nil;
// any other status is returned as *APIError.
func (c *ControlPlane) Do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.host+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &APIError{Method: method, Path: path, StatusCode: resp.StatusCode, Body: string(data)}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// Stop terminates every component by PID (SIGTERM, in reverse start order,
// waiting for each; SIGKILL after 20 s) and removes Dir. It is safe to call
// more than once. It reports components that had to be killed or that had
// died before Stop.
func (c *ControlPlane) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	procs := c.procs
	c.mu.Unlock()

	var errs []error
	for _, p := range slices.Backward(procs) {

		select {
		case <-p.done:
			errs = append(errs, fmt.Errorf("kube: %s had exited before Stop: %v%s", p.name, p.err, logTail(p.logPath)))
			continue
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			errs = append(errs, fmt.Errorf("kube: %s ignored SIGTERM for 20 s; killed", p.name))
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// spawn starts one component with its output in <dir>/<name>.log.
func (c *ControlPlane) spawn(name, path string, args, env []string) (*process, error) {
	logPath := filepath.Join(c.dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = c.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("kube: start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	c.logf("kube: started %s (pid %d)", name, cmd.Process.Pid)
	return p, nil
}

// waitFor polls ready until it is true, the process exits, the timeout
// passes or ctx ends.
func (c *ControlPlane) waitFor(ctx context.Context, p *process, timeout time.Duration, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if ready() {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("kube: %s exited during start-up: %v%s", p.name, p.err, logTail(p.logPath))
		case <-ctx.Done():
			return fmt.Errorf("kube: waiting for %s: %w%s", p.name, ctx.Err(), logTail(p.logPath))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube: %s not ready after %s%s", p.name, timeout, logTail(p.logPath))
		}
	}
}

// status GETs path on the apiserver as admin and returns the status code.
func (c *ControlPlane) status(ctx context.Context, path string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.host+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// plainClient is for health endpoints of etcd (http) and of the
// controller-manager and scheduler (self-signed https; anonymous /healthz).
var plainClient = &http.Client{
	Timeout: 5 * time.Second,
	Transport: &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe only
	},
}

func getPlain(url string) (string, int, error) {
	resp, err := plainClient.Get(url)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return string(data), resp.StatusCode, err
}

// helpMentions reports whether `bin --help` mentions flag.
func helpMentions(bin, flag string) bool {
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	return bytes.Contains(out, []byte(flag))
}

func logTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return ""
	}
	const max = 4000
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return "\n--- last lines of " + filepath.Base(path) + " ---\n" + string(data)
}

// freePorts reserves n distinct loopback ports by listening on :0 at once,
// then releases them for the components to bind.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// fakeNode is a Node kwok manages (annotation kwok.x-k8s.io/node=fake), with
// capacity for ordinary workloads and no taint, so Pods schedule onto it.
func fakeNode() map[string]any {
	resources := map[string]string{"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "100Gi"}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Node",
		"metadata": map[string]any{
			"name": FakeNodeName,
			"annotations": map[string]string{
				"kwok.x-k8s.io/node":           "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
			"labels": map[string]string{
				"kubernetes.io/hostname": FakeNodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		"status": map[string]any{
			"capacity":    resources,
			"allocatable": resources,
			"nodeInfo": map[string]string{
				"architecture":    "amd64",
				"operatingSystem": "linux",
				"kubeletVersion":  "fake",
			},
		},
	}
}

// pkiFiles are the paths and in-memory credentials written by writePKI.
type pkiFiles struct {
	caCert, caKey, serverCert, serverKey, saKey, saPub, tokenFile string
	caPEM, adminCertPEM, adminKeyPEM                              []byte
	caPool                                                        *x509.CertPool
	admin                                                         tls.Certificate
	token                                                         string
}

// writePKI makes a CA, an apiserver serving certificate (127.0.0.1,
// localhost and the in-cluster names), an admin client certificate in
// group system:masters, a service-account RSA key pair and a token file.
func writePKI(dir string) (*pkiFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f := &pkiFiles{
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		serverCert: filepath.Join(dir, "apiserver.crt"), serverKey: filepath.Join(dir, "apiserver.key"),
		saKey: filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub"),
		tokenFile: filepath.Join(dir, "tokens.csv"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "openinspect-test-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	f.caPEM = pemBlock("CERTIFICATE", caDER)
	f.caPool = x509.NewCertPool()
	f.caPool.AddCert(ca)

	issue := func(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl.SerialNumber = serial()
		tmpl.NotBefore = now.Add(-time.Hour)
		tmpl.NotAfter = now.Add(7 * 24 * time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", keyDER), nil
	}
	serverCert, serverKey, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 0, 0, 1)},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	})
	if err != nil {
		return nil, err
	}
	f.adminCertPEM, f.adminKeyPEM, err = issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	f.admin, err = tls.X509KeyPair(f.adminCertPEM, f.adminKeyPEM)
	if err != nil {
		return nil, err
	}
	caKeyDER, err := x509.MarshalPKCS8PrivateKey(caKey)
	if err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	f.token = base64.RawURLEncoding.EncodeToString(tok)
	for path, data := range map[string][]byte{
		f.caCert:     f.caPEM,
		f.caKey:      pemBlock("PRIVATE KEY", caKeyDER),
		f.serverCert: serverCert,
		f.serverKey:  serverKey,
		f.saKey:      pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)),
		f.saPub:      pemBlock("PUBLIC KEY", saPubDER),
		f.tokenFile:  []byte(f.token + `,admin,admin-uid,"system:masters"` + "\n"),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// kubeconfig renders an admin kubeconfig with everything embedded.
func (f *pkiFiles) kubeconfig(host string) []byte {
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: openinspect-test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: openinspect-test
  context:
    cluster: openinspect-test
    user: admin
    namespace: default
current-context: openinspect-test
`, host, b64(f.caPEM), b64(f.adminCertPEM), b64(f.adminKeyPEM))
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}
