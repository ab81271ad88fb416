package drift

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestPythonSDKCompiles byte-compiles the committed Python SDK and the Python
// example, so a codegen change that emits invalid Python fails here rather
// than for users. The bytecode goes to a temporary prefix; the tree stays clean.
func TestPythonSDKCompiles(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to check the Python SDK: %v", err)
	}
	cmd := exec.Command(python, "-m", "compileall", "-q", filepath.Join(repoRoot(t), "sdk", "python"),
		filepath.Join(repoRoot(t), "examples", "python"))
	cmd.Env = append(cmd.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Python SDK does not compile: %v\n%s", err, out)
	}
}
