package emulator_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modal-labs/libmodal/modal-go"
	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/github"
	emumodal "github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// sandboxRuntime is the runtime with Debian's bubblewrap and slirp4netns
// (toolchain.SandboxTools).
func sandboxRuntime(t *testing.T) emumodal.SandboxRuntime {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	bwrap, slirp := toolchain.SandboxTools(t, root)
	return emumodal.SandboxRuntime{Bwrap: bwrap, Slirp4netns: slirp}
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// A zombie ("Z") has ended; only its parent has not reaped it yet.
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

// TestModalSandboxesRun creates sandboxes through modal-go as upstream's
// Modal function does (a command, the workdir /workspace, env and a named
// secret) and sees each run as a real process tree under bubblewrap: its
// own PID namespace and file system (/workspace, /app, /root its own, the
// host's home not there), the env and the secret's values, HTTPS through
// the outbound gateway's proxy with the local CA (api.github.com answered
// by the stand-in), the emulator's *.workers.localhost names and the
// sandbox's own localhost dialled directly, stdout and stderr through SandboxGetLogs and the exit
// code through Wait. Terminate kills one; Close kills the rest, and no
// process of theirs is left (checked in /proc).
func TestModalSandboxesRun(t *testing.T) {
	rt := sandboxRuntime(t)
	s := start(t, emulator.Options{DataDir: t.TempDir(), Modal: emumodal.Options{Sandboxes: rt}})
	ctx := context.Background()
	c := mustModal(t, s, "")
	app, err := c.Apps.FromName(ctx, "open-inspect", &modal.AppFromNameParams{CreateIfMissing: true})
	require.NoError(t, err)
	img, err := c.Images.FromRegistry("python:3.12-slim", nil).Build(ctx, app)
	require.NoError(t, err)
	secret, err := c.Secrets.FromMap(ctx, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-in-sandbox"}, nil)
	require.NoError(t, err)

	// python3 is the host's (/usr/bin), as the sandbox sees /usr.
	script := strings.Join([]string{
		`echo "pid=$$ pwd=$(pwd) key=$ANTHROPIC_API_KEY session=$SESSION_NAME"`,
		`ls / | tr '\n' ' '; echo`,
		`test -e ` + os.Getenv("HOME") + `/.cache && echo "host home visible" || echo "host home hidden"`,
		`echo written > /workspace/out.txt`,
		`python3 -c 'import urllib.request,urllib.error
try:
    urllib.request.urlopen("https://api.github.com/repos/` + github.DefaultOrg + `/hello-world", timeout=20)
except urllib.error.HTTPError as e:
    print("github answered", e.code)'`,
		// The emulator's own names are dialled directly (NO_PROXY covers
		// *.localhost for urllib), at the host's loopback as the sandbox's
		// /etc/hosts says.
		`python3 -c 'import urllib.request,urllib.error
try:
    urllib.request.urlopen("http://workers.localhost:` + port(t, s) + `/", timeout=20)
except urllib.error.HTTPError as e:
    print("worker host answered", e.code)'`,
		// A service of the sandbox's own at localhost, not through the proxy
		// (upstream's runtime dials OpenCode at http://localhost:4096).
		`python3 -m http.server 4096 --bind 127.0.0.1 >/dev/null 2>&1 & server=$!`,
		`python3 -c 'import time,urllib.request
for _ in range(100):
    try:
        print("own localhost answered", urllib.request.urlopen("http://localhost:4096/", timeout=5).status); break
    except OSError:
        time.sleep(0.1)'`,
		`kill $server`,
		`echo to-stderr >&2`,
		`exit 3`,
	}, "\n")
	sb, err := c.Sandboxes.Create(ctx, app, img, &modal.SandboxCreateParams{
		Command: []string{"/bin/sh", "-c", script}, Workdir: "/workspace", Timeout: 2 * time.Minute,
		Env: map[string]string{"SESSION_NAME": "s-1"}, Secrets: []*modal.Secret{secret}})
	require.NoError(t, err)
	code, err := sb.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, code, "the command's exit code")
	stdout, err := io.ReadAll(sb.Stdout)
	require.NoError(t, err)
	stderr, err := io.ReadAll(sb.Stderr)
	require.NoError(t, err)
	out := string(stdout)
	assert.Contains(t, out, "pid=2 pwd=/workspace key=sk-ant-in-sandbox session=s-1", "its own PID namespace, the workdir, env and secret")
	assert.Contains(t, out, "app bin dev etc")
	assert.Contains(t, out, "workspace")
	assert.Contains(t, out, "host home hidden")
	assert.Contains(t, out, "github answered 401", "HTTPS through the gateway's proxy, answered by the stand-in")
	assert.Contains(t, out, "worker host answered 404", "a *.workers.localhost URL dialled directly, answered by the emulator: %s", stderr)
	assert.Contains(t, out, "own localhost answered 200", "the sandbox's own service at localhost: %s", stderr)
	assert.Equal(t, "to-stderr\n", string(stderr))
	written, err := os.ReadFile(filepath.Join(s.Modal().SandboxDir(sb.SandboxID), "workspace", "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "written\n", string(written))
	// The inventory shows the launch, and the env's names only.
	for _, e := range s.Modal().Inventory().Sandboxes {
		if e.ID == sb.SandboxID {
			assert.Equal(t, "/workspace", e.Workdir)
			assert.Equal(t, []string{"/bin/sh", "-c", script}, e.Command)
			assert.Subset(t, e.EnvKeys, []string{"ANTHROPIC_API_KEY", "SESSION_NAME"})
			assert.NotContains(t, mustJSONText(t, e), "sk-ant-in-sandbox", "no secret value in the inventory")
		}
	}
	var viaProxy bool
	for _, e := range s.Outbound().Entries() {
		if e.Script == "proxy/"+sb.SandboxID && strings.Contains(e.URL, "api.github.com") && e.To == "github" {
			viaProxy = true
		}
	}
	assert.True(t, viaProxy, "the gateway's log names the sandbox: %+v", s.Outbound().Entries())
	for _, e := range s.Outbound().Entries() {
		assert.NotContains(t, e.URL, "localhost", "localhost and the emulator's names are not sent through the proxy")
	}

	// Two at once, each with its own loopback: both bind port 4096.
	listen := `python3 -c 'import socket,time
s=socket.socket(); s.bind(("0.0.0.0",4096)); s.listen(); print("listening", flush=True); time.sleep(300)'`
	first, err := c.Sandboxes.Create(ctx, app, img, &modal.SandboxCreateParams{Command: []string{"/bin/sh", "-c", listen}, Timeout: 5 * time.Minute})
	require.NoError(t, err)
	second, err := c.Sandboxes.Create(ctx, app, img, &modal.SandboxCreateParams{Command: []string{"/bin/sh", "-c", listen}, Timeout: 5 * time.Minute})
	require.NoError(t, err)
	for _, sb := range []*modal.Sandbox{first, second} {
		require.Eventually(t, func() bool {
			b, _ := os.ReadFile(filepath.Join(s.Modal().SandboxDir(sb.SandboxID), "stdout"))
			return strings.Contains(string(b), "listening")
		}, 20*time.Second, 100*time.Millisecond, "sandbox %s binds 4096: %s", sb.SandboxID, sandboxOutput(s, sb.SandboxID))
	}
	firstPIDs, secondPIDs := s.Modal().SandboxPIDs(first.SandboxID), s.Modal().SandboxPIDs(second.SandboxID)
	require.Len(t, firstPIDs, 2)
	require.Len(t, secondPIDs, 2)
	for _, pid := range append(append([]int{}, firstPIDs...), secondPIDs...) {
		assert.True(t, alive(pid), "pid %d runs", pid)
	}

	// Terminate ends one (Wait says terminated: 137); Close the other.
	_, err = first.Terminate(ctx, nil)
	require.NoError(t, err)
	code, err = first.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, 137, code)
	for _, pid := range firstPIDs {
		assert.False(t, alive(pid), "pid %d ended with Terminate", pid)
	}
	assert.True(t, alive(secondPIDs[1]))
	require.NoError(t, s.Close())
	for _, pid := range secondPIDs {
		assert.False(t, alive(pid), "pid %d ended with the emulator", pid)
	}
}

// sandboxOutput is what a sandbox wrote, for failure messages.
func sandboxOutput(s *emulator.Server, id string) string {
	out, _ := os.ReadFile(filepath.Join(s.Modal().SandboxDir(id), "stdout"))
	errb, _ := os.ReadFile(filepath.Join(s.Modal().SandboxDir(id), "stderr"))
	return "stdout: " + string(out) + "\nstderr: " + string(errb)
}

func mustJSONText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestSandboxImagePathFindsItsInstalls runs a sandbox of the fixture's image
// recipe with an ENV PATH as upstream's image sets it (naming
// /usr/local/bin, not the emulator's materialised tree): python is the
// image's virtualenv with its pip installs and opencode its npm install,
// found in /usr/local/bin, which is the sandbox's own and writable, as
// upstream's runtime needs it for its git credential helper's shim; a
// second sandbox does not see what the first wrote there, nor does the
// host.
func TestSandboxImagePathFindsItsInstalls(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	fixtureRecipeInImagesPy(t, root)
	openCodeBinary(t)
	rt := sandboxRuntime(t)
	rt.Python = toolchain.Python(t)
	rt.ImageCache = filepath.Join(toolchain.CacheDir(), "modal-images")
	s := start(t, emulator.Options{DataDir: t.TempDir(), Modal: emumodal.Options{Sandboxes: rt, Logf: t.Logf}})
	ctx := context.Background()
	c := mustModal(t, s, "")
	app, err := c.Apps.FromName(ctx, "open-inspect", &modal.AppFromNameParams{CreateIfMissing: true})
	require.NoError(t, err)
	img := fixtureImage(t, c, app, "ENV PATH=/root/.bun/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
	run := func(script string) string {
		t.Helper()
		sb, err := c.Sandboxes.Create(ctx, app, img, &modal.SandboxCreateParams{Command: []string{"/bin/sh", "-c", script}, Timeout: 2 * time.Minute})
		require.NoError(t, err)
		code, err := sb.Wait(ctx)
		require.NoError(t, err)
		require.Equal(t, 0, code, "%s", sandboxOutput(s, sb.SandboxID))
		out, err := io.ReadAll(sb.Stdout)
		require.NoError(t, err)
		return string(out)
	}
	out := run(strings.Join([]string{
		`echo "path=$PATH"`,
		`echo "python=$(command -v python) opencode=$(command -v opencode)"`,
		`python -c 'import sys, httpx, websockets; print("venv", sys.prefix != sys.base_prefix)'`,
		`opencode --version`,
		`printf '#!/bin/sh\necho shim\n' > /usr/local/bin/oi-git-credentials && chmod 0755 /usr/local/bin/oi-git-credentials && oi-git-credentials`,
	}, "\n"))
	assert.Contains(t, out, "path=/root/.bun/bin:/usr/local/bin:", "the image's PATH, as it set it")
	assert.Contains(t, out, "python=/usr/local/bin/python opencode=/usr/local/bin/opencode")
	assert.Contains(t, out, "venv True", "python is the image's virtualenv, with its pip installs")
	assert.Contains(t, out, "1.18.18", "opencode from the image's npm install")
	assert.Contains(t, out, "shim", "/usr/local/bin is writable")
	_, err = os.Stat("/usr/local/bin/oi-git-credentials")
	assert.True(t, os.IsNotExist(err), "the host's /usr/local/bin is untouched")
	assert.Contains(t, run(`test -e /usr/local/bin/oi-git-credentials && echo seen || echo not-seen`), "not-seen",
		"each sandbox has a /usr/local/bin of its own")
}

// TestSandboxGetsItsMounts creates a sandbox as Modal's Python client does
// for an image with add_local_dir (no copy): the image's mount among the
// request's mount IDs. Its files are in the sandbox at their remote paths
// under /app (upstream's runtime at /app/sandbox_runtime comes so); a file
// elsewhere is not laid out, and an unknown mount is refused.
func TestSandboxGetsItsMounts(t *testing.T) {
	s := start(t, emulator.Options{DataDir: t.TempDir(), Modal: emumodal.Options{Sandboxes: sandboxRuntime(t), Logf: t.Logf}})
	ctx := context.Background()
	c := mustModal(t, s, "")
	raw := rawModal(t, s, emumodal.DefaultTokenID, emumodal.DefaultTokenSecret)
	app, err := c.Apps.FromName(ctx, "open-inspect", &modal.AppFromNameParams{CreateIfMissing: true})
	require.NoError(t, err)
	img, err := c.Images.FromRegistry("python:3.12-slim", nil).Build(ctx, app)
	require.NoError(t, err)
	var files []*pb.MountFile
	for name, body := range map[string]string{"/app/pkg/__init__.py": "", "/app/pkg/hello.py": "print('hello from the mount')\n", "/opt/elsewhere.txt": "x"} {
		sum := sha256.Sum256([]byte(body))
		hexSum := hex.EncodeToString(sum[:])
		_, err := raw.MountPutFile(ctx, pb.MountPutFileRequest_builder{Sha256Hex: hexSum, Data: []byte(body)}.Build())
		require.NoError(t, err)
		files = append(files, pb.MountFile_builder{Filename: name, Sha256Hex: hexSum}.Build())
	}
	mount, err := raw.MountGetOrCreate(ctx, pb.MountGetOrCreateRequest_builder{
		ObjectCreationType: pb.ObjectCreationType_OBJECT_CREATION_TYPE_EPHEMERAL, Files: files}.Build())
	require.NoError(t, err)
	create := func(mountIDs ...string) (*pb.SandboxCreateResponse, error) {
		return raw.SandboxCreate(ctx, pb.SandboxCreateRequest_builder{AppId: app.AppID, Definition: pb.Sandbox_builder{
			ImageId: img.ImageID, EntrypointArgs: []string{"/bin/sh", "-c", "PYTHONPATH=/app python3 -m pkg.hello; test -e /opt/elsewhere.txt && echo elsewhere || echo not-elsewhere"},
			Workdir: proto.String("/workspace"), TimeoutSecs: 60, MountIds: mountIDs}.Build()}.Build())
	}
	created, err := create(mount.GetMountId())
	require.NoError(t, err)
	sb, err := c.Sandboxes.FromID(ctx, created.GetSandboxId())
	require.NoError(t, err)
	code, err := sb.Wait(ctx)
	require.NoError(t, err)
	out := sandboxOutput(s, sb.SandboxID)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "hello from the mount", "the mount's files at their remote paths")
	assert.Contains(t, out, "not-elsewhere", "a file outside the sandbox's own directories is not laid out")

	_, err = create("mo-nosuchmount0000000000")
	require.Error(t, err)
	assert.Equal(t, codes.NotFound, status.Code(err), "%v", err)
}

// TestImageBuildInstallsItsSteps builds an image as upstream's deploy
// builds its sandbox image (`deploy.py --build-sandbox-image`), on an
// emulator whose sandboxes run: the build ends only once its RUN steps are
// laid out, so the first sandbox starts on the finished tree and installs
// nothing (on a cold cache, installing upstream's image at the first
// session took longer than the control plane's 60 s createSandbox); a step
// that fails fails the build, with its output, as a RUN step fails Modal's.
func TestImageBuildInstallsItsSteps(t *testing.T) {
	rt := sandboxRuntime(t)
	rt.ImageCache = t.TempDir()
	var mu sync.Mutex
	var lines []string
	logf := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		mu.Lock()
		lines = append(lines, line)
		mu.Unlock()
		t.Log(line)
	}
	count := func(prefix string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				n++
			}
		}
		return n
	}
	s := start(t, emulator.Options{DataDir: t.TempDir(), Modal: emumodal.Options{Sandboxes: rt, Logf: logf}})
	ctx := context.Background()
	c := mustModal(t, s, "")
	app, err := c.Apps.FromName(ctx, "open-inspect", &modal.AppFromNameParams{CreateIfMissing: true})
	require.NoError(t, err)

	img, err := c.Images.FromRegistry("python:3.12-slim", nil).DockerfileCommands([]string{
		"RUN mkdir -p /app/built && cd /app/built && echo 'laid out by the build' > note.txt"}, nil).Build(ctx, app)
	require.NoError(t, err)
	assert.Equal(t, 1, count("modal: materialised "), "the build laid its steps out before it ended")
	sb, err := c.Sandboxes.Create(ctx, app, img, &modal.SandboxCreateParams{Command: []string{"cat", "/app/built/note.txt"}, Timeout: time.Minute})
	require.NoError(t, err)
	code, err := sb.Wait(ctx)
	require.NoError(t, err)
	out := sandboxOutput(s, sb.SandboxID)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "laid out by the build")
	assert.Equal(t, 1, count("modal: materialising "), "the sandbox started on the build's tree")

	_, err = c.Images.FromRegistry("python:3.12-slim", nil).DockerfileCommands([]string{
		"RUN mkdir -p /app/deps && cd /app/deps && npm install ./no-such-package"}, nil).Build(ctx, app)
	require.Error(t, err, "a failed install fails the build")
	assert.Contains(t, err.Error(), "npm install ./no-such-package")
}
