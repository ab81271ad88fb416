package daytona

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

func (s *Service) registerDaytonaSnapshots() {
	s.daytonaRoute("POST /snapshots", s.dtCreateSnapshot)
	s.daytonaRoute("GET /snapshots", s.dtListSnapshots)
	s.daytonaRoute("GET /snapshots/{idOrName}", s.dtGetSnapshot)
	s.daytonaRoute("DELETE /snapshots/{id}", s.dtDeleteSnapshot)
	s.daytonaRoute("GET /snapshots/{id}/build-logs", s.dtSnapshotBuildLogs)
	s.daytonaRoute("GET /snapshots/{id}/build-logs-url", s.dtSnapshotBuildLogsURL)
	s.daytonaRoute("POST /snapshots/{id}/activate", s.dtActivateSnapshot)
}

// dtNameRE is Daytona's IMAGE_NAME_REGEX, which it applies to snapshot names
// and image names alike.
var dtNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.\-:]+(/[a-zA-Z0-9_.\-:]+)*(@sha256:[a-f0-9]{64})?$`)

// Daytona's defaults for a snapshot's resources (its entity defaults; the
// same numbers as the sandbox defaults in its service: inferred).
const (
	dtDefaultCPU  = 1
	dtDefaultMem  = 1
	dtDefaultDisk = 3
)

// snapshotJSON renders a snapshot with every key api-client-go's SnapshotDto
// requires (size, errorReason and lastUsedAt may be null, not absent).
func (sn *dtSnapshot) json(now time.Time) map[string]any {
	state := sn.state(now)
	var size, errReason, lastUsed any
	if sn.buildDone(now) && sn.FailReason == "" {
		// A plausible size in GB; Daytona reports the image's.
		size = 0.5 + 0.05*float64(len(sn.Logs))
	}
	if state == dtBuildFailed {
		errReason = sn.FailReason
	}
	if sn.LastUsedAt != nil {
		lastUsed = dtTime(*sn.LastUsedAt)
	}
	out := map[string]any{
		"id":             sn.ID,
		"organizationId": sn.OrganizationID,
		"general":        false,
		"name":           sn.Name,
		"state":          state,
		"size":           size,
		"entrypoint":     sn.Entrypoint,
		"cpu":            sn.CPU,
		"gpu":            sn.GPU,
		"mem":            sn.Mem,
		"disk":           sn.Disk,
		"errorReason":    errReason,
		"createdAt":      dtTime(sn.CreatedAt),
		"updatedAt":      dtTime(sn.updatedAt(now)),
		"lastUsedAt":     lastUsed,
	}
	if sn.ImageName != "" {
		out["imageName"] = sn.ImageName
	}
	if sn.Dockerfile != "" {
		out["buildInfo"] = map[string]any{
			"dockerfileContent": sn.Dockerfile,
			"contextHashes":     sn.ContextHashes,
			"createdAt":         dtTime(sn.CreatedAt),
			"updatedAt":         dtTime(sn.CreatedAt),
			"snapshotRef":       buildRef(sn.Dockerfile, sn.ContextHashes),
		}
	}
	return out
}

// updatedAt moves with the state machine, as a database row would.
func (sn *dtSnapshot) updatedAt(now time.Time) time.Time {
	t := sn.UpdatedAt
	for _, step := range []time.Time{sn.BuildStart.Add(sn.Pending), sn.BuildStart.Add(sn.Pending + sn.Building)} {
		if !now.Before(step) && step.After(t) {
			t = step
		}
	}
	if sn.RemovedAt != nil && sn.RemovedAt.After(t) {
		t = *sn.RemovedAt
	}
	return t
}

// buildRef is a stable reference for identical build inputs, like Daytona's
// build-info hash (which it uses to reuse a build; the emulator does not).
func buildRef(dockerfile string, hashes []string) string {
	sum := sha256.Sum256([]byte(dockerfile + "\x00" + strings.Join(hashes, "\x00")))
	return "daytona-" + hex.EncodeToString(sum[:20])
}

// lookupLocked finds an organization's snapshot by ID or, failing that, by
// name. Another organization's snapshot is not found (inferred: Daytona's
// access guard may answer 403 instead).
func (d *Service) lookupLocked(org, idOrName string) *dtSnapshot {
	if sn, ok := d.st.Snapshots[idOrName]; ok && sn.OrganizationID == org {
		return sn
	}
	for _, sn := range d.st.Snapshots {
		if sn.OrganizationID == org && sn.Name == idOrName {
			return sn
		}
	}
	return nil
}

type dtCreateSnapshotBody struct {
	Name       *string  `json:"name"`
	ImageName  *string  `json:"imageName"`
	Entrypoint []string `json:"entrypoint"`
	CPU        *int     `json:"cpu"`
	GPU        *int     `json:"gpu"`
	Memory     *int     `json:"memory"`
	Disk       *int     `json:"disk"`
	RegionID   *string  `json:"regionId"`
	BuildInfo  *struct {
		DockerfileContent *string  `json:"dockerfileContent"`
		ContextHashes     []string `json:"contextHashes"`
	} `json:"buildInfo"`
}

func decodeDaytona(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, core.MaxBody))
	if err != nil {
		return dtErrorf(http.StatusRequestEntityTooLarge, "request entity too large")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return dtErrorf(http.StatusBadRequest, "Invalid JSON body: %v", err)
	}
	return nil
}

func (s *Service) dtCreateSnapshot(w http.ResponseWriter, r *http.Request, org string) {
	var body dtCreateSnapshotBody
	if err := decodeDaytona(w, r, &body); err != nil {
		writeDaytonaError(w, r, err)
		return
	}
	out, err := s.createSnapshot(org, body, time.Now())
	if err == nil {
		err = s.save()
	}
	if err != nil {
		writeDaytonaError(w, r, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, out)
}

func (d *Service) createSnapshot(org string, body dtCreateSnapshotBody, now time.Time) (map[string]any, error) {
	if body.Name == nil || *body.Name == "" {
		return nil, dtErrorf(http.StatusBadRequest, "name must be a string")
	}
	name := *body.Name
	if !dtNameRE.MatchString(name) {
		return nil, dtErrorf(http.StatusBadRequest, "Invalid snapshot name format. May contain letters, digits, dots, colons, and dashes")
	}
	for _, v := range []*int{body.CPU, body.GPU, body.Memory, body.Disk} {
		if v != nil && *v < 0 {
			return nil, dtErrorf(http.StatusBadRequest, "resources must not be negative")
		}
	}
	sn := &dtSnapshot{ID: core.NewUUID(), OrganizationID: org, Name: name, CPU: orDefault(body.CPU, dtDefaultCPU),
		GPU: orDefault(body.GPU, 0), Mem: orDefault(body.Memory, dtDefaultMem), Disk: orDefault(body.Disk, dtDefaultDisk),
		CreatedAt: now.UTC(), UpdatedAt: now.UTC(), BuildStart: now.UTC()}
	if body.RegionID != nil {
		sn.RegionID = *body.RegionID
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	d.reapLocked(now)
	for _, other := range d.st.Snapshots {
		if other.OrganizationID == org && other.Name == name {
			return nil, dtErrorf(http.StatusConflict, "Snapshot with name %q already exists for this organization", name)
		}
	}
	switch {
	case body.BuildInfo != nil:
		// Daytona takes the entrypoint from the Dockerfile for builds and
		// ignores the one in the request.
		if body.BuildInfo.DockerfileContent == nil || strings.TrimSpace(*body.BuildInfo.DockerfileContent) == "" {
			return nil, dtErrorf(http.StatusBadRequest, "buildInfo.dockerfileContent must be a string")
		}
		sn.Dockerfile = *body.BuildInfo.DockerfileContent
		sn.ContextHashes = append([]string{}, body.BuildInfo.ContextHashes...)
		sn.Entrypoint = entrypointFromDockerfile(sn.Dockerfile)
		sn.Logs, sn.FailReason = d.planBuildLocked(org, sn)
	case body.ImageName != nil:
		if msg := validateImageName(*body.ImageName); msg != "" {
			return nil, dtErrorf(http.StatusBadRequest, "%s", msg)
		}
		sn.ImageName = *body.ImageName
		// The emulator cannot inspect the image, so an entrypoint not given
		// is the one Daytona uses for images without their own.
		sn.Entrypoint = nonEmpty(body.Entrypoint)
		if sn.Entrypoint == nil {
			sn.Entrypoint = []string{"sleep", "infinity"}
		}
		sn.Logs = []string{"Pulling image " + sn.ImageName, "Pulled image " + sn.ImageName}
		if reason := d.failures.Take(name); reason != "" {
			if reason == dtDefaultFailure {
				reason = "failed to pull image " + sn.ImageName + ": manifest unknown"
			}
			sn.Logs = append(sn.Logs[:1], "ERROR: "+reason)
			sn.FailReason = reason
		}
	default:
		return nil, dtErrorf(http.StatusBadRequest, "Must specify an image name")
	}
	if d.buildTime > 0 {
		sn.Pending = d.buildTime / 4
		sn.Building = d.buildTime - sn.Pending
	}
	d.st.Snapshots[sn.ID] = sn
	return sn.json(now), nil
}

func orDefault(v *int, def int) int {
	if v == nil || *v == 0 {
		return def
	}
	return *v
}

// nonEmpty drops blank entries (as Daytona does for entrypoints) and gives
// nil when nothing is left.
func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

// validateImageName applies Daytona's rules for pulled images: a tag or a
// digest is required and ":latest" is refused.
func validateImageName(name string) string {
	if strings.Contains(name, "@sha256:") {
		img, digest, _ := strings.Cut(name, "@sha256:")
		if img == "" || !sha256HexRE.MatchString(digest) {
			return "Invalid digest format. Must be image@sha256:64_hex_characters"
		}
		return ""
	}
	if !strings.Contains(name, ":") || strings.HasSuffix(strings.TrimSpace(name), ":") {
		return "Image name must include a tag (e.g., ubuntu:22.04) or digest (@sha256:...)"
	}
	if strings.HasSuffix(name, ":latest") {
		return `Images with tag ":latest" are not allowed`
	}
	if !dtNameRE.MatchString(name) {
		return "Invalid image name format. Must be lowercase, may contain digits, dots, dashes, and single slashes between components"
	}
	return ""
}

var (
	entrypointRE = regexp.MustCompile(`ENTRYPOINT\s+(.*)`)
	sha256HexRE  = regexp.MustCompile(`^[a-f0-9]{64}$`)
	uuidRE       = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// entrypointFromDockerfile is Daytona's rule: the first ENTRYPOINT as a JSON
// array, or as a plain string with quotes stripped; ["sleep", "infinity"]
// without one.
func entrypointFromDockerfile(dockerfile string) []string {
	if m := entrypointRE.FindStringSubmatch(dockerfile); m != nil {
		raw := strings.TrimSpace(m[1])
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			return nonEmpty([]string{strings.NewReplacer(`"`, "", `'`, "").Replace(raw)})
		}
		if arr, ok := v.([]any); ok {
			var out []string
			for _, e := range arr {
				if s, ok := e.(string); ok {
					out = append(out, s)
				}
			}
			return nonEmpty(out)
		}
	}
	return []string{"sleep", "infinity"}
}

