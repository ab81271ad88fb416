package cloudflare

import (
	"sync"
)

// scriptBoard is what this provider process knows about the scripts its
// Worker creates are doing: which exist now and which failed to be
// created. A worker waiting for its service-binding targets wakes as soon
// as one of them is uploaded in this process (no poll interval in the
// way), and stops at once, naming it, when that target's create failed.
// Targets created elsewhere are still found by polling the API.
type scriptBoard struct {
	mu      sync.Mutex
	failed  map[string]error // by account/script
	changed chan struct{}    // closed and replaced at every event
}

func newScriptBoard() *scriptBoard {
	return &scriptBoard{failed: map[string]error{}, changed: make(chan struct{})}
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
