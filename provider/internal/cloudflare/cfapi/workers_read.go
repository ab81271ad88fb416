package cfapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	cf "github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/workers"
)

// Reads of one script by its name. Each costs one request whatever else the
// account holds: none of them lists the account's scripts (GET
// workers/scripts returns every script of every installation sharing the
// account, so a read through it grows with the account).

// envelope is the v4 answer around a result, for the routes cloudflare-go
// has no method for.
type envelope struct {
	Result json.RawMessage `json:"result"`
}

// getResult GETs path (relative to the API base) and decodes the
// envelope's result into out.
func (c *Client) getResult(ctx context.Context, op, path string, out any) error {
	var env envelope
	if err := wrap(op, c.api.Get(ctx, path, nil, &env)); err != nil {
		return err
	}
	if err := json.Unmarshal(env.Result, out); err != nil {
		return fmt.Errorf("%s: decoding the answer: %w", op, err)
	}
	return nil
}

// GetScript returns the script with this name, or ok=false, with one
// request: the script's service (GET workers/services/{name}), which is the
// per-script read that reports the etag (the settings do not).
func (c *Client) GetScript(ctx context.Context, name string) (Script, bool, error) {
	var svc struct {
		DefaultEnvironment struct {
			Script struct {
				ID         string    `json:"id"`
				Etag       string    `json:"etag"`
				ModifiedOn time.Time `json:"modified_on"`
			} `json:"script"`
		} `json:"default_environment"`
	}
	err := c.getResult(ctx, fmt.Sprintf("read worker %q", name),
		fmt.Sprintf("accounts/%s/workers/services/%s", c.accountID, url.PathEscape(name)), &svc)
	if IsNotFound(err) {
		return Script{}, false, nil
	}
	if err != nil {
		return Script{}, false, err
	}
	s := svc.DefaultEnvironment.Script
	return Script{Name: name, Etag: s.Etag, ModifiedOn: s.ModifiedOn}, true, nil
}

// GetSchedules returns a script's cron triggers.
func (c *Client) GetSchedules(ctx context.Context, name string) ([]string, error) {
	res, err := c.api.Workers.Scripts.Schedules.Get(ctx, name, workers.ScriptScheduleGetParams{AccountID: cf.F(c.accountID)})
	if err != nil {
		return nil, wrap(fmt.Sprintf("read cron triggers of worker %q", name), err)
	}
	out := make([]string, 0, len(res.Schedules))
	for _, s := range res.Schedules {
		out = append(out, s.Cron)
	}
	return out, nil
}

// GetWorkersDev reports whether the script is served on workers.dev.
func (c *Client) GetWorkersDev(ctx context.Context, name string) (bool, error) {
	res, err := c.api.Workers.Scripts.Subdomain.Get(ctx, name, workers.ScriptSubdomainGetParams{AccountID: cf.F(c.accountID)})
	if err != nil {
		return false, wrap(fmt.Sprintf("read workers.dev setting of worker %q", name), err)
	}
	return res.Enabled, nil
}
