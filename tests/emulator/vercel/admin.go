package vercel

import (
	"errors"
	"net/http"
	"strings"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// FailNextBuild makes the next bootstrap command (the first command after an
// fs/write, in any sandbox) exit 1 with reason; calls queue up. Arranged
// failures live in memory only.
func (s *Service) FailNextBuild(reason string) { s.failures.FailNext(reason) }

// FailBuilds makes every bootstrap command in the sandbox called name fail
// until ClearBuildFailures.
func (s *Service) FailBuilds(name, reason string) { s.failures.FailNamed(name, reason) }

// ClearBuildFailures forgets every arranged build failure.
func (s *Service) ClearBuildFailures() { s.failures.Clear() }

// ErrBadSnapshotSpec is CreateSnapshot's error for a spec without a project
// or sandbox name.
var ErrBadSnapshotSpec = errors.New("emulator: a Vercel snapshot needs a project and a sandbox name")

// CreateSnapshot adds a created snapshot directly, as if the sandbox called
// sandboxName in project had been snapshotted elsewhere (no session of it
// exists here), and returns its ID; team "" is DefaultTeamID. Provider
// tests use it for a snapshot the provider did not build.
func (s *Service) CreateSnapshot(team, project, sandboxName string) (string, error) {
	if team == "" {
		team = DefaultTeamID
	}
	if project == "" || sandboxName == "" {
		return "", ErrBadSnapshotSpec
	}
	now := nowMillis()
	s.mu.Lock()
	sn := &snapshot{ID: newID("snap"), Team: team, Project: project, Sandbox: sandboxName, SourceSessionID: newID("sbx_sess"),
		Status: snapshotCreated, CreatedAt: now, UpdatedAt: now, Seq: s.nextSeqLocked(), Direct: true}
	s.st.Snapshots[sn.ID] = sn
	s.mu.Unlock()
	if err := s.save(); err != nil {
		return "", err
	}
	return sn.ID, nil
}

// ErrBadProjectName is AddProject's error for a name Vercel refuses.
var ErrBadProjectName = errors.New("emulator: a Vercel project name is at most 100 lower-case letters, digits, '.', '_' or '-', without '---'")

// AddProject adds a project called name to team ("" is DefaultTeamID), as
// the user makes the project Vercel Sandbox runs in before any
// installation, and returns its ID; a project of that name already there
// is kept and its ID returned. Unlike POST /v11/projects it is not a
// counted API call, so a test's own setup is not taken for the provider's.
func (s *Service) AddProject(team, name string) (string, error) {
	if team == "" {
		team = DefaultTeamID
	}
	if !projectName.MatchString(name) || strings.Contains(name, "---") {
		return "", ErrBadProjectName
	}
	now := nowMillis()
	s.mu.Lock()
	if p, err := s.projectLocked(team, name); err == nil {
		s.mu.Unlock()
		return p.ID, nil
	}
	p := &project{ID: newID("prj"), Team: team, Name: name, Env: []*env{}, CreatedAt: now, UpdatedAt: now}
	s.st.Projects[p.ID] = p
	s.mu.Unlock()
	if err := s.save(); err != nil {
		return "", err
	}
	return p.ID, nil
}

// registerAdmin adds the test controls under /__emulator/vercel/ (plain
// JSON, no token, never counted): build failures as for every sandbox
// family (and, under deployments/, for deployments' builds), POST
// snapshots {team?, project, sandboxName} -> 201 {id} and POST projects
// {team?, name} -> 201 {id} (AddProject).
func (s *Service) registerAdmin() {
	const base = "/__emulator/vercel"
	s.failures.Register(s.mux, base)
	// Deployments' builds: POST base/deployments/build-failures {name?
	// (the project's), reason?}.
	s.deployFailures.Register(s.mux, base+"/deployments")
	s.mux.HandleFunc("POST "+base+"/snapshots", func(w http.ResponseWriter, r *http.Request) {
		var spec struct {
			Team        string `json:"team"`
			Project     string `json:"project"`
			SandboxName string `json:"sandboxName"`
		}
		if err := core.AdminDecode(w, r, &spec); err != nil {
			core.AdminError(w, http.StatusBadRequest, err)
			return
		}
		id, err := s.CreateSnapshot(spec.Team, spec.Project, spec.SandboxName)
		if err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, ErrBadSnapshotSpec) {
				status = http.StatusBadRequest
			}
			core.AdminError(w, status, err)
			return
		}
		core.WriteJSON(w, http.StatusCreated, map[string]string{"id": id})
	})
	s.mux.HandleFunc("POST "+base+"/projects", func(w http.ResponseWriter, r *http.Request) {
		var spec struct {
			Team string `json:"team"`
			Name string `json:"name"`
		}
		if err := core.AdminDecode(w, r, &spec); err != nil {
			core.AdminError(w, http.StatusBadRequest, err)
			return
		}
		id, err := s.AddProject(spec.Team, spec.Name)
		if err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, ErrBadProjectName) {
				status = http.StatusBadRequest
			}
			core.AdminError(w, status, err)
			return
		}
		core.WriteJSON(w, http.StatusCreated, map[string]string{"id": id})
	})
}

// FailNextDeployment makes the next deployment's build fail with reason.
func (s *Service) FailNextDeployment(reason string) { s.deployFailures.FailNext(reason) }
