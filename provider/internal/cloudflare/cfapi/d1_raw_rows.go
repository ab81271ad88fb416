package cfapi

import (
	"context"
	"fmt"

	cf "github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/d1"
)

// QueryRaw runs one SQL statement with string params through D1's /raw
// endpoint, which answers rows as arrays in column order; they are returned
// as maps like Query's. The account's ownership registry uses it, so its
// calls are a route of their own in the emulator's counts and faults, apart
// from an installation's own database traffic.
func (c *Client) QueryRaw(ctx context.Context, databaseID, sql string, params ...string) ([]StatementResult, error) {
	query := d1.DatabaseRawParams{AccountID: cf.F(c.accountID), Sql: cf.F(sql)}
	if len(params) > 0 {
		query.Params = cf.F(params)
	}
	page, err := c.api.D1.Database.Raw(ctx, databaseID, query)
	if err != nil {
		return nil, wrap(fmt.Sprintf("query D1 database %s", databaseID), err)
	}
	out := make([]StatementResult, 0, len(page.Result))
	for _, r := range page.Result {
		res := StatementResult{Changes: int64(r.Meta.Changes)}
		for _, row := range r.Results.Rows {
			if len(row) != len(r.Results.Columns) {
				return nil, fmt.Errorf("query D1 database %s: a row of %d values for %d columns", databaseID, len(row), len(r.Results.Columns))
			}
			obj := make(map[string]any, len(row))
			for i, col := range r.Results.Columns {
				obj[col] = row[i]
			}
			res.Rows = append(res.Rows, obj)
		}
		out = append(out, res)
	}
	return out, nil
}
