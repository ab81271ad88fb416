// Package workers is the emulated Workers API and the scripts' runtime:
// scripts (uploads with binding, limit and Durable Object migration checks:
// workers.go, workers_limits.go), versions, deployments and secrets
// (workers_versions.go), settings (workers_settings.go), subdomains and
// workers.dev, cron triggers (cron.go, cron_match.go), running scripts in
// workerd (runtime.go), serving them by Host and under the /__workers/
// alias (hosts.go, runtime.go) and on local origins (local_origins.go), the
// binding dispatcher (bindings.go: X-Emulator-Binding -> the backend of that
// kind), and the control plane's app secrets (appsecrets.go). It owns
// workers.json ("workers", "workers_subdomains").
//
// It imports the standard library, core, package cloudflare, package assets
// and the workerd launcher, never the root or another sibling: it reaches
// D1, KV, R2, Queues and Zones through its own small interfaces (service.go)
// that the root wires, and implements theirs (Exists, Dispatch, Runnable,
// Producers) for queues and zones. It holds its lock while calling them
// (they never call back under theirs), never during a workerd dispatch or
// SQL.
//
// Its rows of the error-code ledger (the Workers scripts routes, the cron
// syntax) are in ledger.go; the shared rows stay in package cloudflare's ledger.go.
package workers
