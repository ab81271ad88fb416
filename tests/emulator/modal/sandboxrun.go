package modal

// Sandboxes that run (with Options.Sandboxes): a SandboxCreate with an
// entrypoint starts that command as a real process tree on this machine,
// under bubblewrap, in its own mount, PID, IPC, UTS and network
// namespaces:
//
//   - the root is an empty tmpfs with the host's /usr (and /bin, /lib,
//     /lib64, /sbin as links into it) and /etc read-only, its own /proc,
//     /dev and /tmp, and per-sandbox writable directories at /workspace,
//     /app and /root (the paths upstream's runtime hard-codes), kept under
//     <data-dir>/modal-sandboxes/<id>/, and at /usr/local/bin, which holds
//     launchers for the image's python and installed commands (an image's
//     ENV PATH names it) and takes what the runtime writes there; the local
//     cloud's CA at /run/local-cloud/ca.pem;
//   - the image's RUN steps materialised (image.go): a virtualenv with its
//     pip installs first on PATH, a global npm prefix's bin on PATH, and
//     trees it installs under /app bound there, all read-only;
//   - the network namespace has only loopback until slirp4netns attaches
//     a tap device whose gateway, 10.0.2.2, is the host's loopback: the
//     outbound gateway's proxy is reached there, and HTTPS_PROXY,
//     HTTP_PROXY, SSL_CERT_FILE, GIT_SSL_CAINFO and NODE_EXTRA_CA_CERTS say
//     so (the command's own env, from the request and its secrets, comes
//     after and wins). NO_PROXY is localhost, 127.0.0.1, ::1 and 10.0.2.2:
//     a process reaches its own sandbox's services at localhost (upstream's
//     runtime dials OpenCode at http://localhost:4096). Python's urllib and
//     websockets (and curl) read "localhost" as covering every *.localhost
//     name too, so the emulator's own names (each Worker's
//     <script>.workers.localhost, SandboxRuntime.LocalNames) are dialled
//     directly: the sandbox's /etc/hosts maps them to 10.0.2.2, where the
//     emulator's port is the host's;
//   - stdout and stderr are kept in files and served by SandboxGetLogs;
//   - the command's exit ends the sandbox with its exit code; Terminate,
//     the timeout and Close kill it (bwrap's --die-with-parent also ends it
//     with the emulator's process, whatever kills that).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// SandboxRuntime configures running sandboxes. The zero value runs none
// (a sandbox is recorded and lives until terminated, as before).
type SandboxRuntime struct {
	// Bwrap and Slirp4netns are the binaries; both needed to run.
	Bwrap, Slirp4netns string
	// ProxyURL is the outbound gateway's proxy on the host's loopback
	// (http://127.0.0.1:PORT), given to the sandbox as 10.0.2.2:PORT. The
	// emulator's root sets it and CAFile.
	ProxyURL func() string
	// CAFile is the local cloud's CA certificate, bound into the sandbox.
	CAFile func() string
	// LocalNames are the emulator's own host names a sandbox dials
	// directly (each Worker's <script>.workers.localhost), which its
	// /etc/hosts maps to the host's loopback; the emulator's root sets it.
	LocalNames func() []string
	// ExtraReadOnly are host directories bound read-only at the same path.
	ExtraReadOnly []string
	// Python, when set, is the interpreter a sandbox's `python` and
	// `python3` are (an image's Python is not built here): its install
	// prefix is bound read-only where it is, and /run/local-cloud/bin,
	// first on PATH, links to it; when the image pip-installs, the
	// virtualenv made from it (image.go) is first on PATH instead.
	Python string
	// ImageCache is where images' RUN steps are materialised (image.go),
	// keyed by the recipe; "" is <data-dir>/modal-images. They hold
	// packages from PyPI and npm, so share it between emulators.
	ImageCache string
	// ReadOnlyAt binds host directories read-only at other paths in every
	// sandbox (the path in the sandbox -> the host directory): what an
	// image would COPY from a local directory when the client cannot
	// upload one (modal-go has no local mounts).
	ReadOnlyAt map[string]string
}

