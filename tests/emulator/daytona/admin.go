package daytona

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// dtDefaultFailure stands for "fail like a RUN step that exits 1": the
// message is made from the instruction the build fails at.
const dtDefaultFailure = "\x00default"

// FailNextBuild makes the next snapshot build (of any name) fail with
// reason as its errorReason and last log line. An empty reason reads like a
// RUN step that exited 1. Calls queue up: each build consumes one.
// Arranged failures live in memory only; a restart forgets them.
func (s *Service) FailNextBuild(reason string) { s.failures.FailNext(reason) }

// FailBuilds makes every build of a snapshot called name fail until
// ClearBuildFailures. An empty reason reads like a RUN step that
// exited 1.
func (s *Service) FailBuilds(name, reason string) { s.failures.FailNamed(name, reason) }

// ClearBuildFailures forgets every arranged build failure.
func (s *Service) ClearBuildFailures() { s.failures.Clear() }

// ErrNoSuchSnapshot is returned for a snapshot name the organization
// does not have.
var ErrNoSuchSnapshot = errors.New("emulator: no such Daytona snapshot")

// DeactivateSnapshot turns an active snapshot inactive, as Daytona
// does to snapshots left unused (and to those of suspended organizations).
// An empty org means DefaultOrganizationID.
func (s *Service) DeactivateSnapshot(org, name string) error {
	if org == "" {
		org = DefaultOrganizationID
	}
	d := s
	now := time.Now()
	d.mu.Lock()
	sn := d.lookupLocked(org, name)
	var err error
	switch {
	case sn == nil || sn.RemovedAt != nil:
		err = fmt.Errorf("%w: %q", ErrNoSuchSnapshot, name)
	case sn.state(now) != dtActive:
		err = fmt.Errorf("emulator: snapshot %q is %s, not active", name, sn.state(now))
	default:
		sn.Inactive, sn.UpdatedAt = true, now.UTC()
	}
	d.mu.Unlock()
	if err != nil {
		return err
	}
	return d.save()
}

// registerDaytonaAdmin adds the Daytona test controls under
// /__emulator/daytona/ (plain JSON, no key, never counted), for scripts
// driving the standalone binary.
func (s *Service) registerDaytonaAdmin() {
	const base = "/__emulator/daytona"
	s.failures.Register(s.mux, base)
	s.mux.HandleFunc("POST "+base+"/sandboxes", func(w http.ResponseWriter, r *http.Request) {
		var spec SandboxSpec
		if err := core.AdminDecode(w, r, &spec); err != nil {
			core.AdminError(w, http.StatusBadRequest, err)
			return
		}
		id, err := s.CreateSandbox(spec)
		if err != nil {
			core.AdminError(w, http.StatusConflict, err)
			return
		}
		core.WriteJSON(w, http.StatusCreated, map[string]string{"id": id})
	})
	s.mux.HandleFunc("POST "+base+"/snapshots/{name}/deactivate", func(w http.ResponseWriter, r *http.Request) {
		if err := s.DeactivateSnapshot(r.URL.Query().Get("organizationId"), r.PathValue("name")); err != nil {
			status := http.StatusConflict
			if errors.Is(err, ErrNoSuchSnapshot) {
				status = http.StatusNotFound
			}
			core.AdminError(w, status, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
