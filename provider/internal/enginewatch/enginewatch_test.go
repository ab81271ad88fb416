package enginewatch

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
)

// syncBuffer is a log the watch writes from its own goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// exits records the forced exit.
type exits struct{ code atomic.Int32 }

func (e *exits) exit(code int) { e.code.Store(int32(code) + 100) }
func (e *exits) called() bool  { return e.code.Load() != 0 }

func waitDone(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the watch's context was not cancelled")
	}
}

func TestParentExitCancelsThenExits(t *testing.T) {
	var parent atomic.Int32
	parent.Store(4242)
	var log syncBuffer
	var ex exits
	ctx, _ := Start(t.Context(), Options{Every: 5 * time.Millisecond, Grace: 50 * time.Millisecond,
		Log: &log, Exit: ex.exit, Parent: func() int { return int(parent.Load()) }})

	time.Sleep(30 * time.Millisecond)
	require.NoError(t, ctx.Err(), "nothing happens while the parent lives")
	parent.Store(1) // reparented to init: the CLI is gone
	waitDone(t, ctx)
	assert.Contains(t, log.String(), "its parent process 4242 exited")
	assert.False(t, ex.called(), "calls get their grace before the exit")
	assert.Eventually(t, ex.called, 10*time.Second, 5*time.Millisecond, "the process exits once the grace is over")
	assert.Equal(t, int32(101), ex.code.Load(), "exit status 1")
}

func TestEngineGoneCancels(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// A gRPC server without the health service answers Unimplemented, which
	// counts as alive, as the engine's does.
	engine := grpc.NewServer()
	go func() { _ = engine.Serve(lis) }()
	var log syncBuffer
	var ex exits
	ctx, w := Start(t.Context(), Options{Every: 10 * time.Millisecond, Grace: time.Hour,
		Log: &log, Exit: ex.exit, Parent: func() int { return 7 }})
	require.NoError(t, w.Engine(ctx, lis.Addr().String()))

	time.Sleep(100 * time.Millisecond)
	require.NoError(t, ctx.Err(), "a live engine keeps the plugin")
	engine.Stop()
	waitDone(t, ctx)
	assert.Contains(t, log.String(), "the engine at "+lis.Addr().String()+" stopped answering")
}

func TestNormalShutdownDoesNotExit(t *testing.T) {
	var ex exits
	parent, cancel := context.WithCancel(t.Context())
	ctx, _ := Start(parent, Options{Every: 5 * time.Millisecond, Grace: 10 * time.Millisecond,
		Exit: ex.exit, Parent: func() int { return 7 }})
	cancel() // the plugin returning normally ends the watch
	waitDone(t, ctx)
	time.Sleep(50 * time.Millisecond)
	assert.False(t, ex.called(), "only a vanished engine forces the exit")
}
