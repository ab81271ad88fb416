package cloudflare

import (
	"context"
	"sync"
	"time"
)

// scriptBoard is what this provider process knows about the scripts its
// Worker creates are doing: which exist now and which failed to be
// created. A worker waiting for its service-binding targets wakes as soon
// as one of them is uploaded in this process (no poll interval in the
// way), and stops at once, naming it, when that target's create failed.
// Targets created elsewhere are still found by polling the API.
//
// It also knows when a step of this run failed elsewhere in the process
// (StepFailed): the engine then starts no further step (without
// --continue-on-error), so a target this program plans whose create has
// not started will not be created by this run, and waiting for it up to the
// deadline would only hold the failed up open.
type scriptBoard struct {
	mu         sync.Mutex
	failed     map[string]error // by account/script
	creating   map[string]int   // creates in progress in this process, by account/script
	stepFailed bool             // a create, update or delete of this run failed
	changed    chan struct{}    // closed and replaced at every event
}

func newScriptBoard() *scriptBoard {
	return &scriptBoard{failed: map[string]error{}, creating: map[string]int{}, changed: make(chan struct{})}
}

// createStarted records that this process is creating script; the returned
// func records that the create ended (uploaded or failed).
func (b *scriptBoard) createStarted(account, script string) (ended func()) {
	key := boardKey(account, script)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.creating[key]++
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.creating[key]--; b.creating[key] <= 0 {
			delete(b.creating, key)
		}
		b.notifyLocked()
	}
}

// anotherStepFailed records that a step of this run failed.
func (b *scriptBoard) anotherStepFailed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stepFailed = true
	b.notifyLocked()
}

// abandoned reports whether this run will not create script: a step failed,
// this program plans the script (so nothing else is expected to make it)
// and no create of it is under way here.
func (b *scriptBoard) abandoned(account, script string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stepFailed && b.creating[boardKey(account, script)] == 0 && plannedScripts.has(script)
}

func boardKey(account, script string) string { return account + "/" + script }

// uploaded records that a script exists (its create may still fail later,
// after the upload, but the script is there to bind).
func (b *scriptBoard) uploaded(account, script string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.failed, boardKey(account, script))
	b.notifyLocked()
}

// createFailed records that a script's create failed before it existed.
func (b *scriptBoard) createFailed(account, script string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failed[boardKey(account, script)] = err
	b.notifyLocked()
}

func (b *scriptBoard) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// watch returns the failure recorded for script (nil if none) and a channel
// closed at the next event.
func (b *scriptBoard) watch(account, script string) (<-chan struct{}, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed, b.failed[boardKey(account, script)]
}

// board is the Worker's scriptBoard, made on first use.
func (w *Worker) board() *scriptBoard {
	w.boardOnce.Do(func() { w.scripts = newScriptBoard() })
	return w.scripts
}

// StepFailed tells the Worker that a create, update or delete of this run
// failed (the provider reports every resource's): a worker waiting for a
// target that this program plans, and that no create here is making, stops
// waiting at once instead of at its deadline.
func (w *Worker) StepFailed() { w.board().anotherStepFailed() }

// plannedScripts holds the script names this process expects to exist by
// the end of the run: every Worker's Check records its own name, and the
// OpenInspect component records its Workers' names before it registers any
// (so the order the engine checks them in does not matter). A create's
// preview warns of a service target the account lacks only when it is not
// planned here. It is process-wide because the component and the Worker
// resource are separate objects of one plugin process; the engine starts a
// process per provider instance, so the names are all of one account.
var plannedScripts = newScriptPlan()

// scriptPlan is a set of script names that can be waited on.
type scriptPlan struct {
	mu    sync.Mutex
	names map[string]bool
	added chan struct{} // closed and replaced whenever a name is added
}

func newScriptPlan() *scriptPlan {
	return &scriptPlan{names: map[string]bool{}, added: make(chan struct{})}
}

// PlanScripts records that this run creates or keeps the named scripts
// (the component calls it with its Workers' names before registering them).
func PlanScripts(names ...string) { plannedScripts.add(names...) }

func (s *scriptPlan) add(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := false
	for _, n := range names {
		if n != "" && !s.names[n] {
			s.names[n], fresh = true, true
		}
	}
	if fresh {
		close(s.added)
		s.added = make(chan struct{})
	}
}

// has reports whether name is planned now.
func (s *scriptPlan) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[name]
}

// await reports whether name is planned, waiting up to d for it to become
// so: in a preview the engine checks the program's resources moments apart,
// and a worker may be previewed before the target it binds is checked.
func (s *scriptPlan) await(ctx context.Context, name string, d time.Duration) bool {
	timeout := time.NewTimer(d)
	defer timeout.Stop()
	for {
		s.mu.Lock()
		planned, added := s.names[name], s.added
		s.mu.Unlock()
		if planned {
			return true
		}
		select {
		case <-added:
		case <-timeout.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}
