package engine

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkSession runs sessions on the local cloud as a person does, in
// Chromium: signed in once, then each session started from the dashboard,
// a prompt sent once its sandbox has connected, until the pull request's
// link is on the page. The image cache starts empty: the deploy's build of
// the sandbox image lays it out from the package registries, so it prints
// the deploy's time, then per session: "Start session" to the sandbox
// connected, the prompt to the agent's first event on the page and to the
// pull request's link, and the sandbox's peak memory (the sum of its
// processes' peak resident sets). Numbers only: `make bench` prints them.
func BenchmarkSession(b *testing.B) {
	t := benchTB{b}
	began := time.Now()
	c := deploySessionCloud(t, filepath.Join(t.TempDir(), "modal-images"))
	deployed := time.Since(began)
	c.signIn(t, func(string) {})
	type row struct {
		connect, first, pr time.Duration
		peakKiB            int64
	}
	var rows []row
	for b.Loop() {
		c.b.Navigate(c.webURL)
		started := time.Now()
		id := startSession(t, c.b, c.webURL, 10*time.Minute)
		connect := time.Since(started)
		sandbox := sessionSandbox(t, c.emu, id)
		sent := time.Now()
		sendPrompt(c.b, fmt.Sprintf("Leave a note for benchmark session %d", len(rows)+1))
		c.b.WaitForWithin(`!!document.querySelector("#timeline .assistant, #timeline .tool, #timeline .failed")`, 5*time.Minute)
		first := time.Since(sent)
		c.b.WaitForWithin(`!document.getElementById("pull-request").hidden || !!document.querySelector("#timeline .failed")`, 5*time.Minute)
		pr := time.Since(sent)
		require.Empty(t, c.b.Text("#timeline .failed"), "the prompt failed: %s", c.b.Text("#timeline"))
		rows = append(rows, row{connect, first, pr, peakResidentKiB(sandboxProcesses(t, sandbox.ID))})
	}
	fmt.Printf("deploy, the image cache empty (the build lays the sandbox image out): %s\n", deployed.Round(100*time.Millisecond))
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "session\tstart -> sandbox connected\tprompt -> first agent event\tprompt -> pull request\tsandbox peak memory")
	for i, r := range rows {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%.0f MiB\n", i+1, r.connect.Round(100*time.Millisecond),
			r.first.Round(100*time.Millisecond), r.pr.Round(100*time.Millisecond), float64(r.peakKiB)/1024)
	}
	require.NoError(t, w.Flush())
}

// peakResidentKiB is the sum of the processes' peak resident set sizes
// (VmHWM), an upper bound of what they held at once.
func peakResidentKiB(pids []int) int64 {
	var total int64
	for _, pid := range pids {
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			continue
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
				kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				total += kib
			}
		}
		f.Close()
	}
	return total
}