// pythonInSandbox resolves the interpreter rt.Python names (a pyenv shim
// included) to its executable and install prefix.
func pythonInSandbox(python string) (exe, prefix string, err error) {
	out, err := exec.Command(python, "-c", "import sys; print(sys.executable); print(sys.base_prefix)").Output()
	if err != nil {
		return "", "", fmt.Errorf("the sandboxes' Python %s: %w", python, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return "", "", fmt.Errorf("the sandboxes' Python %s: cannot read its executable and prefix", python)
	}
	return lines[0], lines[1], nil
}

func (r SandboxRuntime) enabled() bool { return r.Bwrap != "" && r.Slirp4netns != "" }

// python is the sandboxes' interpreter resolved (pythonInSandbox), "" when
// none is configured.
func (r SandboxRuntime) python() (exe, prefix string, err error) {
	if r.Python == "" {
		return "", "", nil
	}
	return pythonInSandbox(r.Python)
}

// sandboxProc is a running sandbox's processes.
type sandboxProc struct {
	cmd      *exec.Cmd
	slirp    *exec.Cmd
	done     chan struct{} // closed when the command has exited and been recorded
	stdout   string        // file paths
	stderr   string
	childPID int // the command's PID on the host (bwrap's child)
}

// sandboxProcs are the running ones, by sandbox ID.
type sandboxProcs struct {
	mu    sync.Mutex
	procs map[string]*sandboxProc
}

// sandboxHostIP is the host's loopback as slirp4netns shows it inside.
const sandboxHostIP = "10.0.2.2"

// sandboxNoProxy is what a sandbox reaches without the proxy: its own
// loopback, and the host's as slirp4netns shows it. "localhost" covers
// *.localhost for urllib, websockets and curl, so the sandbox's /etc/hosts
// names the emulator's own *.localhost names (sandboxHosts).
const sandboxNoProxy = "localhost,127.0.0.1,::1," + sandboxHostIP

// sandboxHosts is a sandbox's /etc/hosts: localhost, and the emulator's own
// names (a Worker's <script>.workers.localhost, and workers.localhost,
// which answers with what to use instead) at the host's loopback as
// slirp4netns shows it, so a process dials them there directly, as it
// would a public host's address.
func sandboxHosts(names []string) []byte {
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\tmodal\n")
	seen := map[string]bool{}
	for _, n := range append([]string{"workers.localhost"}, names...) {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" && !seen[n] {
			seen[n] = true
			b.WriteString(sandboxHostIP + "\t" + n + "\n")
		}
	}
	return []byte(b.String())
}

