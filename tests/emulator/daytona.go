package emulator

// The Daytona family lives in tests/emulator/daytona; these names keep the
// root package's API, so importers need not change.

import (
	"github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
)

// Daytona defaults and the object storage bucket (see package daytona).
const (
	DefaultDaytonaAPIKey         = daytona.DefaultAPIKey
	DefaultDaytonaOrganizationID = daytona.DefaultOrganizationID
	DefaultDaytonaBuildTime      = daytona.DefaultBuildTime
	InstantDaytonaBuilds         = daytona.InstantBuilds
	DaytonaBucket                = daytona.Bucket
)

// ErrNoSuchDaytonaSnapshot is returned for a snapshot name the organization
// does not have.
var ErrNoSuchDaytonaSnapshot = daytona.ErrNoSuchSnapshot

// The Daytona inventory and sandbox spec types.
type (
	DaytonaInventory     = daytona.Inventory
	DaytonaSnapshotEntry = daytona.SnapshotEntry
	DaytonaSandboxEntry  = daytona.SandboxEntry
	DaytonaObjectEntry   = daytona.ObjectEntry
	DaytonaSandboxSpec   = daytona.SandboxSpec
)

// DaytonaAPIURL is what DAYTONA_API_URL (or the SDK's APIUrl) should be set
// to: URL() + "/daytona/api".
func (s *Server) DaytonaAPIURL() string { return s.url + daytona.APIPrefix }

// DaytonaCalls is the number of requests made to the Daytona API and its
// object storage (everything under /daytona/), matched or not.
func (s *Server) DaytonaCalls() int { return s.daytona.Calls() }

// FailNextDaytonaBuild makes the next snapshot build fail with reason
// (daytona.Service.FailNextBuild).
func (s *Server) FailNextDaytonaBuild(reason string) { s.daytona.FailNextBuild(reason) }

// FailDaytonaBuilds makes every build of snapshot name fail until
// ClearDaytonaBuildFailures (daytona.Service.FailBuilds).
func (s *Server) FailDaytonaBuilds(name, reason string) { s.daytona.FailBuilds(name, reason) }

// ClearDaytonaBuildFailures forgets every arranged build failure.
func (s *Server) ClearDaytonaBuildFailures() { s.daytona.ClearBuildFailures() }

// DeactivateDaytonaSnapshot turns an active snapshot inactive
// (daytona.Service.DeactivateSnapshot).
func (s *Server) DeactivateDaytonaSnapshot(org, name string) error {
	return s.daytona.DeactivateSnapshot(org, name)
}

// CreateDaytonaSandbox adds a sandbox directly (daytona.Service.CreateSandbox).
func (s *Server) CreateDaytonaSandbox(spec DaytonaSandboxSpec) (string, error) {
	return s.daytona.CreateSandbox(spec)
}
