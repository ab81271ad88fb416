package daytonaapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiclient "github.com/daytonaio/daytona/libs/api-client-go"
)

// Sandbox is what the provider needs of a Daytona sandbox.
type Sandbox struct {
	ID     string
	Labels map[string]string
	State  string
}

// sandboxPageSize is how many sandboxes one list call asks for (the
// generated client's default).
const sandboxPageSize = 100

// Sandboxes lists the organization's sandboxes carrying every one of labels,
// all pages. At least one label is required: the list decides what an
// installation deletes, and an empty filter would match every sandbox.
//
// It goes through the generated client because the SDK's List drops the
// labels from what it returns.
func (c *Client) Sandboxes(ctx context.Context, labels map[string]string) ([]Sandbox, error) {
	keys := slices.Sorted(maps.Keys(labels))
	op := fmt.Sprintf("listing sandboxes labelled %s", strings.Join(keys, ", "))
	if len(labels) == 0 {
		return nil, c.fail("listing sandboxes", errors.New("at least one label is required"))
	}
	filter, err := json.Marshal(labels)
	if err != nil {
		return nil, c.fail(op, err)
	}
	var out []Sandbox
	for page := 1; ; page++ {
		var res *apiclient.PaginatedSandboxes
		err := c.retry(ctx, func() error {
			r, resp, err := c.api.SandboxAPI.ListSandboxesPaginated(c.authCtx(ctx)).
				Labels(string(filter)).Page(float32(page)).Limit(sandboxPageSize).Execute()
			res = r
			return apiError(err, resp)
		})
		if err != nil {
			return nil, c.fail(fmt.Sprintf("%s (page %d)", op, page), err)
		}
		for _, sb := range res.GetItems() {
			out = append(out, Sandbox{ID: sb.GetId(), Labels: sb.GetLabels(), State: string(sb.GetState())})
		}
		if float32(page) >= res.GetTotalPages() || len(res.GetItems()) == 0 {
			return out, nil
		}
	}
}

// DeleteSandbox deletes a sandbox by ID. A missing sandbox is not an error.
func (c *Client) DeleteSandbox(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("daytona: deleting sandbox: empty ID")
	}
	err := c.retry(ctx, func() error {
		_, resp, err := c.api.SandboxAPI.DeleteSandbox(c.authCtx(ctx), id).Execute()
		return apiError(err, resp)
	})
	if err != nil && !isNotFound(err) {
		return c.fail(fmt.Sprintf("deleting sandbox %s", id), err)
	}
	return nil
}