// startSandbox starts sb's command. The caller does not hold m.mu; env is
// the command's environment from the request's secrets, layout what its
// image's recipe lays out (layoutOf).
func (m *Service) startSandbox(sb *modalSandbox, args []string, workdir string, env map[string]string, layout imageLayout) error {
	rt := m.sandboxRuntime
	base := filepath.Join(m.dataDir, "modal-sandboxes", sb.ID)
	dirs := map[string]string{"/workspace": filepath.Join(base, "workspace"), "/app": filepath.Join(base, "app"),
		"/root": filepath.Join(base, "root"), "/tmp": filepath.Join(base, "tmp")}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("sandbox %s: %w", sb.ID, err)
		}
	}
	if err := m.layOut(layout, dirs); err != nil {
		return fmt.Errorf("sandbox %s: %w", sb.ID, err)
	}
	if len(layout.skipped) > 0 {
		m.logfSafe("modal: sandbox %s: %d image steps not laid out (the sandbox runs on the host's /usr): %s", sb.ID, len(layout.skipped), strings.Join(layout.skipped, "; "))
	}
	pyExe, pyPrefix, err := rt.python()
	if err != nil {
		return fmt.Errorf("sandbox %s: %w", sb.ID, err)
	}
	tree, err := m.materialise(context.Background(), pyExe, layout.runs)
	if err != nil {
		return fmt.Errorf("sandbox %s: its image: %w", sb.ID, err)
	}
	for _, n := range tree.Notes {
		m.logfSafe("modal: sandbox %s: image: %s", sb.ID, n)
	}
	if workdir == "" {
		workdir = cmpOr(layout.workdir, "/")
	}
	bargs := []string{"--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--new-session",
		"--hostname", "modal", "--tmpfs", "/", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
		"--proc", "/proc", "--dev", "/dev"}
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if target, err := os.Readlink("/" + l); err == nil {
			bargs = append(bargs, "--symlink", target, "/"+l)
		} else if _, err := os.Stat("/" + l); err == nil {
			bargs = append(bargs, "--ro-bind", "/"+l, "/"+l)
		}
	}
	for _, d := range rt.ExtraReadOnly {
		bargs = append(bargs, "--ro-bind", d, d)
	}
	for _, mount := range []string{"/workspace", "/app", "/root", "/tmp"} {
		bargs = append(bargs, "--bind", dirs[mount], mount)
	}
	for _, at := range core.SortedKeys(rt.ReadOnlyAt) {
		bargs = append(bargs, "--ro-bind", rt.ReadOnlyAt[at], at)
	}
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	if pyExe != "" {
		if !strings.HasPrefix(pyPrefix, "/usr/") {
			bargs = append(bargs, "--ro-bind", pyPrefix, pyPrefix)
		}
		bargs = append(bargs, "--symlink", pyExe, "/run/local-cloud/bin/python", "--symlink", pyExe, "/run/local-cloud/bin/python3")
		path = "/run/local-cloud/bin:" + path
	}
	// The materialised tree after the sandbox's own directories (it may
	// live under /root on the host), its virtualenv first on PATH: a
	// virtualenv is one only when run from its own bin/, not through a link.
	if tree.Dir != "" {
		bargs = append(bargs, "--ro-bind", tree.Dir, tree.Dir)
		for _, at := range core.SortedKeys(tree.AppDirs) {
			bargs = append(bargs, "--ro-bind", tree.AppDirs[at], at)
		}
		if tree.NPMBin != "" {
			path = tree.NPMBin + ":" + path
		}
		if tree.VenvBin != "" {
			path = tree.VenvBin + ":" + path
		}
	}
	// The sandbox's /usr/local/bin is a writable directory of its own, as
	// in an image's container: an image's ENV PATH names /usr/local/bin
	// (where its python and its pip and npm installs are), not the
	// materialised tree's directories, and upstream's runtime writes its
	// git credential helper's shim there.
	localBin := filepath.Join(base, "usr-local-bin")
	if err := writeLaunchers(localBin, pyExe, tree); err != nil {
		return fmt.Errorf("sandbox %s: /usr/local/bin: %w", sb.ID, err)
	}
	bargs = append(bargs, "--bind", localBin, "/usr/local/bin")
	var names []string
	if rt.LocalNames != nil {
		names = rt.LocalNames()
	}
	hosts := filepath.Join(base, "hosts")
	if err := os.WriteFile(hosts, sandboxHosts(names), 0o644); err != nil {
		return fmt.Errorf("sandbox %s: /etc/hosts: %w", sb.ID, err)
	}
	bargs = append(bargs, "--ro-bind", hosts, "/etc/hosts")
	sandboxEnv := []string{"PATH=" + path, "HOME=/root", "MODAL_SANDBOX_ID=" + sb.ID}
	if rt.CAFile != nil && rt.CAFile() != "" {
		bargs = append(bargs, "--ro-bind", rt.CAFile(), "/run/local-cloud/ca.pem")
		sandboxEnv = append(sandboxEnv, "SSL_CERT_FILE=/run/local-cloud/ca.pem", "GIT_SSL_CAINFO=/run/local-cloud/ca.pem",
			"NODE_EXTRA_CA_CERTS=/run/local-cloud/ca.pem")
	}
	if rt.ProxyURL != nil {
		if u, err := url.Parse(rt.ProxyURL()); err == nil && u.Port() != "" {
			// The sandbox names itself to the proxy, so the gateway's log
			// says which sandbox asked.
			// (user:password, since some clients send only both.)
			proxy := "http://" + sb.ID + ":sandbox@" + sandboxHostIP + ":" + u.Port()
			sandboxEnv = append(sandboxEnv, "HTTPS_PROXY="+proxy, "HTTP_PROXY="+proxy, "https_proxy="+proxy, "http_proxy="+proxy,
				"NO_PROXY="+sandboxNoProxy, "no_proxy="+sandboxNoProxy)
		}
	}
	// The image's ENV, then the request's env and secrets, which win.
	for _, k := range core.SortedKeys(layout.env) {
		sandboxEnv = append(sandboxEnv, k+"="+layout.env[k])
	}
	for _, k := range core.SortedKeys(env) {
		sandboxEnv = append(sandboxEnv, k+"="+env[k])
	}
	// fd 3: bwrap's info (its child's PID); fd 4: bwrap waits on it until
	// the network is attached.
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return err
	}
	blockR, blockW, err := os.Pipe()
	if err != nil {
		infoR.Close()
		infoW.Close()
		return err
	}
	bargs = append(bargs, "--info-fd", "3", "--block-fd", "4", "--chdir", workdir, "--")
	bargs = append(bargs, args...)
	stdout, stderr := filepath.Join(base, "stdout"), filepath.Join(base, "stderr")
	outF, err := os.Create(stdout)
	if err != nil {
		return err
	}
	errF, err := os.Create(stderr)
	if err != nil {
		outF.Close()
		return err
	}
	cmd := exec.Command(rt.Bwrap, bargs...)
	cmd.Env = sandboxEnv
	cmd.Stdout, cmd.Stderr = outF, errF
	cmd.ExtraFiles = []*os.File{infoW, blockR}
	// Its own process group, so a kill reaches what bwrap started even if
	// the PID namespace's init lingers.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	startErr := cmd.Start()
	infoW.Close()
	blockR.Close()
	outF.Close()
	errF.Close()
	if startErr != nil {
		infoR.Close()
		blockW.Close()
		return fmt.Errorf("sandbox %s: bwrap: %w", sb.ID, startErr)
	}
	p := &sandboxProc{cmd: cmd, done: make(chan struct{}), stdout: stdout, stderr: stderr}
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	if err := json.NewDecoder(bufio.NewReader(infoR)).Decode(&info); err != nil || info.ChildPID == 0 {
		infoR.Close()
		blockW.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("sandbox %s: bwrap gave no child PID: %v", sb.ID, err)
	}
	infoR.Close()
	p.childPID = info.ChildPID
	// bwrap's child configures the namespace's loopback itself; slirp4netns
	// configuring its tap device at the same moment makes that fail
	// ("loopback: Failed RTM_NEWADDR"), so wait until 127.0.0.1 is in the
	// namespace's routing tables.
	loopbackUp := func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(info.ChildPID) + "/net/fib_trie")
		return err == nil && strings.Contains(string(b), "127.0.0.1")
	}
	for deadline := time.Now().Add(5 * time.Second); !loopbackUp() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	// slirp4netns gives the namespace its way out; --ready-fd says when.
	readyR, readyW, err := os.Pipe()
	if err != nil {
		blockW.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	slirp := exec.Command(rt.Slirp4netns, "--configure", "--mtu=65520", "--ready-fd=3", strconv.Itoa(info.ChildPID), "tap0")
	slirp.ExtraFiles = []*os.File{readyW}
	slirp.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := slirp.Start(); err != nil {
		readyR.Close()
		readyW.Close()
		blockW.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("sandbox %s: slirp4netns: %w", sb.ID, err)
	}
	readyW.Close()
	ready := make([]byte, 1)
	_, readyErr := readyR.Read(ready)
	readyR.Close()
	if readyErr != nil {
		blockW.Close()
		_ = cmd.Process.Kill()
		_ = slirp.Process.Kill()
		_ = cmd.Wait()
		_ = slirp.Wait()
		return fmt.Errorf("sandbox %s: slirp4netns did not come up: %w", sb.ID, readyErr)
	}
	p.slirp = slirp
	// Let the command run.
	_, _ = blockW.Write([]byte{1})
	blockW.Close()

	m.procs.mu.Lock()
	m.procs.procs[sb.ID] = p
	m.procs.mu.Unlock()
	go m.reap(sb.ID, p)
	return nil
}

