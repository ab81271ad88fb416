package toolchain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// WaitForLane waits while .ci/test-tools.sh builds the named tool lane
// behind the tests (`--behind`, as `make test` does with the Kubernetes
// lane, so everything else runs meanwhile), then reports whether it
// failed. With no lane left behind (the tools were built first, or a plain
// `go test`) it returns at once, and the caller's own check of the binaries
// says what is missing. logf, when set, hears once that the wait began.
func WaitForLane(name string, logf func(format string, args ...any)) error {
	dir := filepath.Join(CacheDir(), "lanes")
	waited := time.Now()
	for said := false; laneRunning(filepath.Join(dir, name+".pid")); said = true {
		if !said && logf != nil {
			logf("waiting for the %s tool lane, still building behind the tests (log: %s)", name, filepath.Join(dir, name+".log"))
		}
		time.Sleep(2 * time.Second)
	}
	status, err := os.ReadFile(filepath.Join(dir, name+".status"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("toolchain: read the %s lane's status: %w", name, err)
	}
	if s := strings.TrimSpace(string(status)); s != "ready" {
		return fmt.Errorf("toolchain: the %s tool lane %s (waited %s): see %s",
			name, s, time.Since(waited).Round(time.Second), filepath.Join(dir, name+".log"))
	}
	return nil
}

// laneRunning: the pid file names a live process (a lane whose build was
// killed leaves a pid that no longer runs, and is not waited for).
func laneRunning(pidFile string) bool {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}