// dockerInstructions are the Dockerfile instructions BuildKit knows.
var dockerInstructions = map[string]bool{
	"ADD": true, "ARG": true, "CMD": true, "COPY": true, "ENTRYPOINT": true, "ENV": true, "EXPOSE": true,
	"FROM": true, "HEALTHCHECK": true, "LABEL": true, "MAINTAINER": true, "ONBUILD": true, "RUN": true,
	"SHELL": true, "STOPSIGNAL": true, "USER": true, "VOLUME": true, "WORKDIR": true,
}

type dfInstruction struct {
	line int // 1-based line of its first physical line
	text string
}

// parseDockerfile splits a Dockerfile into instructions, joining lines
// continued with a trailing backslash and dropping comments and blanks.
func parseDockerfile(content string) []dfInstruction {
	var out []dfInstruction
	var cur strings.Builder
	start := 0
	for i, raw := range strings.Split(content, "\n") {
		line := strings.TrimRight(raw, "\r")
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if before, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(before)
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(trimmed)
		out = append(out, dfInstruction{line: start, text: strings.TrimSpace(cur.String())})
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, dfInstruction{line: start, text: strings.TrimSpace(cur.String())})
	}
	return out
}

// planBuildLocked decides what a build prints and whether it fails. The
// checks a real build would trip over first are made in the same order:
// Dockerfile syntax, fetching the build contexts, then each instruction
// (COPY/ADD sources must be in a context). The error wording is BuildKit's
// where known and inferred otherwise; Daytona passes it through as the
// snapshot's errorReason.
func (d *Service) planBuildLocked(org string, sn *dtSnapshot) (logs []string, failReason string) {
	fail := func(reason string) ([]string, string) {
		return append(logs, "ERROR: "+reason), reason
	}
	instrs := parseDockerfile(sn.Dockerfile)
	for _, in := range instrs {
		kw, _, _ := strings.Cut(in.text, " ")
		if !dockerInstructions[strings.ToUpper(kw)] {
			return fail(fmt.Sprintf("dockerfile parse error on line %d: unknown instruction: %s", in.line, kw))
		}
	}
	first := -1
	for i, in := range instrs {
		kw, _, _ := strings.Cut(in.text, " ")
		if strings.EqualFold(kw, "FROM") {
			first = i
			break
		}
		if !strings.EqualFold(kw, "ARG") {
			break
		}
	}
	if first < 0 {
		return fail("failed to solve: no build stage in current context")
	}

	// Contexts are fetched from object storage by hash before the build
	// starts: a hash with nothing uploaded under it fails the build
	// (inferred: the SDK always uploads before creating).
	var entries []string
	for _, h := range sn.ContextHashes {
		prefix := org + "/" + h + "/"
		found := false
		for key, o := range d.st.Objects {
			if !strings.HasPrefix(key, prefix) {
				continue
			}
			found = true
			if o.TarErr != "" {
				return fail(fmt.Sprintf("failed to extract build context %s: %s", h, o.TarErr))
			}
			entries = append(entries, o.Entries...)
		}
		if !found {
			return fail(fmt.Sprintf("failed to get build context %s: no object under %s in bucket %s", h, prefix, Bucket))
		}
	}

	reason := d.failures.Take(sn.Name)
	failAt := -1
	if reason != "" {
		// An arranged failure hits the last RUN, where builds really fail.
		failAt = len(instrs) - 1
		for i, in := range instrs {
			if kw, _, _ := strings.Cut(in.text, " "); strings.EqualFold(kw, "RUN") {
				failAt = i
			}
		}
	}
	n := len(instrs)
	for i, in := range instrs {
		logs = append(logs, fmt.Sprintf("#%d [%d/%d] %s", i+1, i+1, n, in.text))
		kw, rest, _ := strings.Cut(in.text, " ")
		if kw = strings.ToUpper(kw); kw == "COPY" || kw == "ADD" {
			if missing := missingSources(kw, rest, entries); missing != "" {
				return fail(fmt.Sprintf("failed to compute cache key: %q not found in the build context", missing))
			}
		}
		if i == failAt {
			if reason == dtDefaultFailure {
				reason = fmt.Sprintf("process \"/bin/sh -c %s\" did not complete successfully: exit code: 1", rest)
			}
			return fail(reason)
		}
	}
	return logs, ""
}

