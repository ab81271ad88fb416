package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// Counts keys (without the method) of the routes the crash cases hold.
const (
	d1CreateRoute   = "POST /client/v4/accounts/{account_id}/d1/database"
	d1QueryRoute    = "POST /client/v4/accounts/{account_id}/d1/database/{database_id}/query"
	appSecretsRoute = "PUT /__workers/{script_name}/secrets"
	queueCreate     = "POST /client/v4/accounts/{account_id}/queues"
)

// crashCase is one kill point of a full installation's first `pulumi up`.
type crashCase struct {
	name string
	// hold stops the up at the call to kill it at.
	hold emulator.Fault
	// inFlight are the resources (by name) whose operations are under way
	// when the kill comes: the one making the held call and those waiting
	// for it. The kill waits until the checkpoint lists exactly these, so
	// every other step has finished and been recorded.
	inFlight []string
	// kill is the process killed while the call is held: "pulumi" (the CLI;
	// its provider lives on, re-parented) or "provider" (every
	// pulumi-resource-openinspect the CLI started; the CLI then fails).
	kill string
	// atKill checks, once the kill is done and the held call has ended,
	// that the up really stopped where the case says.
	atKill func(t *testing.T, emu *emulatorProcess)
	// unrecorded are the kinds of the objects the crash left that the state
	// does not record (inventoryObjects' first word), sorted; recovered
	// are the provider's messages the recovery must print for them.
	unrecorded, recovered []string
}

// TestCrashRecovery kills `pulumi up` of a full installation (examples/yaml,
// the fixture checkout, Modal included) at chosen calls, deterministically:
// the emulator holds the call (FaultHold); once every step not waiting for
// it has finished and been recorded, the CLI or the provider is SIGKILLed.
// The held call is then abandoned (a provider whose engine died cancels its
// calls), so each case leaves the same objects on every run, among them
// objects created by creates the state never recorded. The documented recovery then
// runs, `pulumi cancel --yes` only if the killed CLI left its lock, then
// `pulumi up --yes --skip-preview`, and must converge: the up succeeds, the
// emulator holds exactly the objects the state records (no orphan, no
// duplicate), the migration ledger lists each migration once, a second up
// changes nothing, and destroy empties the emulator.
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	cases := []crashCase{
		{
			// The database exists; the create's next call, recording the
			// owner in it, is held: the state never learns of the database.
			name:     "pulumi killed during D1 create",
			hold:     emulator.Fault{Route: d1QueryRoute, Kind: emulator.FaultHold, Times: 1},
			inFlight: []string{"openinspect-d1", "openinspect-worker-slack-bot"},
			kill:     "pulumi",
			atKill: func(t *testing.T, emu *emulatorProcess) {
				assert.Len(t, emu.inventory(t).D1, 1, "the database was created")
				assert.Nil(t, ledgerVersions(t, emu), "no migration ran")
			},
			unrecorded: []string{"d1", "worker"},
			recovered:  []string{"empty and unclaimed: claiming it for installation", "records this installation"},
		},
		{
			name: "provider killed during migrations",
			// The third D1 query of the install: marking the new database
			// (1), creating and reading the ledger (2), the one request
			// holding the fixture's five files with their ledger rows (3).
			hold:     emulator.Fault{Route: d1QueryRoute, Kind: emulator.FaultHold, Times: 1, After: 2},
			inFlight: []string{"openinspect-d1-migrations", "openinspect-worker-slack-bot"},
			kill:     "provider",
			atKill: func(t *testing.T, emu *emulatorProcess) {
				assert.Empty(t, ledgerVersions(t, emu), "killed while the request with every migration was held: none applied")
			},
			unrecorded: []string{"worker"},
			recovered:  []string{"records this installation"},
		},
		{
			// The Slack bot goes first: its upload is refused (the control
			// plane it binds does not exist), it is uploaded without that
			// binding and waits for the control plane, whose upload, the
			// third PUT, is held. The bot exists; the state never hears of
			// it (its create is still waiting when the CLI dies).
			name:     "pulumi killed between the two worker uploads",
			hold:     emulator.Fault{Route: uploadRoute, Kind: emulator.FaultHold, Times: 1, After: 2},
			inFlight: []string{"openinspect-worker-control-plane", "openinspect-worker-slack-bot"},
			kill:     "pulumi",
			atKill: func(t *testing.T, emu *emulatorProcess) {
				var names []string
				for _, w := range emu.inventory(t).Workers {
					names = append(names, w.Name)
				}
				assert.Equal(t, []string{"open-inspect-slack-bot-engine"}, names, "only the first worker was uploaded")
			},
			unrecorded: []string{"worker"},
			recovered:  []string{"records this installation"},
		},
		{
			// Cloudflare has created the queue, its answer is held: the
			// state never learns of it, and queues carry no metadata. The
			// account's ownership registry, written before the create,
			// is what lets the recovery adopt it without adoptExisting.
			// Four queues are created at once: the hold picks one by name.
			// The Slack bot, uploaded first, waits for the control plane,
			// which waits for the queue.
			name: "pulumi killed during a queue create",
			hold: emulator.Fault{Route: queueCreate, Kind: emulator.FaultHoldResponse, Times: 1,
				BodyContains: `-image-build-finalization-engine"`},
			inFlight: []string{"openinspect-queue-image-build-finalization", "openinspect-worker-slack-bot"},
			kill:     "pulumi",
			atKill: func(t *testing.T, emu *emulatorProcess) {
				assert.NotEmpty(t, emu.inventory(t).Queues, "the held create was served: its queue exists")
			},
			unrecorded: []string{"queue", "worker"},
			recovered:  []string{"records this installation"},
		},
		{
			name:     "provider killed during AppSecrets",
			hold:     emulator.Fault{Route: appSecretsRoute, Kind: emulator.FaultHold, Times: 1},
			inFlight: []string{"openinspect-app-secrets"},
			kill:     "provider",
			atKill: func(t *testing.T, emu *emulatorProcess) {
				for _, w := range emu.inventory(t).Workers {
					assert.Zero(t, w.AppSecrets, "the held seeding never reached %s", w.Name)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCrashCase(t, tc) })
	}
}

