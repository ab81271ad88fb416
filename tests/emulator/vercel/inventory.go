package vercel

import "sort"

// Inventory is the Vercel side of /__emulator/inventory: every sandbox with
// its sessions (what was written into each and what each ran), and every
// snapshot.
type Inventory struct {
	Sandboxes []SandboxEntry  `json:"sandboxes"`
	Snapshots []SnapshotEntry `json:"snapshots"`
}

// Empty reports whether nothing exists; a stopped sandbox still exists
// until it is deleted, as on Vercel.
func (i Inventory) Empty() bool { return len(i.Sandboxes) == 0 && len(i.Snapshots) == 0 }

// SandboxEntry is one sandbox and the settings of its current session.
type SandboxEntry struct {
	Team    string            `json:"team"`
	Project string            `json:"project"`
	Name    string            `json:"name"`
	Status  string            `json:"status"` // its current session's
	Runtime string            `json:"runtime"`
	VCPUs   int               `json:"vcpus,omitempty"`
	Ports   []int             `json:"ports,omitempty"`
	Tags    map[string]string `json:"tags,omitempty"`
	EnvKeys []string          `json:"envKeys,omitempty"` // names only: values may be secrets
	// Sessions are oldest first; the last is current.
	Sessions []SessionEntry `json:"sessions"`
}

// SessionEntry is one session of a sandbox.
type SessionEntry struct {
	ID               string         `json:"id"`
	Status           string         `json:"status"`
	SourceSnapshotID string         `json:"sourceSnapshotId,omitempty"`
	Files            []string       `json:"files,omitempty"` // fs/write's paths: x-cwd joined with each tar entry
	Commands         []CommandEntry `json:"commands,omitempty"`
	// FailReason is the arranged build failure its bootstrap command
	// exited 1 for.
	FailReason string `json:"failReason,omitempty"`
	SnapshotID string `json:"snapshotId,omitempty"` // the snapshot that stopped it
}

// CommandEntry is one command a session ran.
type CommandEntry struct {
	ID       string `json:"id"`
	Line     string `json:"line"`     // command and args, space-separated
	ExitCode *int   `json:"exitCode"` // nil while it runs
}

// SnapshotEntry is one snapshot.
type SnapshotEntry struct {
	Team            string `json:"team"`
	Project         string `json:"project"`
	ID              string `json:"id"`
	SandboxName     string `json:"sandboxName"`
	SourceSessionID string `json:"sourceSessionId"`
	Status          string `json:"status"`
	SizeBytes       int64  `json:"sizeBytes"`
	ExpiresAt       int64  `json:"expiresAt,omitempty"` // ms; 0: never
}

// Inventory lists sandboxes (by team, project, then name) and snapshots (by
// team, project, then creation).
func (s *Service) Inventory() Inventory {
	now := nowMillis()
	s.mu.Lock()
	defer s.mu.Unlock()
	inv := Inventory{Sandboxes: []SandboxEntry{}, Snapshots: []SnapshotEntry{}}
	for _, sb := range s.st.Sandboxes {
		e := SandboxEntry{Team: sb.Team, Project: sb.Project, Name: sb.Name, Status: statusStopped, Runtime: sb.Runtime,
			VCPUs: sb.VCPUs, Ports: sb.Ports, Tags: sb.Tags, EnvKeys: sb.EnvKeys, Sessions: []SessionEntry{}}
		for _, id := range sb.Sessions {
			ss := s.st.Sessions[id]
			if ss == nil {
				continue
			}
			se := SessionEntry{ID: ss.ID, Status: ss.status(now), SourceSnapshotID: ss.SourceSnapshotID,
				FailReason: ss.FailReason, SnapshotID: ss.SnapshotID}
			for _, f := range ss.Files {
				se.Files = append(se.Files, f.Path)
			}
			for _, c := range ss.Commands {
				se.Commands = append(se.Commands, CommandEntry{ID: c.ID, Line: c.Line, ExitCode: c.exitCode(now)})
			}
			e.Sessions = append(e.Sessions, se)
			e.Status = se.Status
		}
		inv.Sandboxes = append(inv.Sandboxes, e)
	}
	sort.Slice(inv.Sandboxes, func(i, j int) bool {
		a, b := inv.Sandboxes[i], inv.Sandboxes[j]
		if a.Team != b.Team {
			return a.Team < b.Team
		}
		if a.Project != b.Project {
			return a.Project < b.Project
		}
		return a.Name < b.Name
	})
	seq := map[string]int64{}
	for _, sn := range s.st.Snapshots {
		inv.Snapshots = append(inv.Snapshots, SnapshotEntry{Team: sn.Team, Project: sn.Project, ID: sn.ID, SandboxName: sn.Sandbox,
			SourceSessionID: sn.SourceSessionID, Status: sn.Status, SizeBytes: sn.SizeBytes, ExpiresAt: sn.ExpiresAt})
		seq[sn.ID] = sn.Seq
	}
	sort.Slice(inv.Snapshots, func(i, j int) bool {
		a, b := inv.Snapshots[i], inv.Snapshots[j]
		if a.Team != b.Team {
			return a.Team < b.Team
		}
		if a.Project != b.Project {
			return a.Project < b.Project
		}
		return seq[a.ID] < seq[b.ID]
	})
	return inv
}