// missingSources returns the first local source of a COPY/ADD that no
// context entry provides, or "". Sources are paths relative to the context
// root (a leading "/" means the root too); a directory is present when any
// entry lies under it; wildcards match entries.
func missingSources(kw, args string, entries []string) string {
	args = strings.TrimSpace(args)
	var fields []string
	if strings.HasPrefix(args, "[") {
		if err := json.Unmarshal([]byte(args), &fields); err != nil {
			return args
		}
	} else {
		fields = strings.Fields(args)
	}
	var srcs []string
	for _, f := range fields {
		if strings.HasPrefix(f, "--from=") {
			return "" // from another stage or image, not the context
		}
		if !strings.HasPrefix(f, "--") {
			srcs = append(srcs, f)
		}
	}
	if len(srcs) < 2 {
		return strings.Join(srcs, " ")
	}
	for _, src := range srcs[:len(srcs)-1] {
		if kw == "ADD" && (strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://")) {
			continue
		}
		want := strings.TrimPrefix(path.Clean("/"+src), "/")
		if !contextHas(entries, want) {
			return src
		}
	}
	return ""
}

func contextHas(entries []string, want string) bool {
	if want == "" || want == "." {
		return len(entries) > 0
	}
	wild := strings.ContainsAny(want, "*?[")
	for _, e := range entries {
		if e == want || strings.HasPrefix(e, want+"/") {
			return true
		}
		if wild {
			if ok, _ := path.Match(want, e); ok {
				return true
			}
		}
	}
	return false
}

