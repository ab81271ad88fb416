package vercel

import "sort"

// Inventory is the Vercel side of /__emulator/inventory: every sandbox with
// its sessions (what was written into each and what each ran), and every
// snapshot.
type Inventory struct {
	Sandboxes []SandboxEntry  `json:"sandboxes"`
	Snapshots []SnapshotEntry `json:"snapshots"`
	// Projects are the web UI's side, by team then name.
	Projects []ProjectEntry `json:"projects"`
	// Uploads counts the files each team uploaded through /v2/files.
	Uploads map[string]int `json:"uploads"`
}

// Empty reports whether nothing exists; a stopped sandbox still exists
// until it is deleted, as on Vercel. Uploaded files do not count: they are
// content-addressed and Vercel has no call that deletes one.
func (i Inventory) Empty() bool {
	return len(i.Sandboxes) == 0 && len(i.Snapshots) == 0 && len(i.Projects) == 0
}

// ProjectEntry is one project with its settings, variables, domains and
// deployments.
type ProjectEntry struct {
	Team           string            `json:"team"`
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	Framework      string            `json:"framework"`
	RootDirectory  string            `json:"rootDirectory"`
	InstallCommand string            `json:"installCommand"`
	BuildCommand   string            `json:"buildCommand"`
	Env            []EnvEntry        `json:"env"`
	Domains        []string          `json:"domains,omitempty"`
	Deployments    []DeploymentEntry `json:"deployments"`
}

// EnvEntry is one variable: a sensitive one's value is not shown.
type EnvEntry struct {
	ID      string   `json:"id"`
	Key     string   `json:"key"`
	Type    string   `json:"type"`
	Targets []string `json:"targets"`
	Value   string   `json:"value,omitempty"`
	// UpdatedAt moves with every in-place update (ms).
	UpdatedAt int64 `json:"updatedAt"`
}

// DeploymentEntry is one deployment, oldest first.
type DeploymentEntry struct {
	ID           string   `json:"id"`
	Host         string   `json:"host"`
	Target       string   `json:"target"`
	State        string   `json:"state"`
	Files        int      `json:"files"`
	Aliases      []string `json:"aliases"`
	ErrorMessage string   `json:"errorMessage,omitempty"`
	// Meta are the key/values its create set.
	Meta map[string]string `json:"meta,omitempty"`
}

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
	inv := Inventory{Sandboxes: []SandboxEntry{}, Snapshots: []SnapshotEntry{}, Projects: s.projectsLocked(now), Uploads: map[string]int{}}
	for team, n := range s.st.Uploads {
		inv.Uploads[team] = n
	}
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

// projectsLocked lists the projects for the inventory.
func (s *Service) projectsLocked(now int64) []ProjectEntry {
	out := []ProjectEntry{}
	for _, p := range s.st.Projects {
		e := ProjectEntry{Team: p.Team, ID: p.ID, Name: p.Name, Framework: str(p.Framework), RootDirectory: str(p.RootDirectory),
			InstallCommand: str(p.InstallCommand), BuildCommand: str(p.BuildCommand), Env: []EnvEntry{}, Domains: p.Domains,
			Deployments: []DeploymentEntry{}}
		for _, v := range p.Env {
			ee := EnvEntry{ID: v.ID, Key: v.Key, Type: v.Type, Targets: v.Target, UpdatedAt: v.UpdatedAt}
			if v.Type != "sensitive" {
				ee.Value = v.Value
			}
			e.Env = append(e.Env, ee)
		}
		var ds []*deployment
		for _, d := range s.st.Deployments {
			if d.Project == p.ID {
				ds = append(ds, d)
			}
		}
		sort.Slice(ds, func(i, j int) bool {
			if ds[i].CreatedAt != ds[j].CreatedAt {
				return ds[i].CreatedAt < ds[j].CreatedAt
			}
			return ds[i].ID < ds[j].ID
		})
		for _, d := range ds {
			de := DeploymentEntry{ID: d.ID, Host: d.Host, Target: d.Target, State: d.state(now), Files: len(d.Files),
				Aliases: s.aliasesLocked(d, now), Meta: d.Meta}
			if de.State == stateError {
				de.ErrorMessage = d.Fail
			}
			e.Deployments = append(e.Deployments, de)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Team != out[j].Team {
			return out[i].Team < out[j].Team
		}
		return out[i].Name < out[j].Name
	})
	return out
}
