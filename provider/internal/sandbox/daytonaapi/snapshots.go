package daytonaapi

import (
	"context"
	"errors"
	"fmt"
	"regexp"
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

// ClaimName makes name ready for a build by another client (upstream's
// builder, which creates the snapshot itself) and reports what is there:
// an active snapshot of that name is returned with true (an inactive one is
// reactivated first), and nothing needs building; otherwise the name is
// made free and false is returned: a build in progress is waited for (and
// returned when it ends active), a failed one (build_failed, error) is
// deleted, one being removed is waited out. progress (may be nil) receives
// a line for each of these.
func (c *Client) ClaimName(ctx context.Context, name string, progress func(line string)) (Snapshot, bool, error) {
	op := fmt.Sprintf("preparing snapshot %q", name)
	if progress == nil {
		progress = func(string) {}
	}
	if err := validSnapshotName(name); err != nil {
		return Snapshot{}, false, c.fail(op, err)
	}
	// A few rounds cover a build in progress failing, or another client
	// creating the snapshot meanwhile.
	for round := 0; round < 3; round++ {
		cur, found, err := c.Snapshot(ctx, name)
		if err != nil {
			return Snapshot{}, false, err
		}
		switch {
		case !found:
			return Snapshot{}, false, nil
		case cur.State == StateActive:
			progress(fmt.Sprintf("Snapshot %s is already active", name))
			return cur, true, nil
		case cur.State == StateInactive:
			progress(fmt.Sprintf("Reactivating inactive snapshot %s", name))
			snap, err := c.activate(ctx, op, cur)
			return snap, err == nil, err
		case inProgress(cur.State):
			progress(fmt.Sprintf("Waiting for the build of snapshot %s already in progress (%s)", name, cur.State))
			if _, err := c.waitBuild(ctx, op, cur.ID, cur.State, progress); err != nil {
				return Snapshot{}, false, err
			}
		case cur.State == StateBuildFailed || cur.State == StateError:
			progress(fmt.Sprintf("Deleting snapshot %s, whose last build failed: %s", name, cur.ErrorReason))
			if err := c.DeleteSnapshot(ctx, name); err != nil {
				return Snapshot{}, false, err
			}
		case cur.State == StateRemoving:
			progress(fmt.Sprintf("Waiting for snapshot %s to finish being removed", name))
			if err := c.waitGone(ctx, op, cur.ID); err != nil {
				return Snapshot{}, false, err
			}
		default:
			return Snapshot{}, false, c.fail(op, fmt.Errorf("snapshot exists in unexpected state %q", cur.State))
		}
	}
	return Snapshot{}, false, c.fail(op, errors.New("the snapshot keeps changing state; another client may be building it"))
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

// CheckKey makes the cheapest read Daytona answers only for an API key it
// accepts: the first page, of one, of the organization's snapshots. Refused
// tells Daytona's refusal of the key from any other failure.
func (c *Client) CheckKey(ctx context.Context) error {
	err := c.retry(ctx, func() error {
		page, limit := 1, 1
		_, err := c.sdk.Snapshot.List(ctx, &page, &limit)
		return err
	})
	if err != nil {
		return c.fail("reading the organization's snapshots", err)
	}
	return nil
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

// snapshotNameRE is Daytona's rule for snapshot names.
var snapshotNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.\-:]+(/[a-zA-Z0-9_.\-:]+)*(@sha256:[a-f0-9]{64})?$`)

// validSnapshotName applies Daytona's name rule before any network call.
func validSnapshotName(name string) error {
	if !snapshotNameRE.MatchString(name) {
		return errors.New("invalid snapshot name: may contain letters, digits, dots, colons, dashes, underscores and single slashes")
	}
	return nil
}