func (s *Service) dtGetSnapshot(w http.ResponseWriter, r *http.Request, org string) {
	d := s
	now := time.Now()
	d.mu.Lock()
	reaped := d.reapLocked(now)
	sn := d.lookupLocked(org, r.PathValue("idOrName"))
	var out map[string]any
	removing := false
	if sn != nil {
		out = sn.json(now)
		removing = sn.RemovedAt != nil
		reportedLocked(sn)
	}
	d.mu.Unlock()
	s.dtSaveAfterRead(reaped || removing)
	if sn == nil {
		ref := r.PathValue("idOrName")
		if uuidRE.MatchString(ref) {
			writeDaytonaError(w, r, dtErrorf(http.StatusNotFound, "Snapshot %s not found", ref))
		} else {
			writeDaytonaError(w, r, dtErrorf(http.StatusNotFound, "Snapshot with name %s not found", ref))
		}
		return
	}
	core.WriteJSON(w, http.StatusOK, out)
}

// dtSaveAfterRead persists what a read changed (a completed removal). A
// failure only costs that a restarted emulator repeats the removal, so it
// is logged rather than answered.
func (s *Service) dtSaveAfterRead(changed bool) {
	if !changed {
		return
	}
	if err := s.save(); err != nil && s.logf != nil {
		s.logf("daytona: %v", err)
	}
}

