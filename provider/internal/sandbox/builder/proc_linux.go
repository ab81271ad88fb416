//go:build linux

package builder

import (
	"os/exec"
	"runtime"
	"syscall"
)

// dieWithParent has the kernel SIGKILL the child when its parent goes: a
// provider killed outright (SIGKILL, OOM) cannot cancel anything, and a
// `modal deploy` left running in its own process group would finish the
// deploy after the engine recorded nothing, leaving an app the recovery run
// finds in its way. Only the direct child is signalled; what it started
// itself (rare for the CLI) is reparented, and its calls end with the
// child's connections.
func dieWithParent(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}

// runChild starts cmd and waits for it on one locked OS thread. Linux's
// "parent" for the death signal is the thread that forked the child, not
// the process (golang/go#27505): the Go runtime ends a thread when a
// goroutine locked to it exits, and that would kill the child mid-deploy.
// Holding the forking thread locked until Wait returns keeps it alive for
// exactly the child's life; unlocking afterwards hands it back to the
// runtime instead of ending it.
func runChild(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			done <- err
			return
		}
		done <- cmd.Wait()
	}()
	return <-done
}
