//go:build linux

package builder

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// helperEnv makes the test binary act as a provider that starts a deploy
// step and is then killed (see TestMain).
const helperEnv = "BUILDER_TEST_KILLED_PARENT"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		killedParent(dir)
		return
	}
	os.Exit(m.Run())
}

// killedParent runs a long child through the deploy steps' code path,
// churns OS threads while it runs (the runtime ending threads must not
// reach the child), says so in dir, and waits to be killed.
func killedParent(dir string) {
	go func() {
		// A stand-in for `modal deploy`: records its pid, then runs long.
		r := &Runner{}
		err := r.Run(context.Background(), Step{Name: "long child", Dir: dir, Args: []string{"/bin/sh", "-c",
			"echo $$ > child.pid.tmp && mv child.pid.tmp child.pid && exec sleep 300"}})
		fmt.Fprintln(os.Stderr, "child ended before the parent was killed:", err)
		os.Exit(3)
	}()
	pidFile := filepath.Join(dir, "child.pid")
	for {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Goroutines that exit locked to their thread make the runtime end
	// those threads: an unlocked starter's thread could be among them.
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			time.Sleep(time.Millisecond)
		}()
	}
	wg.Wait()
	if err := os.WriteFile(filepath.Join(dir, "churned"), nil, 0o644); err != nil {
		os.Exit(4)
	}
	select {}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// TestChildDiesWithKilledProvider SIGKILLs a process that started a step
// the way Run starts `modal deploy` (own process group, so no group signal
// reaches it) and checks the step dies with it, after the parent's runtime
// ended OS threads while the step ran.
func TestChildDiesWithKilledProvider(t *testing.T) {
	dir := t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), helperEnv+"="+dir)
	helper.Stderr = os.Stderr
	require.NoError(t, helper.Start())
	exited := make(chan error, 1)
	go func() { exited <- helper.Wait() }()
	t.Cleanup(func() { _ = helper.Process.Kill() })

	waitFile := func(name string) []byte {
		for {
			select {
			case err := <-exited:
				t.Fatalf("the helper exited early: %v", err)
			case <-time.After(20 * time.Millisecond):
			}
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
				return b
			}
		}
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(waitFile("child.pid"))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	waitFile("churned")
	require.True(t, alive(pid), "the child outlived the parent's thread churn")

	require.NoError(t, helper.Process.Signal(syscall.SIGKILL))
	err = <-exited
	var exitErr *exec.ExitError
	require.True(t, errors.As(err, &exitErr), "helper: %v", err)
	start := time.Now()
	for alive(pid) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("child %d still runs 30 s after its parent was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("child %d gone %s after its parent was killed", pid, time.Since(start).Round(time.Millisecond))
}
