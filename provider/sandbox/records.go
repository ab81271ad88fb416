package sandbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// The installation's own D1 database is its registry of what it created at
// the sandbox provider (the contract's sandbox.records): teardown deletes
// exactly what is recorded there, so another installation sharing the Modal
// workspace or Daytona organization is never touched.

// sessionLabel names the session a sandbox belongs to. Upstream's control
// plane puts openinspect_framework, openinspect_session_id,
// openinspect_expected_sandbox_id and openinspect_repo on every session
// sandbox: as E2B metadata, Vercel tags, Daytona labels and OpenComputer
// metadata (packages/control-plane/src/sandbox/providers/ at the pin).
const sessionLabel = "openinspect_session_id"

// recordedImages are the provider image IDs the installation recorded for
// provider ("modal", "daytona"). No database means nothing is known.
func recordedImages(ctx context.Context, databaseID, provider string) ([]string, error) {
	r, err := records()
	if err != nil || databaseID == "" {
		return nil, err
	}
	return queryColumn(ctx, databaseID, fmt.Sprintf("SELECT %s AS v FROM %s WHERE %s = ? AND %s IS NOT NULL",
		r.ImageIDColumn, r.ImagesTable, r.ImageProviderColumn, r.ImageIDColumn), provider)
}

// recordedSessions are the session IDs the installation recorded.
func recordedSessions(ctx context.Context, databaseID string) ([]string, error) {
	r, err := records()
	if err != nil || databaseID == "" {
		return nil, err
	}
	return queryColumn(ctx, databaseID, fmt.Sprintf("SELECT %s AS v FROM %s", r.SessionIDColumn, r.SessionsTable))
}

func records() (upstream.SandboxRecords, error) {
	c, err := upstream.Load()
	if err != nil {
		return upstream.SandboxRecords{}, err
	}
	return c.Sandbox.Records, nil
}

// queryColumn reads the column v of a query's rows. A table the schema does
// not have yet (migrations not applied) holds no records.
func queryColumn(ctx context.Context, databaseID, sql string, params ...any) ([]string, error) {
	client, err := config.Cloudflare(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the installation's records in D1 database %s: %w", databaseID, err)
	}
	res, err := client.Query(ctx, databaseID, sql, params...)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the installation's records in D1 database %s: %w", databaseID, err)
	}
	var out []string
	for _, r := range res {
		for _, row := range r.Rows {
			if v, ok := row["v"].(string); ok && v != "" {
				out = append(out, v)
			}
		}
	}
	return out, nil
}
