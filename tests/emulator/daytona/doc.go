// Package daytona is the Daytona family of the emulator: the REST API the
// official Daytona SDKs talk to — the Python SDK 0.161.0 upstream's
// snapshot builder (packages/daytona-infra) runs with, and the Go SDK
// (github.com/daytonaio/daytona/libs/sdk-go v0.173.0, through its generated
// api-client-go) the provider's client uses — mounted under /daytona/api
// (snapshots with their builds and build logs, sandboxes, object storage push
// access), plus the S3-compatible object storage its image builder uploads
// build contexts to (s3.go), and test controls under /__emulator/daytona/
// (admin.go).
//
// Facts come from the SDK's generated client (routes, query parameters, the
// JSON keys each model requires) and from Daytona's API server source (error
// messages, name rules, state machine, entrypoint derivation). Where a
// behaviour could not be read from either, the code says "inferred".
//
// The inventory records what each build was asked to do: its Dockerfile,
// its build contexts' hashes and the region its create named.
//
// It is checked against real clients: upstream's builder and the fixture's
// on the Python SDK (provider/sandbox's DaytonaSnapshot tests), the Go SDK (snapshot builds,
// streamed build logs, sandboxes, uploads through its aws-sdk-go-v2 object
// storage client) in tests/emulator/daytona_test.go, and the provider's own
// client in provider/internal/sandbox/daytonaapi and the DaytonaSnapshot resource
// tests in provider/sandbox.
//
// It keeps its own state file (daytona.json) with its own lock and imports
// only core: routes count, take faults and serve them through core.Core, and
// the state file is a core.StateFile. The root package (tests/emulator)
// composes it and keeps the Daytona names of its API (DaytonaAPIURL,
// DefaultDaytonaAPIKey, DaytonaInventory...) as forwarders.
package daytona
