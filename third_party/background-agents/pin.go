// Package backgroundagents carries the upstream pin as data: the pinned
// commit and contract.json, the record of what that revision's deployment
// creates, in this project's own format. It only embeds the files (go:embed
// cannot reach outside a package's directory); the provider's loader in
// provider/internal/upstream decodes and validates them.
package backgroundagents

import (
	_ "embed"
	"slices"
	"strings"
)

//go:embed contract.json
var contractJSON []byte

//go:embed UPSTREAM_COMMIT
var upstreamCommitFile string

// ContractJSON returns a copy of the embedded contract.json.
func ContractJSON() []byte { return slices.Clone(contractJSON) }

// Commit is the pinned upstream commit, as recorded in UPSTREAM_COMMIT.
func Commit() string { return strings.TrimSpace(upstreamCommitFile) }
