package kube

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel kill a component if the test process dies
// without calling Stop (a panic, a -timeout), so no control plane outlives it.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