// reap waits for the command, records its end (unless a terminate or a
// timeout recorded one first) and stops slirp4netns.
func (m *Service) reap(id string, p *sandboxProc) {
	err := p.cmd.Wait()
	if p.slirp != nil {
		_ = p.slirp.Process.Kill()
		_ = p.slirp.Wait()
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	m.mu.Lock()
	if sb, ok := m.st.Sandboxes[id]; ok && sb.TerminatedAt.IsZero() {
		sb.TerminatedAt = time.Now().UTC()
		sb.Result, sb.ExitCode = resultSuccess, code
		if code != 0 {
			sb.Result = resultFailure
		}
	}
	m.mu.Unlock()
	m.procs.mu.Lock()
	delete(m.procs.procs, id)
	m.procs.mu.Unlock()
	_ = m.saved()
	if m.logf != nil {
		m.logf("modal: sandbox %s exited %d", id, code)
	}
	close(p.done)
}

// stopSandbox kills a running sandbox's processes and waits for them.
func (m *Service) stopSandbox(id string) {
	m.procs.mu.Lock()
	p := m.procs.procs[id]
	m.procs.mu.Unlock()
	if p == nil {
		return
	}
	// The child is the PID namespace's init: killing it ends every process
	// in the namespace. Then bwrap and its process group.
	if p.childPID > 0 {
		_ = syscall.Kill(p.childPID, syscall.SIGKILL)
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Process.Kill()
	<-p.done
	// The namespace's teardown finishes after bwrap is reaped; wait for it,
	// so a sandbox stopped is a sandbox gone.
	deadline := time.Now().Add(5 * time.Second)
	for p.childPID > 0 && processRuns(p.childPID) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// processRuns says pid exists and is not a zombie.
func processRuns(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// stopAllSandboxes is Close's: nothing a sandbox started outlives the
// emulator.
func (m *Service) stopAllSandboxes() {
	m.procs.mu.Lock()
	ids := make([]string, 0, len(m.procs.procs))
	for id := range m.procs.procs {
		ids = append(ids, id)
	}
	m.procs.mu.Unlock()
	for _, id := range ids {
		m.stopSandbox(id)
	}
}

// SandboxPIDs are a running sandbox's host PIDs (bwrap's, and its
// child's, the sandbox's init), for tests that check it ends.
func (m *Service) SandboxPIDs(id string) []int {
	m.procs.mu.Lock()
	defer m.procs.mu.Unlock()
	p := m.procs.procs[id]
	if p == nil {
		return nil
	}
	return []int{p.cmd.Process.Pid, p.childPID}
}

// SandboxDir is where a sandbox's /workspace, /app, /root and /tmp and its
// output are kept on the host.
func (m *Service) SandboxDir(id string) string {
	return filepath.Join(m.dataDir, "modal-sandboxes", id)
}

// Sandbox results (modalSandbox.Result).
const (
	resultSuccess    = "success"
	resultFailure    = "failure"
	resultTerminated = "terminated"
	resultTimeout    = "timeout"
)

// genericResult is a finished sandbox's result as Modal answers it.
func (sb *modalSandbox) genericResult() *pb.GenericResult {
	switch sb.Result {
	case resultSuccess:
		return pb.GenericResult_builder{Status: pb.GenericResult_GENERIC_STATUS_SUCCESS, Exitcode: int32(sb.ExitCode)}.Build()
	case resultFailure:
		return pb.GenericResult_builder{Status: pb.GenericResult_GENERIC_STATUS_FAILURE, Exitcode: int32(sb.ExitCode)}.Build()
	case resultTimeout:
		return pb.GenericResult_builder{Status: pb.GenericResult_GENERIC_STATUS_TIMEOUT}.Build()
	}
	return terminatedResult()
}

// SandboxGetLogs streams a sandbox's stdout or stderr from LastEntryId (a
// byte offset) until the sandbox has finished and everything was sent (a
// batch with Eof), or the request's timeout passes.
func (api *modalAPI) SandboxGetLogs(req *pb.SandboxGetLogsRequest, stream pb.ModalClient_SandboxGetLogsServer) error {
	m := api.m
	ctx := stream.Context()
	m.mu.Lock()
	sb, err := m.sandbox(ctx, req.GetSandboxId())
	m.mu.Unlock()
	if err != nil {
		return err
	}
	name := "stdout"
	if req.GetFileDescriptor() == pb.FileDescriptor_FILE_DESCRIPTOR_STDERR {
		name = "stderr"
	}
	path := filepath.Join(m.SandboxDir(sb.ID), name)
	offset, _ := strconv.ParseInt(req.GetLastEntryId(), 10, 64)
	timeout := time.Duration(req.GetTimeout() * float32(time.Second))
	if timeout <= 0 {
		timeout = 55 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		m.mu.Lock()
		finished := !sb.running(time.Now())
		m.mu.Unlock()
		data := readFrom(path, offset)
		if len(data) > 0 {
			offset += int64(len(data))
			if err := stream.Send(pb.TaskLogsBatch_builder{EntryId: strconv.FormatInt(offset, 10),
				Items: []*pb.TaskLogs{pb.TaskLogs_builder{Data: string(data), FileDescriptor: req.GetFileDescriptor()}.Build()}}.Build()); err != nil {
				return err
			}
			continue
		}
		if finished {
			return stream.Send(pb.TaskLogsBatch_builder{EntryId: strconv.FormatInt(offset, 10), Eof: true}.Build())
		}
		if time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// readFrom is what path holds from offset on (at most 64 KiB).
func readFrom(path string, offset int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil
	}
	buf := make([]byte, 64<<10)
	n, _ := f.Read(buf)
	return buf[:n]
}

// sandboxEnvFrom is the environment a sandbox's secrets give it, later
// secrets winning. The caller holds m.mu.
func (m *Service) sandboxEnvFrom(_ context.Context, secretIDs []string) map[string]string {
	env := map[string]string{}
	for _, id := range secretIDs {
		if s, ok := m.st.Secrets[id]; ok {
			for k, v := range s.Values {
				env[k] = v
			}
		}
	}
	return env
}

// imageLayout is what a sandbox takes from its image's recipe without a
// build: the files its COPY steps put under the sandbox's own writable
// directories (/app, /workspace, /root), its ENV and its WORKDIR, and its
// RUN steps, which image.go materialises.
type imageLayout struct {
	copies  map[string]string // path in the sandbox -> uploaded file (sha256)
	env     map[string]string
	workdir string
	runs    []string // the RUN steps' commands, base images first (image.go materialises them)
	skipped []string // steps not laid out (COPY elsewhere, others), for the log
}

// layoutOf walks imageID's recipe, base images first. The caller holds
// m.mu.
func (m *Service) layoutOf(imageID string) imageLayout {
	l := imageLayout{copies: map[string]string{}, env: map[string]string{}}
	seen := map[string]bool{}
	var walk func(id string)
	walk = func(id string) {
		img := m.st.Images[id]
		if img == nil || seen[id] {
			return
		}
		seen[id] = true
		for _, b := range img.BaseImageIDs {
			walk(b)
		}
		var files map[string]string
		if mt := m.st.Mounts[img.ContextMountID]; mt != nil {
			files = mt.Files
		}
		for _, c := range img.Commands {
			word, rest, _ := strings.Cut(strings.TrimSpace(c), " ")
			switch strings.ToUpper(word) {
			case "FROM", "CMD", "ENTRYPOINT":
			case "RUN":
				l.runs = append(l.runs, strings.TrimSpace(rest))
			case "ENV":
				if k, v, ok := strings.Cut(strings.TrimSpace(rest), "="); ok {
					l.env[k] = unquoteShell(v)
				}
			case "WORKDIR":
				l.workdir = unquoteShell(strings.TrimSpace(rest))
			case "COPY":
				// Each file goes where the step puts it; those outside the
				// sandbox's own directories are not laid out.
				args := strings.Fields(rest)
				if len(args) != 2 || strings.HasPrefix(args[0], "--") {
					l.skipped = append(l.skipped, c)
					continue
				}
				src := strings.Trim(args[0], "/")
				if src == "." {
					src = ""
				}
				laid := 0
				for name, sum := range files {
					rel := strings.TrimPrefix(name, "/")
					switch {
					case src == "":
					case rel == src:
						rel = filepath.Base(rel)
					case strings.HasPrefix(rel, src+"/"):
						rel = strings.TrimPrefix(rel, src+"/")
					default:
						continue
					}
					if dst := filepath.Join(args[1], rel); sandboxWritable(dst) {
						l.copies[dst] = sum
						laid++
					}
				}
				if laid == 0 {
					l.skipped = append(l.skipped, c)
				}
			default:
				l.skipped = append(l.skipped, c)
			}
		}
	}
	walk(imageID)
	return l
}

// mountInto adds to l the files of the mounts a sandbox is created with:
// an image's add_local_dir / add_local_file without copy=True is no build
// step but a mount the client attaches to each sandbox of the image
// (upstream's runtime at /app/sandbox_runtime). Each file goes to its
// remote path when that is under the sandbox's own directories, written
// there as a COPY's file is (a container sees a mount read-only; here the
// files are the sandbox's own copy); a mount with files elsewhere is
// logged as not laid out. Modal's client mount (the modal package, which
// a container gets from it) has no files here. The caller holds m.mu and
// has checked the IDs.
func (m *Service) mountInto(l *imageLayout, mountIDs []string) {
	for _, id := range mountIDs {
		mt := m.st.Mounts[id]
		if mt == nil {
			continue
		}
		outside := 0
		for name, sum := range mt.Files {
			if p := path.Clean("/" + name); sandboxWritable(p) {
				l.copies[p] = sum
			} else {
				outside++
			}
		}
		if outside > 0 {
			l.skipped = append(l.skipped, fmt.Sprintf("mount %s: %d files outside /app, /workspace and /root", id, outside))
		}
	}
}

// sandboxWritable says p is under one of a sandbox's own directories.
func sandboxWritable(p string) bool {
	for _, d := range []string{"/app", "/workspace", "/root"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// unquoteShell undoes Python's shlex.quote (single quotes, '"'"' for a
// quote inside), which modal uses for ENV and WORKDIR values.
func unquoteShell(s string) string {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], `'"'"'`, `'`)
	}
	return s
}

// layOut writes l's files into a sandbox's directories (dirs: the path in
// the sandbox -> the host directory bound there).
func (m *Service) layOut(l imageLayout, dirs map[string]string) error {
	for dst, sum := range l.copies {
		var host string
		for mount, dir := range dirs {
			if dst == mount || strings.HasPrefix(dst, mount+"/") {
				host = filepath.Join(dir, strings.TrimPrefix(dst, mount))
			}
		}
		if host == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(m.filesDir(), sum))
		if err != nil {
			return fmt.Errorf("image file for %s: %w", dst, err)
		}
		if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(host, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeLaunchers makes dir, the sandbox's /usr/local/bin, and puts in it a
// launcher for each command the image's materialised tree provides (its
// virtualenv's, then its npm prefix's, which win as npm -g's bin comes
// after pip's there) and for python and python3 when the image installs
// nothing with pip: what a container of the image finds in /usr/local/bin
// and /usr/bin. A launcher is a shell script exec-ing the command at its
// path, since a virtualenv is one only when its interpreter is run from
// its own bin/ (a link to it elsewhere would be the bare interpreter).
func writeLaunchers(dir, pyExe string, tree imageTree) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	targets := map[string]string{}
	if pyExe != "" {
		targets["python"], targets["python3"] = pyExe, pyExe
	}
	for _, bin := range []string{tree.VenvBin, tree.NPMBin} {
		if bin == "" {
			continue
		}
		entries, err := os.ReadDir(bin)
		if err != nil {
			return err
		}
		for _, e := range entries {
			info, err := os.Stat(filepath.Join(bin, e.Name()))
			if err != nil || info.IsDir() || info.Mode().Perm()&0o111 == 0 {
				continue // a dangling link, a directory, or not a command (activate)
			}
			targets[e.Name()] = filepath.Join(bin, e.Name())
		}
	}
	for name, target := range targets {
		script := "#!/bin/sh\nexec '" + strings.ReplaceAll(target, "'", `'\''`) + "' \"$@\"\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			return err
		}
	}
	return nil
}
