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
// It imports the data package third_party/background-agents and
// internal/cron, the one validator of cron expressions.
package upstream