// dtListSnapshots pages like Daytona's GET /snapshots: page from 1, limit
// (Daytona's default 10; the SDK sends 100), sorted by sort/order with nulls
// last and newest first as the tie-break.
func (s *Service) dtListSnapshots(w http.ResponseWriter, r *http.Request, org string) {
	q := r.URL.Query()
	page, limit := dtPageParams(q.Get("page"), q.Get("limit"), 10, 200)
	field := q.Get("sort")
	if field == "" {
		field = "lastUsedAt"
	}
	if field != "name" && field != "state" && field != "lastUsedAt" && field != "createdAt" {
		writeDaytonaError(w, r, dtErrorf(http.StatusBadRequest, "sort must be one of the following values: name, state, lastUsedAt, createdAt"))
		return
	}
	desc := !strings.EqualFold(q.Get("order"), "asc")
	nameFilter := strings.ToLower(q.Get("name"))

	d := s
	now := time.Now()
	d.mu.Lock()
	reaped := d.reapLocked(now)
	var all []*dtSnapshot
	for _, sn := range d.st.Snapshots {
		if sn.OrganizationID == org && strings.Contains(strings.ToLower(sn.Name), nameFilter) {
			all = append(all, sn)
		}
	}
	sortSnapshots(all, field, desc, now)
	total := len(all)
	start := min((page-1)*limit, total)
	pageItems := all[start:min(start+limit, total)]
	items := make([]map[string]any, 0, len(pageItems))
	removing := false
	for _, sn := range pageItems {
		items = append(items, sn.json(now))
		removing = removing || sn.RemovedAt != nil
	}
	reportedLocked(pageItems...)
	d.mu.Unlock()
	s.dtSaveAfterRead(reaped || removing)
	core.WriteJSON(w, http.StatusOK, map[string]any{"items": items, "total": total, "page": page, "totalPages": ceilDiv(total, limit)})
}

func sortSnapshots(all []*dtSnapshot, field string, desc bool, now time.Time) {
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		var c int
		switch field {
		case "name":
			c = strings.Compare(a.Name, b.Name)
		case "state":
			c = strings.Compare(a.state(now), b.state(now))
		case "createdAt":
			c = a.CreatedAt.Compare(b.CreatedAt)
		case "lastUsedAt":
			switch {
			case a.LastUsedAt == nil && b.LastUsedAt == nil:
			case a.LastUsedAt == nil:
				return false // nulls last
			case b.LastUsedAt == nil:
				return true
			default:
				c = a.LastUsedAt.Compare(*b.LastUsedAt)
			}
		}
		if desc {
			c = -c
		}
		if c != 0 {
			return c < 0
		}
		if t := b.CreatedAt.Compare(a.CreatedAt); t != 0 {
			return t < 0
		}
		return a.ID < b.ID
	})
}

