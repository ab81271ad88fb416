package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	backgroundagents "github.com/openinspect/pulumi-openinspect/third_party/background-agents"
)

// UpstreamCommit is the pinned upstream commit, as recorded in UPSTREAM_COMMIT.
func UpstreamCommit() string { return backgroundagents.Commit() }

// Raw returns a copy of the embedded contract.json.
func Raw() []byte { return backgroundagents.ContractJSON() }

// SchemaVersion is the version of contract.json's format that Parse reads.
const SchemaVersion = 1

// Load decodes the embedded contract strictly: unknown fields and trailing
// data are errors. It does not call Validate.
func Load() (*Contract, error) { return Parse(backgroundagents.ContractJSON()) }

// embedded is the embedded contract, decoded once for the package-level
// accessors (CompatibilityDate).
var embedded = sync.OnceValue(func() *Contract {
	c, err := Load()
	if err != nil {
		panic(err) // the embedded file is checked by this package's tests
	}
	return c
})

// Parse decodes a contract document strictly, refusing another format version.
func Parse(data []byte) (*Contract, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Contract
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("contract.json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("contract.json: trailing data after the top-level object")
	}
	if c.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("contract.json: schemaVersion %d; this loader reads version %d", c.SchemaVersion, SchemaVersion)
	}
	return &c, nil
}

// find is the first element of list that match accepts, or nil: the
// contract's lookups by logical name or name.
func find[T any](list []T, match func(*T) bool) *T {
	for i := range list {
		if match(&list[i]) {
			return &list[i]
		}
	}
	return nil
}
