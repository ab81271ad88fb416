package emulator

// The OpenComputer family lives in tests/emulator/opencomputer; these names
// give the root package's API, as for Daytona and E2B.

import (
	"github.com/openinspect/pulumi-openinspect/tests/emulator/opencomputer"
)

// OpenComputer defaults (see package opencomputer).
const (
	DefaultOpenComputerAPIKey    = opencomputer.DefaultAPIKey
	DefaultOpenComputerOrgID     = opencomputer.DefaultOrgID
	DefaultOpenComputerBuildTime = opencomputer.DefaultBuildTime
)

// The OpenComputer inventory types.
type (
	OpenComputerInventory     = opencomputer.Inventory
	OpenComputerSnapshotEntry = opencomputer.SnapshotEntry
)

// OpenComputerAPIURL is what OPENCOMPUTER_API_URL should be set to (it ends
// in /api, as upstream's control plane requires).
func (s *Server) OpenComputerAPIURL() string { return s.url + opencomputer.APIPrefix }

// OpenComputerCalls is the number of requests made to the OpenComputer API
// (everything under /opencomputer/), matched or not.
func (s *Server) OpenComputerCalls() int { return s.opencomputer.Calls() }

// FailNextOpenComputerBuild makes the next snapshot build fail with reason.
func (s *Server) FailNextOpenComputerBuild(reason string) { s.opencomputer.FailNextBuild(reason) }
