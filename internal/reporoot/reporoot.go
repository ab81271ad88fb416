// Package reporoot finds the repository's root from a test's working
// directory (go test runs each package in its own directory). Tests use it
// instead of runtime.Caller, whose file names are module paths, not
// directories, in a -trimpath build, which is how `make test` builds.
package reporoot

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

const module = "module github.com/openinspect/pulumi-openinspect\n"

// Dir is the directory holding this module's go.mod, the nearest one up from
// the working directory; it panics outside the repository, where no test of
// this module runs.
func Dir() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("reporoot: %v", err))
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte(module)) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("reporoot: no go.mod of github.com/openinspect/pulumi-openinspect above the working directory")
		}
		dir = parent
	}
}