func runCrashCase(t *testing.T, tc crashCase) {
	begin := time.Now()
	logPath := filepath.Join(t.TempDir(), "emulator.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close()
	emu := startEmulatorWith(t, logFile, "-v")
	t.Cleanup(func() {
		if t.Failed() {
			raw, _ := os.ReadFile(logPath)
			t.Logf("emulator request log:\n%s", raw)
		}
	})
	pt := newInstallationTest(t, emu)
	emu.injectFault(t, tc.hold)

	// 1. The up that crashes.
	var out bytes.Buffer
	up := pulumiCommand(t, pt, &out, "up", "--yes", "--skip-preview")
	require.NoError(t, up.Start())
	exited := make(chan error, 1)
	go func() { exited <- up.Wait() }()
	tree := &processTree{root: up.Process.Pid}
	t.Cleanup(func() { tree.killAll() })
	emu.waitHeld(t, exited, &out)
	heldAt := time.Since(begin)
	// Let every step that does not wait for the held call finish (and the
	// engine record it), so the held call is the only one in flight when
	// the kill comes: the kill point is then exactly the case's.
	emu.settle(t, 1, func() bool { return slices.Equal(checkpointPending(t, pt), tc.inFlight) },
		func() string { return fmt.Sprintf("in flight: %v, want %v", checkpointPending(t, pt), tc.inFlight) })
	tree.snapshot()

	switch tc.kill {
	case "pulumi":
		require.NoError(t, syscall.Kill(up.Process.Pid, syscall.SIGKILL))
		<-exited
		tree.requireGoneAfterKill(t, tc.name)
	case "provider":
		providers := tree.withExe(filepath.Join(binDir, "pulumi-resource-openinspect"))
		require.NotEmpty(t, providers, "no provider process under pulumi %d", up.Process.Pid)
		for _, p := range providers {
			p.kill()
		}
		t.Logf("%s: killed %d provider process(es)", tc.name, len(providers))
		select {
		case err := <-exited:
			require.Error(t, err, "the up whose provider was killed failed:\n%s", out.String())
		case <-time.After(3 * time.Minute):
			t.Fatalf("pulumi did not exit within 3 minutes of its provider's death:\n%s", out.String())
		}
	default:
		t.Fatalf("unknown kill target %q", tc.kill)
	}
	// The held call's client is dead (the provider, or the provider whose
	// engine died and so cancelled its calls): the call is abandoned, never
	// served. Waiting for that, rather than releasing at once, keeps the
	// outcome the same on every run. Then the fault goes and whatever
	// outlived the kill is let finish and ended, so the recovery meets one
	// well-defined leftover rather than racing it.
	emu.waitAbandoned(t)
	emu.admin(t, http.MethodDelete, "faults", nil)
	holds := emu.settle(t, 0, func() bool { return true }, func() string { return "" })
	assert.Equal(t, emulator.HoldStats{Abandoned: 1}, holds, "the held call was dropped with its client")
	tree.snapshot() // children the survivors started meanwhile
	survivors := tree.killAll()
	tc.atKill(t, emu)
	crashLeft := emu.inventory(t)
	unrecorded := difference(inventoryObjects(crashLeft), exportDeployment(t, pt).objects())
	var kinds []string
	for _, o := range unrecorded {
		kinds = append(kinds, strings.Fields(o)[0])
	}
	slices.Sort(kinds)
	assert.Equal(t, tc.unrecorded, kinds, "objects the crash left outside the state: %v", unrecorded)

	// 2. The documented recovery: cancel only if a lock was left, then up.
	cancelled := false
	if locks := lockFiles(t, pt); locks > 0 {
		runPulumi(t, pt, "cancel", "--yes")
		cancelled = true
		require.Zero(t, lockFiles(t, pt), "pulumi cancel removed the killed run's lock")
	}
	emu.resetCounts(t)
	recoverStart := time.Now()
	recovery := runPulumi(t, pt, "up", "--yes", "--skip-preview")
	recoverTook := time.Since(recoverStart)
	calls, counts := emu.cloudflareCalls(t)
	for _, msg := range tc.recovered {
		assert.Contains(t, recovery, msg)
	}

	// 3. Converged.
	deployment := exportDeployment(t, pt)
	// Pulumi keeps the killed run's pending creates in the state (warning
	// about them on every up) until `pulumi refresh --clear-pending-creates`;
	// each must name a resource the recovery has since created or adopted.
	urns := map[string]bool{}
	for _, r := range deployment.Resources {
		urns[r.URN] = true
	}
	for _, op := range deployment.PendingOperations {
		assert.True(t, urns[op.Resource.URN], "pending %s of %s, which the recovery did not create", op.Type, op.Resource.URN)
	}
	inv := emu.inventory(t)
	assert.ElementsMatch(t, deployment.objects(), inventoryObjects(inv),
		"the emulator holds exactly what the state records (orphans or duplicates otherwise)")
	assert.Equal(t, []string{"0001", "0002", "0004", "0005", "0006", "0007"}, ledgerVersions(t, emu), "each migration once")
	for _, w := range inv.Workers {
		if strings.Contains(w.Name, "control-plane") {
			assert.Equal(t, 1, w.AppSecrets, "ANTHROPIC_API_KEY seeded once")
		}
	}
	again := runPulumi(t, pt, "up", "--yes", "--skip-preview")
	assert.Regexp(t, `^\d+ unchanged$`, resourcesLine(again), "a second up after the recovery changes nothing")

	t.Logf("%s: held after %s; hold %+v; %d process(es) outlived the kill; left at the crash: %d D1, %d KV, %d R2, %d queues, %d workers, "+
		"not in state: %v; %d pending operation(s); cancel needed: %v; recovery up %s, %d Cloudflare calls (+%d secrets PUT); recovery said: %s",
		tc.name, heldAt.Round(time.Millisecond), holds, survivors, len(crashLeft.D1), len(crashLeft.KV), len(crashLeft.R2),
		len(crashLeft.Queues), len(crashLeft.Workers), unrecorded, len(deployment.PendingOperations), cancelled,
		recoverTook.Round(time.Millisecond), calls, counts[appSecretsRoute], resourcesLine(recovery))

	pt.Destroy(t)
	emu.requireEmpty(t)
	t.Logf("%s: whole case %s", tc.name, time.Since(begin).Round(time.Second))
}

// pulumiTimeout bounds each CLI run of the crash test; a healthy one takes
// seconds.
const pulumiTimeout = 5 * time.Minute

// pulumiCommand is the pulumi CLI for pt's stack, as the Automation API runs
// it (same directory, backend, passphrase and plugin settings), but as a
// process of our own that can be killed. It is killed after pulumiTimeout.
func pulumiCommand(t *testing.T, pt *pulumitest.PulumiTest, out *bytes.Buffer, args ...string) *exec.Cmd {
	t.Helper()
	stack := pt.CurrentStack()
	ctx, cancel := context.WithTimeout(t.Context(), pulumiTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, "pulumi", append(args, "--stack", stack.Name(), "--non-interactive", "--color", "never")...)
	cmd.Dir = pt.WorkingDir()
	cmd.Env = os.Environ()
	for k, v := range stack.Workspace().GetEnvVars() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = out, out
	return cmd
}

// runPulumi runs the CLI to completion and requires it to succeed.
func runPulumi(t *testing.T, pt *pulumitest.PulumiTest, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	err := pulumiCommand(t, pt, &out, args...).Run()
	require.NoError(t, err, "pulumi %s:\n%s", strings.Join(args, " "), out.String())
	return out.String()
}

// resourcesLine is the CLI's "Resources:" summary, folded onto one line.
func resourcesLine(out string) string {
	_, after, ok := strings.Cut(out, "Resources:")
	if !ok {
		return "(no summary)"
	}
	before, _, _ := strings.Cut(after, "Duration:")
	return strings.Join(strings.Fields(before), " ")
}

// lockFiles counts the DIY backend's lock files for any stack.
func lockFiles(t *testing.T, pt *pulumitest.PulumiTest) int {
	t.Helper()
	backend := pt.CurrentStack().Workspace().GetEnvVars()["PULUMI_BACKEND_URL"]
	require.True(t, strings.HasPrefix(backend, "file://"), "backend %q", backend)
	n := 0
	err := filepath.WalkDir(filepath.Join(strings.TrimPrefix(backend, "file://"), ".pulumi", "locks"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			n++
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		require.NoError(t, err)
	}
	return n
}

// checkpointPending names the resources whose operations the stack's
// checkpoint lists as under way, sorted. The DIY backend rewrites the
// checkpoint (by rename) as each step begins and ends, so it can be read
// while an update runs; nil while it cannot be read.
func checkpointPending(t *testing.T, pt *pulumitest.PulumiTest) []string {
	t.Helper()
	backend := strings.TrimPrefix(pt.CurrentStack().Workspace().GetEnvVars()["PULUMI_BACKEND_URL"], "file://")
	paths, err := filepath.Glob(filepath.Join(backend, ".pulumi", "stacks", "*", pt.CurrentStack().Name()+".json"))
	require.NoError(t, err)
	if len(paths) != 1 {
		return nil
	}
	raw, err := os.ReadFile(paths[0])
	if err != nil {
		return nil
	}
	var cp struct {
		Checkpoint struct {
			Latest deploymentState `json:"latest"`
		} `json:"checkpoint"`
	}
	if json.Unmarshal(raw, &cp) != nil {
		return nil
	}
	names := []string{}
	for _, op := range cp.Checkpoint.Latest.PendingOperations {
		names = append(names, op.Resource.URN[strings.LastIndex(op.Resource.URN, "::")+2:])
	}
	slices.Sort(names)
	return names
}

// deploymentState is the part of an exported deployment the checks read.
type deploymentState struct {
	Resources []struct {
		URN    string `json:"urn"`
		Type   string `json:"type"`
		ID     string `json:"id"`
		Custom bool   `json:"custom"`
	} `json:"resources"`
	PendingOperations []struct {
		Type     string `json:"type"`
		Resource struct {
			URN string `json:"urn"`
		} `json:"resource"`
	} `json:"pending_operations"`
}

func exportDeployment(t *testing.T, pt *pulumitest.PulumiTest) deploymentState {
	t.Helper()
	exported, err := pt.CurrentStack().Export(t.Context())
	require.NoError(t, err)
	var d deploymentState
	require.NoError(t, json.Unmarshal(exported.Deployment, &d))
	return d
}

// objects are the remote objects the state records, as "<kind> <id>".
func (d deploymentState) objects() []string {
	kinds := map[string]string{
		"openinspect:index:D1Database":  "d1",
		"openinspect:index:KvNamespace": "kv",
		"openinspect:index:R2Bucket":    "r2",
		"openinspect:index:Queue":       "queue",
		"openinspect:index:Worker":      "worker",
		"openinspect:index:ModalApp":    "modal-app",
	}
	out := []string{}
	for _, r := range d.Resources {
		if kind, ok := kinds[r.Type]; ok && r.Custom {
			out = append(out, kind+" "+r.ID)
		}
	}
	slices.Sort(out)
	return out
}

// difference lists what a holds and b does not.
func difference(a, b []string) []string {
	out := []string{}
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// inventoryObjects are the objects that exist in the emulator, named as
// deploymentState.objects names them.
func inventoryObjects(inv emulator.Inventory) []string {
	out := []string{}
	for _, db := range inv.D1 {
		out = append(out, "d1 "+db.ID)
	}
	for _, ns := range inv.KV {
		out = append(out, "kv "+ns.ID)
	}
	for _, b := range inv.R2 {
		out = append(out, "r2 "+b.Name)
	}
	for _, q := range inv.Queues {
		out = append(out, "queue "+q.ID)
	}
	for _, w := range inv.Workers {
		out = append(out, "worker "+w.Name)
	}
	for _, a := range inv.Modal.Apps {
		if a.State == "deployed" {
			out = append(out, "modal-app "+a.Name)
		}
	}
	slices.Sort(out)
	return out
}

// ledgerVersions reads the migration ledger of the installation's database
// through the emulator's D1 API; nil when there is no database or ledger.
func ledgerVersions(t *testing.T, emu *emulatorProcess) []string {
	t.Helper()
	inv := emu.inventory(t)
	if len(inv.D1) == 0 {
		return nil
	}
	require.Len(t, inv.D1, 1, "one D1 database")
	id := inv.D1[0].ID
	if len(emu.d1Rows(t, id, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_schema_migrations'")) == 0 {
		return nil
	}
	var out []string
	for _, row := range emu.d1Rows(t, id, "SELECT version FROM _schema_migrations ORDER BY version") {
		out = append(out, fmt.Sprint(row["version"]))
	}
	return out
}

// injectFault adds a fault through the admin API.
func (e *emulatorProcess) injectFault(t *testing.T, f emulator.Fault) {
	t.Helper()
	body, err := json.Marshal(f)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, e.postAdmin(t, "faults", body))
}

func (e *emulatorProcess) holds(t *testing.T) emulator.HoldStats {
	var body struct {
		Holds emulator.HoldStats `json:"holds"`
	}
	e.admin(t, http.MethodGet, "faults", &body)
	return body.Holds
}

// waitHeld waits until the emulator holds a request, failing if the up
// ends first.
func (e *emulatorProcess) waitHeld(t *testing.T, exited <-chan error, out *bytes.Buffer) {
	t.Helper()
	deadline := time.After(5 * time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for e.holds(t).Held == 0 {
		select {
		case err := <-exited:
			// A hold on a call no longer made: say which (other than
			// Cloudflare's) were.
			_, counts := e.callsWhere(t, func(route string) bool { return !strings.Contains(route, "/client/v4/") })
			t.Fatalf("the up ended (%v) before the held call; the calls it made: %v\n%s", err, counts, out.String())
		case <-deadline:
			t.Fatalf("no call held within 5 minutes:\n%s", out.String())
		case <-tick.C:
		}
	}
}

// waitAbandoned waits until the held call's client has gone away.
func (e *emulatorProcess) waitAbandoned(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool { return e.holds(t).Abandoned == 1 }, 2*time.Minute, 20*time.Millisecond,
		"the held call's client did not go away: %+v", e.holds(t))
}

// settle waits until, for two seconds on end, the emulator holds held
// requests, has seen no call but GETs, and done holds: whatever was not
// waiting for a held call has finished. GETs are left out: a worker whose
// service binding target is not there yet polls for it with GETs, as long
// as the target's create waits.
func (e *emulatorProcess) settle(t *testing.T, held int, done func() bool, state func() string) emulator.HoldStats {
	t.Helper()
	total := func() int {
		_, counts := e.cloudflareCalls(t)
		n := 0
		for route, c := range counts {
			if !strings.HasPrefix(route, "GET ") {
				n += c
			}
		}
		return n
	}
	deadline := time.Now().Add(3 * time.Minute)
	last, quietSince := total(), time.Now()
	for time.Since(quietSince) < 2*time.Second {
		require.True(t, time.Now().Before(deadline), "the installation did not settle within 3 minutes: %s; %+v", state(), e.holds(t))
		time.Sleep(100 * time.Millisecond)
		if n := total(); n != last || e.holds(t).Held != held || !done() {
			last, quietSince = n, time.Now()
		}
	}
	return e.holds(t)
}

// process is one process, told apart from a later one reusing its pid by
// its start time.
type process struct {
	pid   int
	start string
	exe   string
}

func (p process) alive() bool {
	cur, ok := readProcess(p.pid)
	return ok && cur.start == p.start
}

// kill SIGKILLs p unless it is gone (or its pid now belongs to another).
func (p process) kill() {
	if p.alive() {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// readProcess reads /proc/<pid>: its parent, start time and executable.
func readProcess(pid int) (process, bool) {
	p, _, ok := readStat(pid)
	return p, ok
}

func readStat(pid int) (process, int, bool) {
	fields, ok := statFields(pid)
	if !ok {
		return process{}, 0, false
	}
	ppid, _ := strconv.Atoi(fields[1])
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return process{pid: pid, start: fields[19], exe: exe}, ppid, true
}

// statFields are the fields of /proc/<pid>/stat after the command's name:
// state, ppid, pgrp, ... starttime (the 20th).
func statFields(pid int) ([]string, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, false
	}
	// "pid (comm) state ppid ... starttime(22nd) ..."; comm may hold spaces.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return nil, false
	}
	fields := strings.Fields(string(raw[i+1:]))
	return fields, len(fields) >= 20
}

// liveInGroup lists the processes of process group pgid that still run
// (zombies waiting for a reaper are done), by pid and executable.
func liveInGroup(pgid int) []string {
	entries, _ := os.ReadDir("/proc")
	var live []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if fields, ok := statFields(pid); ok && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			live = append(live, fmt.Sprintf("%d %s", pid, exe))
		}
	}
	return live
}

// processTree tracks every process the test's pulumi started, directly or
// not, so that the test can kill the provider among them and, at the end,
// whatever outlived the CLI (re-parented processes leave the tree, so it
// is snapshotted while their parents still live).
type processTree struct {
	root  int
	known []process
}

// snapshot adds the current descendants of the root and of every process
// seen before.
func (pt *processTree) snapshot() {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	children := map[int][]process{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ppid, ok := readStat(pid); ok {
			children[ppid] = append(children[ppid], p)
		}
	}
	seen := map[int]bool{}
	queue := []int{pt.root}
	for _, p := range pt.known {
		seen[p.pid] = true
		if p.alive() {
			queue = append(queue, p.pid)
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !seen[c.pid] {
				seen[c.pid] = true
				pt.known = append(pt.known, c)
				queue = append(queue, c.pid)
			}
		}
	}
}

// withExe lists the known processes running exe.
func (pt *processTree) withExe(exe string) []process {
	var out []process
	for _, p := range pt.known {
		if p.exe == exe && p.alive() {
			out = append(out, p)
		}
	}
	return out
}

// orphanGrace is how long the processes of a killed CLI's run may outlive
// it: the plugin checks its parent and the engine every second and gives
// in-flight calls three seconds (provider/internal/enginewatch).
const orphanGrace = 15 * time.Second

// requireGoneAfterKill waits for every process the killed CLI started
// (the provider plugins and whatever they started) to exit by itself, and
// fails naming those still alive after orphanGrace. Language hosts are
// Pulumi's own and stop at Pulumi's five-minute engine health check; they
// are left to killAll (docs/reliability.md).
func (pt *processTree) requireGoneAfterKill(t *testing.T, what string) {
	t.Helper()
	start := time.Now()
	var alive []string
	for {
		alive = alive[:0]
		for _, p := range pt.known {
			if p.alive() && !strings.HasPrefix(filepath.Base(p.exe), "pulumi-language-") {
				alive = append(alive, fmt.Sprintf("%d %s", p.pid, p.exe))
			}
		}
		if len(alive) == 0 || time.Since(start) > orphanGrace {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Empty(t, alive, "%s: processes of the killed run still alive %s after the CLI died", what, orphanGrace)
	t.Logf("%s: every process the killed CLI started (language hosts aside) exited %s after it", what, time.Since(start).Round(10*time.Millisecond))
}

// killAll SIGKILLs every known process still alive and reports how many
// there were.
func (pt *processTree) killAll() int {
	n := 0
	for _, p := range pt.known {
		if p.alive() {
			n++
			p.kill()
		}
	}
	return n
}
