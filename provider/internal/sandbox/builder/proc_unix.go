//go:build unix

package builder

import (
	"os/exec"
	"syscall"
	"time"
)

// killGroup makes cancellation end the whole process tree: the CLI starts
// helpers (uv's builds, modal's workers) that would otherwise outlive a
// cancelled deploy. Being in its own process group, the CLI gets no signal
// meant for the provider's group, which is why a provider killed outright
// needs dieWithParent (proc_linux.go) to take the CLI along.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// Output pipes held open by a straggler must not block Wait forever.
	cmd.WaitDelay = 5 * time.Second
}
