package opencomputer

// defaultFailure stands for "fail like a run step that exits 1".
const defaultFailure = "step failed: exit status 1"

// FailNextBuild makes the next snapshot build (of any name) fail with reason
// (its SSE error event); calls queue up. Arranged failures live in memory.
func (s *Service) FailNextBuild(reason string) { s.failures.FailNext(reason) }

// FailBuilds makes every build of the snapshot called name fail until
// ClearBuildFailures.
func (s *Service) FailBuilds(name, reason string) { s.failures.FailNamed(name, reason) }

// ClearBuildFailures forgets every arranged build failure.
func (s *Service) ClearBuildFailures() { s.failures.Clear() }

// registerAdmin adds the test controls under /__emulator/opencomputer/.
func (s *Service) registerAdmin() {
	const base = "/__emulator/opencomputer"
	s.failures.Register(s.mux, base)
	s.registerSandboxAdmin(base)
}
