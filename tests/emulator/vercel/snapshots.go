package vercel

import (
	"net/http"
	"sort"
	"strconv"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// Snapshot statuses the client's schema accepts are created, deleted and
// failed; deleted snapshots are removed here, so they are never listed.
const (
	snapshotCreated = "created"
	snapshotDeleted = "deleted"
)

// region is the one region every snapshot reports (the client's list
// schema requires the field).
const region = "iad1"

// maxListLimit bounds a snapshot list's limit parameter.
const maxListLimit = 100

// snapshot is one snapshot of a session, and the sandbox it was taken from.
type snapshot struct {
	ID              string `json:"id"`
	Team            string `json:"team"`
	Project         string `json:"project"`
	Sandbox         string `json:"sandbox"`
	SourceSessionID string `json:"sourceSessionId"`
	Status          string `json:"status"`
	SizeBytes       int64  `json:"sizeBytes"`
	CreatedAt       int64  `json:"createdAt"` // ms
	UpdatedAt       int64  `json:"updatedAt"` // ms
	ExpiresAt       int64  `json:"expiresAt,omitempty"`
	Seq             int64  `json:"seq"`
	// Direct marks a snapshot an admin call made without any session.
	Direct bool `json:"direct,omitempty"`
}

// metadata is the client's list schema for one snapshot.
func (sn *snapshot) metadata() map[string]any {
	m := map[string]any{"id": sn.ID, "sourceSessionId": sn.SourceSessionID, "status": sn.Status, "region": region,
		"sizeBytes": sn.SizeBytes, "createdAt": sn.CreatedAt, "updatedAt": sn.UpdatedAt}
	if sn.ExpiresAt > 0 {
		m["expiresAt"] = sn.ExpiresAt
	}
	return m
}

// snapshotSession is POST /v2/sandboxes/sessions/{id}/snapshot
// {expiration?}: the session's files become a snapshot (expiration in ms,
// 0 or absent: never expires) and the session stops.
func (s *Service) snapshotSession(w http.ResponseWriter, r *http.Request, team string) {
	var req struct {
		Expiration *int64 `json:"expiration"`
	}
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Expiration != nil && *req.Expiration < 0 {
		writeError(w, badRequest("expiration must be >= 0 milliseconds (0: never), got %d", *req.Expiration))
		return
	}
	now := nowMillis()
	s.mu.Lock()
	ss, err := s.runningSessionLocked(team, r.PathValue("sessionId"), now)
	if err != nil {
		s.mu.Unlock()
		writeError(w, err)
		return
	}
	var size int64
	for _, f := range ss.Files {
		size += f.Size
	}
	sn := &snapshot{ID: newID("snap"), Team: team, Project: ss.Project, Sandbox: ss.Sandbox, SourceSessionID: ss.ID,
		Status: snapshotCreated, SizeBytes: size, CreatedAt: now, UpdatedAt: now, Seq: s.nextSeqLocked()}
	if req.Expiration != nil && *req.Expiration > 0 {
		sn.ExpiresAt = now + *req.Expiration
	}
	s.st.Snapshots[sn.ID] = sn
	ss.Status, ss.SnapshotID = statusStopped, sn.ID
	out := map[string]any{"snapshot": map[string]any{"id": sn.ID, "status": sn.Status, "createdAt": sn.CreatedAt},
		"session": ss.json(now)}
	s.mu.Unlock()
	if err := s.save(); err != nil {
		writeError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, out)
}

// listSnapshots is GET /v2/sandboxes/snapshots?project=&name=&limit=&
// sortOrder=: the project's snapshots, of one sandbox when name is given,
// newest first unless sortOrder=asc. Without a limit every one is listed.
func (s *Service) listSnapshots(w http.ResponseWriter, r *http.Request, team string) {
	project, err := requireProject(r)
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > maxListLimit {
			writeError(w, badRequest("limit must be a whole number from 1 to %d, got %q", maxListLimit, v))
			return
		}
	}
	asc := false
	switch order := q.Get("sortOrder"); order {
	case "", "desc":
	case "asc":
		asc = true
	default:
		writeError(w, badRequest("sortOrder must be asc or desc, got %q", order))
		return
	}
	name := q.Get("name")
	s.mu.Lock()
	var found []*snapshot
	for _, sn := range s.st.Snapshots {
		if sn.Team == team && sn.Project == project && (name == "" || sn.Sandbox == name) {
			found = append(found, sn)
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if asc {
			return found[i].Seq < found[j].Seq
		}
		return found[i].Seq > found[j].Seq
	})
	if limit > 0 && len(found) > limit {
		found = found[:limit]
	}
	out := []map[string]any{}
	for _, sn := range found {
		out = append(out, sn.metadata())
	}
	s.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, map[string]any{"snapshots": out})
}

// deleteSnapshot is DELETE /v2/sandboxes/snapshots/{id}: answered with the
// snapshot as deleted, after which it is gone.
func (s *Service) deleteSnapshot(w http.ResponseWriter, r *http.Request, team string) {
	id := r.PathValue("snapshotId")
	now := nowMillis()
	s.mu.Lock()
	sn, ok := s.st.Snapshots[id]
	if !ok || sn.Team != team {
		s.mu.Unlock()
		writeError(w, notFound("snapshot %q not found", id))
		return
	}
	delete(s.st.Snapshots, id)
	gone := *sn
	gone.Status, gone.UpdatedAt = snapshotDeleted, now
	s.mu.Unlock()
	if err := s.save(); err != nil {
		writeError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, map[string]any{"snapshot": gone.metadata()})
}
