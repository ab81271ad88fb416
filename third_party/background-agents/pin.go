// Package backgroundagents carries the upstream pin as data: the pinned
// commit and contract.json, the record of what that revision's deployment
// creates, in this project's own format. It only embeds the files (go:embed
// cannot reach outside a package's directory); the provider's loader in
// provider/internal/upstream decodes and validates them.
//
// A binary can be linked at another pin without changing these files: see
// pinDir.
package backgroundagents

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed contract.json
var contractJSON []byte

//go:embed UPSTREAM_COMMIT
var upstreamCommitFile string

// pinDir, set at link time, names a directory holding a contract.json and
// an UPSTREAM_COMMIT that the binary reads once at start instead of the
// embedded ones:
//
//	go build -ldflags "-X github.com/openinspect/pulumi-openinspect/third_party/background-agents.pinDir=/abs/dir" ./provider/cmd/pulumi-resource-openinspect
//
// It is how a plugin is built at another pin (the pin-upgrade engine test
// builds one at each fixture pin; docs/releases.md): only the link differs,
// so no package is compiled again. A release never sets it. It is a path
// read at start, not content, because -X takes only a string without
// spaces or newlines; the directory must still exist when the binary runs.
var pinDir string

func init() {
	if pinDir == "" {
		return
	}
	contract, commit, err := readPin(pinDir)
	if err != nil {
		// A binary linked at a pin it cannot read must not run at the
		// embedded pin instead: that would deploy another revision quietly.
		panic(fmt.Sprintf("this binary was linked to read its upstream pin from %s (backgroundagents.pinDir): %v", pinDir, err))
	}
	contractJSON, upstreamCommitFile = contract, commit
}

// readPin reads dir's contract.json and UPSTREAM_COMMIT.
func readPin(dir string) (contract []byte, commit string, err error) {
	if !filepath.IsAbs(dir) {
		return nil, "", fmt.Errorf("%q is not an absolute path (the binary may run from any directory)", dir)
	}
	contract, err = os.ReadFile(filepath.Join(dir, "contract.json"))
	if err != nil {
		return nil, "", err
	}
	raw, err := os.ReadFile(filepath.Join(dir, "UPSTREAM_COMMIT"))
	if err != nil {
		return nil, "", err
	}
	if strings.TrimSpace(string(raw)) == "" {
		return nil, "", fmt.Errorf("%s is empty", filepath.Join(dir, "UPSTREAM_COMMIT"))
	}
	return contract, string(raw), nil
}

// ContractJSON returns a copy of the contract.json in effect: the embedded
// one, or pinDir's.
func ContractJSON() []byte { return slices.Clone(contractJSON) }

// Commit is the pinned upstream commit, as recorded in UPSTREAM_COMMIT (the
// embedded one, or pinDir's).
func Commit() string { return strings.TrimSpace(upstreamCommitFile) }