// dtPageParams reads page and limit; the SDK sends them as floats ("1",
// "100"), other clients as integers.
func dtPageParams(pageS, limitS string, defLimit, maxLimit int) (page, limit int) {
	page, limit = 1, defLimit
	if v, err := strconv.ParseFloat(pageS, 64); err == nil && v >= 1 {
		page = int(v)
	}
	if v, err := strconv.ParseFloat(limitS, 64); err == nil && v >= 1 {
		limit = min(int(v), maxLimit)
	}
	return page, limit
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// dtDeleteSnapshot starts an asynchronous removal: the snapshot turns
// "removing" and disappears later (see dtSnapshot). Daytona answers 200 with
// no body.
func (s *Service) dtDeleteSnapshot(w http.ResponseWriter, r *http.Request, org string) {
	d := s
	now := time.Now()
	d.mu.Lock()
	d.reapLocked(now)
	sn := d.lookupLocked(org, r.PathValue("id"))
	if sn != nil && sn.RemovedAt == nil {
		removeBy := now.Add(max(d.buildTime, DefaultBuildTime))
		at := now.UTC()
		sn.RemovedAt, sn.RemoveBy = &at, &removeBy
	}
	d.mu.Unlock()
	if sn == nil {
		writeDaytonaError(w, r, dtErrorf(http.StatusNotFound, "Snapshot %s not found", r.PathValue("id")))
		return
	}
	if err := d.save(); err != nil {
		writeDaytonaError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// dtActivateSnapshot reactivates an inactive snapshot, with Daytona's
// refusals for the other states.
func (s *Service) dtActivateSnapshot(w http.ResponseWriter, r *http.Request, org string) {
	d := s
	now := time.Now()
	id := r.PathValue("id")
	d.mu.Lock()
	d.reapLocked(now)
	sn := d.lookupLocked(org, id)
	var err error
	var out map[string]any
	switch {
	case sn == nil:
		err = dtErrorf(http.StatusNotFound, "Snapshot %s not found", id)
	case sn.state(now) == dtActive:
		err = dtErrorf(http.StatusBadRequest, "Snapshot %s is already active", id)
	case sn.state(now) != dtInactive:
		err = dtErrorf(http.StatusBadRequest, "Snapshot %s cannot be activated - it is in %s state", id, sn.state(now))
	default:
		sn.Inactive = false
		at := now.UTC()
		sn.LastUsedAt, sn.UpdatedAt = &at, at
		out = sn.json(now)
	}
	d.mu.Unlock()
	if err == nil {
		err = d.save()
	}
	if err != nil {
		writeDaytonaError(w, r, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, out)
}

// dtSnapshotBuildLogsURL answers where a snapshot's build log streams
// from, as {url}; the Python SDK appends "?follow=true" and sends its API
// headers (the Bearer key) there. Here it is the build-logs route itself,
// under the host the request came to (inferred: Daytona may answer a
// proxy's URL).
func (s *Service) dtSnapshotBuildLogsURL(w http.ResponseWriter, r *http.Request, org string) {
	id := r.PathValue("id")
	s.mu.Lock()
	sn := s.lookupLocked(org, id)
	s.mu.Unlock()
	if sn == nil {
		writeDaytonaError(w, r, dtErrorf(http.StatusNotFound, "Snapshot %s not found", id))
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	core.WriteJSON(w, http.StatusOK, map[string]string{"url": scheme + "://" + r.Host + daytonaAPIPrefix + "/snapshots/" + sn.ID + "/build-logs"})
}

// dtSnapshotBuildLogs serves the plain-text build log. With follow=true it
// streams lines as the build prints them and ends when the build ends (or
// the snapshot goes away); without, it answers what has been printed. Like
// Daytona, a pending build holds the request until a runner (here: the
// building phase) starts, and a snapshot without build info has no logs.
func (s *Service) dtSnapshotBuildLogs(w http.ResponseWriter, r *http.Request, org string) {
	d := s
	id := r.PathValue("id")
	follow, _ := strconv.ParseBool(r.URL.Query().Get("follow"))
	d.mu.Lock()
	sn := d.lookupLocked(org, id)
	hasBuild := sn != nil && sn.Dockerfile != ""
	d.mu.Unlock()
	switch {
	case sn == nil:
		writeDaytonaError(w, r, dtErrorf(http.StatusNotFound, "Snapshot %s not found", id))
		return
	case !hasBuild:
		writeDaytonaError(w, r, dtErrorf(http.StatusNotFound, "Snapshot with ID %s has no build info", id))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	sent := 0
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		now := time.Now()
		d.mu.Lock()
		cur, still := d.st.Snapshots[sn.ID]
		var lines []string
		done := true
		if still {
			lines = cur.Logs[sent:cur.visibleLogs(now)]
			done = cur.buildDone(now) || cur.RemovedAt != nil
		}
		d.mu.Unlock()
		if len(lines) > 0 {
			var buf bytes.Buffer
			for _, l := range lines {
				buf.WriteString(l)
				buf.WriteByte('\n')
			}
			if _, err := w.Write(buf.Bytes()); err != nil {
				return
			}
			_ = rc.Flush()
			sent += len(lines)
		}
		if done || !follow {
			return
		}
		select {
		case <-tick.C:
		case <-r.Context().Done():
			return
		}
	}
}
