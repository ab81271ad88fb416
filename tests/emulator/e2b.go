package emulator

// The E2B family lives in tests/emulator/e2b; these names give the root
// package's API, as for Daytona.

import (
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
)

// E2B defaults (see package e2b).
const (
	DefaultE2BAPIKey    = e2b.DefaultAPIKey
	DefaultE2BTeamID    = e2b.DefaultTeamID
	DefaultE2BBuildTime = e2b.DefaultBuildTime
)

// The E2B inventory and sandbox spec types.
type (
	E2BInventory     = e2b.Inventory
	E2BTemplateEntry = e2b.TemplateEntry
	E2BBuildEntry    = e2b.BuildEntry
	E2BSandboxEntry  = e2b.SandboxEntry
	E2BSandboxSpec   = e2b.SandboxSpec
)

// E2BAPIURL is what E2B_API_URL should be set to: URL() + "/e2b".
func (s *Server) E2BAPIURL() string { return s.url + e2b.APIPrefix }

// E2BCalls is the number of requests made to the E2B API (everything under
// /e2b/), matched or not.
func (s *Server) E2BCalls() int { return s.e2b.Calls() }

// FailNextE2BBuild makes the next template build fail with reason.
func (s *Server) FailNextE2BBuild(reason string) { s.e2b.FailNextBuild(reason) }

// FailE2BBuilds makes every build of template name fail until
// ClearE2BBuildFailures.
func (s *Server) FailE2BBuilds(name, reason string) { s.e2b.FailBuilds(name, reason) }

// ClearE2BBuildFailures forgets every arranged build failure.
func (s *Server) ClearE2BBuildFailures() { s.e2b.ClearBuildFailures() }

// CreateE2BSandbox adds a sandbox directly (e2b.Service.CreateSandbox).
func (s *Server) CreateE2BSandbox(spec E2BSandboxSpec) (string, error) {
	return s.e2b.CreateSandbox(spec)
}

// CreateE2BTemplate adds a template made elsewhere (e2b.Service.CreateTemplate).
func (s *Server) CreateE2BTemplate(team, name string) (string, error) {
	return s.e2b.CreateTemplate(team, name)
}
