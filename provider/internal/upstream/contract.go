package upstream

import (
	backgroundagents "github.com/openinspect/pulumi-openinspect/third_party/background-agents"
)

// UpstreamCommit is the pinned upstream commit, as recorded in UPSTREAM_COMMIT.
func UpstreamCommit() string { return backgroundagents.Commit() }

// Raw returns a copy of the embedded contract.json.
func Raw() []byte { return backgroundagents.ContractJSON() }

// SchemaVersion is the version of contract.json's format that Parse reads.
const SchemaVersion = 1

// Contract is the whole record. Its JSON form is contract.json.
type Contract struct {
	// SchemaVersion is the version of this file's format (not of upstream).
	SchemaVersion int `json:"schemaVersion"`
	// Upstream identifies the pinned upstream revision.
	Upstream Upstream `json:"upstream"`
	// Conditions are the named predicates every `when` refers to.
	Conditions map[string]Condition `json:"conditions"`
	// Naming describes how resource names are formed.
	Naming Naming `json:"naming"`
	// Compatibility holds the settings shared by every upstream worker.
	Compatibility Compatibility `json:"compatibility"`
	// Inputs are the values the installer supplies.
	Inputs []Input `json:"inputs"`
	// Generated are random secrets made once per installation.
	Generated []Generated `json:"generated"`
	// Derived are values computed from the installation itself.
	Derived []Derived `json:"derived"`
	// D1Databases lists the D1 databases upstream creates.
	D1Databases []D1Database `json:"d1Databases"`
	// KVNamespaces lists the KV namespaces upstream creates.
	KVNamespaces []KVNamespace `json:"kvNamespaces"`
	// R2Buckets lists the R2 buckets upstream creates.
	R2Buckets []R2Bucket `json:"r2Buckets"`
	// Queues lists the queues upstream creates, with their dead-letter pairing.
	Queues []Queue `json:"queues"`
	// Workers lists the Cloudflare Workers upstream deploys.
	Workers []Worker `json:"workers"`
	// Sandbox describes the Modal and Daytona sandbox backends.
	Sandbox Sandbox `json:"sandbox"`
	// D1Migrations records facts about upstream's migration files and ledger.
	D1Migrations D1Migrations `json:"d1Migrations"`
	// Artefacts records what building the pinned commit yields: how it is
	// built, and the digest of every migration file and reference bundle.
	Artefacts Artefacts `json:"artefacts"`
}

// Upstream identifies the pinned upstream revision.
type Upstream struct {
	Repository string `json:"repository"`
	Commit     string `json:"commit"`
	CommitDate string `json:"commitDate"` // RFC 3339
	Notes      string `json:"notes,omitempty"`
}
