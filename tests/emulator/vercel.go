package emulator

// The Vercel Sandbox family lives in tests/emulator/vercel; these names give
// the root package's API, as for E2B and OpenComputer.

import (
	"github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
)

// Vercel defaults (see package vercel).
const (
	DefaultVercelToken       = vercel.DefaultToken
	DefaultVercelTeamID      = vercel.DefaultTeamID
	DefaultVercelCommandTime = vercel.DefaultCommandTime
)

// The Vercel inventory types.
type (
	VercelInventory     = vercel.Inventory
	VercelSandboxEntry  = vercel.SandboxEntry
	VercelSessionEntry  = vercel.SessionEntry
	VercelCommandEntry  = vercel.CommandEntry
	VercelSnapshotEntry = vercel.SnapshotEntry
)

// VercelAPIURL is what VERCEL_SANDBOX_API_BASE_URL should be set to: URL()
// + "/vercel/api" (the real default is https://vercel.com/api).
func (s *Server) VercelAPIURL() string { return s.url + vercel.APIPrefix }

// VercelCalls is the number of requests made to the Vercel Sandbox API
// (everything under /vercel/), matched or not.
func (s *Server) VercelCalls() int { return s.vercel.Calls() }

// FailNextVercelBuild makes the next bootstrap command (the first command
// after an fs/write, in any sandbox) exit 1 with reason.
func (s *Server) FailNextVercelBuild(reason string) { s.vercel.FailNextBuild(reason) }

// FailVercelBuilds makes every bootstrap command in the sandbox called name
// fail until ClearVercelBuildFailures.
func (s *Server) FailVercelBuilds(name, reason string) { s.vercel.FailBuilds(name, reason) }

// ClearVercelBuildFailures forgets every arranged build failure.
func (s *Server) ClearVercelBuildFailures() { s.vercel.ClearBuildFailures() }

// CreateVercelSnapshot adds a created snapshot of the sandbox sandboxName in
// project directly (vercel.Service.CreateSnapshot; team "" is
// DefaultVercelTeamID) and returns its ID.
func (s *Server) CreateVercelSnapshot(team, project, sandboxName string) (string, error) {
	return s.vercel.CreateSnapshot(team, project, sandboxName)
}
