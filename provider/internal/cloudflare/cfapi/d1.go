package cfapi

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	cf "github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/d1"
	"github.com/cloudflare/cloudflare-go/v4/option"
)

// Database is a D1 database as the provider records it.
type Database struct {
	ID        string
	Name      string
	CreatedAt time.Time
	Version   string
	NumTables int
	FileSize  int64
}

func databaseFrom(db *d1.D1) Database {
	return Database{
		ID:        db.UUID,
		Name:      db.Name,
		CreatedAt: db.CreatedAt,
		Version:   db.Version,
		NumTables: int(db.NumTables),
		FileSize:  int64(db.FileSize),
	}
}

// CreateDatabase creates a D1 database. locationHint may be empty.
func (c *Client) CreateDatabase(ctx context.Context, name, locationHint string) (Database, error) {
	params := d1.DatabaseNewParams{AccountID: cf.F(c.accountID), Name: cf.F(name)}
	if locationHint != "" {
		params.PrimaryLocationHint = cf.F(d1.DatabaseNewParamsPrimaryLocationHint(locationHint))
	}
	db, err := c.api.D1.Database.New(ctx, params)
	if err != nil {
		return Database{}, wrap(fmt.Sprintf("create D1 database %q", name), err)
	}
	return databaseFrom(db), nil
}

// FindDatabase returns the database with exactly this name, or ok=false.
func (c *Client) FindDatabase(ctx context.Context, name string) (db Database, ok bool, err error) {
	pager := c.api.D1.Database.ListAutoPaging(ctx, d1.DatabaseListParams{
		AccountID: cf.F(c.accountID),
		Name:      cf.F(name),
	})
	// The name filter is a search, not an exact match.
	item, ok, err := findListed(pager, func(db d1.DatabaseListResponse) bool { return db.Name == name },
		fmt.Sprintf("list D1 databases named %q", name))
	if !ok {
		return Database{}, false, err
	}
	return Database{ID: item.UUID, Name: item.Name, CreatedAt: item.CreatedAt, Version: item.Version}, true, nil
}

// GetDatabase reads a database by ID. A missing database gives an error for
// which IsNotFound is true.
func (c *Client) GetDatabase(ctx context.Context, id string) (Database, error) {
	db, err := c.api.D1.Database.Get(ctx, id, d1.DatabaseGetParams{AccountID: cf.F(c.accountID)})
	if err != nil {
		return Database{}, wrap(fmt.Sprintf("read D1 database %s", id), err)
	}
	return databaseFrom(db), nil
}

// DeleteDatabase deletes a database by ID. Deleting a database that is
// already gone succeeds, so an interrupted destroy can be repeated.
func (c *Client) DeleteDatabase(ctx context.Context, id string) error {
	_, err := c.api.D1.Database.Delete(ctx, id, d1.DatabaseDeleteParams{AccountID: cf.F(c.accountID)})
	if err = wrap(fmt.Sprintf("delete D1 database %s", id), err); err != nil && !IsNotFound(err) {
		return err
	}
	return nil
}

// StatementResult is the outcome of one statement of a D1 query.
type StatementResult struct {
	Rows    []map[string]any
	Changes int64
}

// Query runs sql (one or more statements, executed by D1 as one unit) with
// positional params. Params may be strings, numbers or nil; the SDK's typed
// field only takes strings, so the JSON body is patched instead.
func (c *Client) Query(ctx context.Context, databaseID, sql string, params ...any) ([]StatementResult, error) {
	opts := []option.RequestOption{}
	if len(params) > 0 {
		opts = append(opts, option.WithJSONSet("params", params))
	}
	page, err := c.api.D1.Database.Query(ctx, databaseID, d1.DatabaseQueryParams{
		AccountID: cf.F(c.accountID),
		Sql:       cf.F(sql),
	}, opts...)
	if err != nil {
		return nil, wrap(fmt.Sprintf("query D1 database %s", databaseID), err)
	}
	out := make([]StatementResult, 0, len(page.Result))
	for _, r := range page.Result {
		res := StatementResult{Changes: int64(r.Meta.Changes)}
		for _, row := range r.Results {
			obj, ok := row.(map[string]any)
			if !ok {
				raw, _ := json.Marshal(row)
				return nil, fmt.Errorf("query D1 database %s: unexpected row %s", databaseID, raw)
			}
			res.Rows = append(res.Rows, obj)
		}
		out = append(out, res)
	}
	return out, nil
}
