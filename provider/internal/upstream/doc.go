// Package upstream loads the machine-readable record of what the pinned
// upstream Open-Inspect release (github.com/ColeMurray/background-agents)
// deploys: resource names, workers and their bindings, vars, secrets, crons,
// queues, the Modal and Daytona sandbox backends and the D1 migration ledger.
//
// The record itself is data in third_party/background-agents (contract.json,
// written in this project's own format; no upstream code or text). The
// OpenInspect component expands its defaults from it, and contract tests
// check that expansion against it.
//
// Files, by concern: types.go is the record's shape (contract.json's
// fields); contract.go loads and parses it; validate.go is Validate, which
// runs the checks of conditions.go (conditions and their evaluation),
// naming.go, values.go (inputs, generated secrets, derived values and the
// sources that resolve them), resources.go (D1, KV, R2, queues),
// workers.go (each worker, its vars, secrets, crons, consumers and shared
// compatibility settings), bindings.go (one table of the binding kinds and
// what is checked of each), sandbox.go, migrations.go and artefacts.go.
//
// It imports the data package third_party/background-agents and
// internal/cron, the one validator of cron expressions.
package upstream
