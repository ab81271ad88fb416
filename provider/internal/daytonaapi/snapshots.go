package daytonaapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"
)

// Snapshot states, as Daytona spells them.
const (
	StatePending     = "pending"
	StateBuilding    = "building"
	StatePulling     = "pulling"
	StateActive      = "active"
	StateInactive    = "inactive"
	StateError       = "error"
	StateBuildFailed = "build_failed"
	StateRemoving    = "removing"
)

// Snapshot is what the provider needs of a Daytona snapshot.
type Snapshot struct {
	ID          string
	Name        string
	State       string
	ImageName   string // set for snapshots pulled from an image, not built
	ErrorReason string
	Entrypoint  []string
	CPU         int
	GPU         int
	Memory      int // GB
	Disk        int // GB
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func fromSDK(s *types.Snapshot) Snapshot {
	out := Snapshot{ID: s.ID, Name: s.Name, State: s.State, ImageName: s.ImageName, Entrypoint: s.Entrypoint,
		CPU: s.CPU, GPU: s.GPU, Memory: s.Memory, Disk: s.Disk, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
	if s.ErrorReason != nil {
		out.ErrorReason = *s.ErrorReason
	}
	return out
}

// inProgress reports whether a build or pull is still running.
func inProgress(state string) bool {
	return state == StatePending || state == StateBuilding || state == StatePulling
}

// BuildError is a build that ran and failed: Daytona reports the snapshot in
// State with Reason (the build's own error text).
type BuildError struct {
	Name   string
	State  string
	Reason string
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("daytona: building snapshot %q: %s (%s)", e.Name, e.Reason, e.State)
}

// BuildSnapshot builds the snapshot name from m and returns it once active.
// progress (may be nil) receives the SDK's log lines as they come: state
// changes and the build's own output, and notes on what BuildSnapshot does.
//
// It is safe to call again after a crash or a timeout: an active snapshot of
// that name is returned as is, an inactive one is reactivated, a build in
// progress is waited for, and a failed one (build_failed, error) is deleted
// and rebuilt. It honours ctx's deadline; a build interrupted by it carries
// on at Daytona and is picked up by the next call.
func (c *Client) BuildSnapshot(ctx context.Context, name string, m Manifest, progress func(line string)) (Snapshot, error) {
	op := fmt.Sprintf("building snapshot %q", name)
	if progress == nil {
		progress = func(string) {}
	}
	if err := validSnapshotName(name); err != nil {
		return Snapshot{}, c.fail(op, err)
	}
	localDir := ""
	if m.RuntimeDir != "" {
		abs, err := filepath.Abs(m.RuntimeDir)
		if err != nil {
			return Snapshot{}, c.fail(op, err)
		}
		// The SDK writes "COPY <local path> <remote path>" unquoted.
		if strings.ContainsAny(abs, " \t\r\n") {
			return Snapshot{}, c.fail(op, fmt.Errorf("runtime directory %q contains whitespace, which the SDK's COPY cannot express", abs))
		}
		localDir = abs
	}
	img, err := m.image(localDir)
	if err != nil {
		return Snapshot{}, c.fail(op, err)
	}

	params := &types.CreateSnapshotParams{Name: name, Image: img, Entrypoint: m.Entrypoint}
	if m.CPU > 0 || m.Memory > 0 || m.Disk > 0 {
		params.Resources = &types.Resources{CPU: m.CPU, Memory: m.Memory, Disk: m.Disk}
	}
	// What exists under the name decides; a few rounds cover a failed build
	// being deleted, a build in progress failing, or another client
	// creating the snapshot between the look-up and the create (409).
	var created *types.Snapshot
	var logs <-chan string
	for round := 0; created == nil; round++ {
		if round == 3 {
			return Snapshot{}, c.fail(op, errors.New("the snapshot keeps changing state; another client may be building it"))
		}
		cur, found, err := c.Snapshot(ctx, name)
		if err != nil {
			return Snapshot{}, err
		}
		switch {
		case !found:
			created, logs, err = c.sdk.Snapshot.Create(ctx, params)
			if apiStatus(err) == http.StatusConflict {
				progress(fmt.Sprintf("Snapshot %s was created by someone else meanwhile", name))
				continue
			}
			if err != nil {
				if ctx.Err() != nil {
					err = ctx.Err()
				}
				return Snapshot{}, c.fail(op, err)
			}
		case cur.State == StateActive:
			progress(fmt.Sprintf("Snapshot %s is already active", name))
			return cur, nil
		case cur.State == StateInactive:
			progress(fmt.Sprintf("Reactivating inactive snapshot %s", name))
			return c.activate(ctx, op, cur)
		case inProgress(cur.State):
			progress(fmt.Sprintf("Waiting for the build of snapshot %s already in progress (%s)", name, cur.State))
			if _, err := c.waitBuild(ctx, op, cur.ID, cur.State, progress); err != nil {
				return Snapshot{}, err
			}
		case cur.State == StateBuildFailed || cur.State == StateError:
			progress(fmt.Sprintf("Deleting snapshot %s, whose last build failed: %s", name, cur.ErrorReason))
			if err := c.DeleteSnapshot(ctx, name); err != nil {
				return Snapshot{}, err
			}
		case cur.State == StateRemoving:
			progress(fmt.Sprintf("Waiting for snapshot %s to finish being removed", name))
			if err := c.waitGone(ctx, op, cur.ID); err != nil {
				return Snapshot{}, err
			}
		default:
			return Snapshot{}, c.fail(op, fmt.Errorf("snapshot exists in unexpected state %q", cur.State))
		}
	}

	// The SDK closes the channel when the build ends, fails or ctx ends;
	// a failure arrives only as an "Error: ..." line.
	errLine := ""
	for line := range logs {
		if after, ok := strings.CutPrefix(line, "Error: "); ok {
			errLine = after
		}
		progress(line)
	}
	if ctx.Err() != nil {
		return Snapshot{}, c.fail(op, ctx.Err())
	}
	// The SDK's view can end early (its log stream has a 60 s client
	// timeout; one failed poll ends its watch), so Daytona's state decides.
	final, err := c.waitBuild(ctx, op, created.ID, StatePending, func(string) {})
	if err != nil {
		return Snapshot{}, err
	}
	if final.State == StateActive {
		return final, nil
	}
	reason := final.ErrorReason
	if reason == "" {
		reason = errLine
	}
	if reason == "" {
		reason = "the build ended without a reason"
	}
	return Snapshot{}, redact(&BuildError{Name: name, State: final.State, Reason: reason}, c.apiKey)
}

// waitBuild polls the snapshot id until its build ends, reporting state
// changes, and returns it in its final state.
func (c *Client) waitBuild(ctx context.Context, op, id, last string, progress func(string)) (Snapshot, error) {
	for {
		cur, found, err := c.snapshot(ctx, op, id)
		if err != nil {
			return Snapshot{}, err
		}
		if !found {
			return Snapshot{}, c.fail(op, errors.New("the snapshot disappeared while building"))
		}
		if cur.State != last {
			progress(fmt.Sprintf("Snapshot %s is %s", cur.Name, cur.State))
			last = cur.State
		}
		if !inProgress(cur.State) {
			return cur, nil
		}
		if err := sleep(ctx, c.pollEvery); err != nil {
			return Snapshot{}, c.fail(op, err)
		}
	}
}

// activate reactivates an inactive snapshot through the generated client
// (the SDK has no call for it).
func (c *Client) activate(ctx context.Context, op string, s Snapshot) (Snapshot, error) {
	err := c.retry(ctx, func() error {
		_, resp, err := c.api.SnapshotsAPI.ActivateSnapshot(c.authCtx(ctx), s.ID).Execute()
		return apiError(err, resp)
	})
	if err != nil {
		return Snapshot{}, c.fail(op+": reactivating", err)
	}
	cur, found, err := c.snapshot(ctx, op, s.ID)
	if err != nil {
		return Snapshot{}, err
	}
	if !found || cur.State != StateActive {
		return Snapshot{}, c.fail(op, fmt.Errorf("snapshot not active after reactivation (%s)", cur.State))
	}
	return cur, nil
}

// Snapshot returns the snapshot called name (or with that ID). A missing
// snapshot is (Snapshot{}, false, nil).
func (c *Client) Snapshot(ctx context.Context, name string) (Snapshot, bool, error) {
	return c.snapshot(ctx, fmt.Sprintf("reading snapshot %q", name), name)
}

func (c *Client) snapshot(ctx context.Context, op, idOrName string) (Snapshot, bool, error) {
	var got *types.Snapshot
	err := c.retry(ctx, func() error {
		var err error
		got, err = c.sdk.Snapshot.Get(ctx, idOrName)
		return err
	})
	switch {
	case isNotFound(err):
		return Snapshot{}, false, nil
	case err != nil:
		return Snapshot{}, false, c.fail(op, err)
	}
	return fromSDK(got), true, nil
}

// snapshotPageSize is how many snapshots one list call asks for.
const snapshotPageSize = 100

// Snapshots lists every snapshot of the organization, all pages.
func (c *Client) Snapshots(ctx context.Context) ([]Snapshot, error) {
	var out []Snapshot
	for page := 1; ; page++ {
		var res *types.PaginatedSnapshots
		err := c.retry(ctx, func() error {
			p, limit := page, snapshotPageSize
			var err error
			res, err = c.sdk.Snapshot.List(ctx, &p, &limit)
			return err
		})
		if err != nil {
			return nil, c.fail(fmt.Sprintf("listing snapshots (page %d)", page), err)
		}
		for _, s := range res.Items {
			out = append(out, fromSDK(s))
		}
		if page >= res.TotalPages || len(res.Items) == 0 {
			return out, nil
		}
	}
}

// DeleteSnapshot deletes the snapshot called name and waits until Daytona
// has removed it (deletion is asynchronous). A missing snapshot is not an
// error.
func (c *Client) DeleteSnapshot(ctx context.Context, name string) error {
	op := fmt.Sprintf("deleting snapshot %q", name)
	cur, found, err := c.snapshot(ctx, op, name)
	if err != nil || !found {
		return err
	}
	if cur.State != StateRemoving {
		err := c.retry(ctx, func() error {
			return c.sdk.Snapshot.Delete(ctx, &types.Snapshot{ID: cur.ID, Name: cur.Name})
		})
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return c.fail(op, err)
		}
	}
	return c.waitGone(ctx, op, cur.ID)
}

// waitGone polls by ID (a new snapshot may take the name meanwhile) until
// the snapshot is gone.
func (c *Client) waitGone(ctx context.Context, op, id string) error {
	for {
		_, found, err := c.snapshot(ctx, op, id)
		if err != nil || !found {
			return err
		}
		if err := sleep(ctx, c.pollEvery); err != nil {
			return c.fail(op+": waiting for removal", err)
		}
	}
}
