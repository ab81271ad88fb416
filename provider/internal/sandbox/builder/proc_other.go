//go:build !unix

package builder

import (
	"os/exec"
	"time"
)

// killGroup: without process groups, cancellation kills the direct child.
func killGroup(cmd *exec.Cmd) {
	cmd.WaitDelay = 5 * time.Second
}

// runChild runs cmd.
func runChild(cmd *exec.Cmd) error { return cmd.Run() }
