package esm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// ChildEnv, set to "1" in a process's environment, makes the plugin parse
// the module on its standard input and answer on its standard output
// (ServeChild) instead of starting as a plugin.
const ChildEnv = "OPENINSPECT_ESM_SYNTAX_CHILD"

// parseIn parses one module: in this process unless ParseInChildProcess
// pointed it at a child.
var parseIn = parseHere

// childFrom is the size from which ParseInChildProcess parses in a child: a
// smaller module's syntax tree is at most some 15 MB, less than the start
// of a child costs in time.
const childFrom = 256 << 10

// ParseInChildProcess makes CheckSyntax parse modules of childFrom bytes and
// more in a short-lived child process (exe, run with ChildEnv set) instead
// of in this one. A parse holds the module's syntax tree, some 60 times the
// module's size; the plugin is long-lived and holds every Worker of an
// installation at once, so its memory would keep that peak. Outside the
// plugin (tests, tools) every parse stays in process.
func ParseInChildProcess(exe string) {
	parseIn = func(src []byte) *SyntaxError {
		if len(src) < childFrom {
			return parseHere(src)
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), ChildEnv+"=1")
		cmd.Stdin = bytes.NewReader(src)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var answer childAnswer
		if err == nil {
			err = json.Unmarshal(out, &answer)
		}
		if err != nil {
			// The parser could not run: not a verdict on the module, so
			// the upload decides (a parse failure here must not refuse a
			// good module).
			fmt.Fprintf(os.Stderr, "esm: the syntax check did not run (%v) %s\n", err, stderr.String())
			return nil
		}
		return answer.Error
	}
}

type childAnswer struct {
	Error *SyntaxError `json:"error,omitempty"`
}

// ServeChild is the child's side: it parses the module read from in and
// writes the verdict to out.
func ServeChild(in io.Reader, out io.Writer) error {
	src, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("reading the module: %w", err)
	}
	return json.NewEncoder(out).Encode(childAnswer{Error: parseHere(src)})
}
