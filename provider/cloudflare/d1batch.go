package cloudflare

import (
	"context"
	"fmt"
	"slices"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
)

// How pending files are packed into D1 /query requests, from what
// Cloudflare documents:
//
//   - https://developers.cloudflare.com/api/resources/d1/subresources/database/methods/query
//     The body's `sql` "Supports multiple statements, joined by semicolons,
//     which will be executed as a batch."
//   - https://developers.cloudflare.com/d1/worker-api/d1-database/#batch
//     "Batched statements are SQL transactions. If a statement in the
//     sequence fails, then an error is returned for that specific statement,
//     and it aborts or rolls back the entire sequence."
//   - https://developers.cloudflare.com/d1/platform/limits/
//     "Maximum SQL statement length: 100,000 bytes (100 KB)", "Maximum bound
//     parameters per query: 100", "Maximum SQL query duration: 30 seconds".
//
// So one request holding several files, each followed by its ledger row, is
// all-or-nothing. The length limit is per statement, but D1 does not say how
// it counts a multi-statement body, so the default budget holds the whole
// request's SQL to it; the ledger rows are quoted literals, so no parameter
// is bound and the parameter limit never applies. Guessing a limit wrong
// costs calls, never correctness: a batch D1 refuses (too long, too slow,
// or a failing file) is retried one file per call.
const (
	// d1MaxStatementBytes is D1's documented statement length limit, the
	// default byte budget of one request.
	d1MaxStatementBytes = 100_000
)

// ledgerSelect reads the ledger; the last batch of a run ends with it, so
// the ledger after the run arrives with the run's last request.
const ledgerSelect = "SELECT version, name, applied_at FROM _schema_migrations;"

// migrationBudget bounds one request.
type migrationBudget struct {
	maxBytes int // the request's SQL, in bytes
	maxFiles int // files per request; 0 is no limit beyond maxBytes
}

// budget is the batching the inputs ask for, with D1's limit as the default.
func (a D1MigrationsArgs) budget() migrationBudget {
	b := migrationBudget{maxBytes: d1MaxStatementBytes}
	if a.MaxBatchBytes != nil {
		b.maxBytes = *a.MaxBatchBytes
	}
	if a.MaxFilesPerBatch != nil {
		b.maxFiles = *a.MaxFilesPerBatch
	}
	return b
}

// budgetFailures refuses budgets that cannot be met by any request.
func (a D1MigrationsArgs) budgetFailures() []p.CheckFailure {
	var out []p.CheckFailure
	if a.MaxBatchBytes != nil && *a.MaxBatchBytes < 1 {
		out = append(out, p.CheckFailure{Property: "maxBatchBytes",
			Reason: fmt.Sprintf("must be at least 1 (bytes of SQL per request), not %d", *a.MaxBatchBytes)})
	}
	if a.MaxFilesPerBatch != nil && *a.MaxFilesPerBatch < 1 {
		out = append(out, p.CheckFailure{Property: "maxFilesPerBatch",
			Reason: fmt.Sprintf("must be at least 1 (1 sends each file in its own request), not %d", *a.MaxFilesPerBatch)})
	}
	return out
}

// packBatches splits files, in order, into requests within the budget. A
// file larger than the budget on its own goes alone, as it would without
// batching. Every batch reserves room for the closing ledger read.
func packBatches(files []migrationFile, b migrationBudget) [][]migrationFile {
	var batches [][]migrationFile
	var current []migrationFile
	size := len(ledgerSelect)
	for _, f := range files {
		n := len(withLedgerInsert(f)) + 1 // and the newline joining it
		full := b.maxFiles > 0 && len(current) >= b.maxFiles
		if len(current) > 0 && (full || size+n > b.maxBytes) {
			batches = append(batches, current)
			current, size = nil, len(ledgerSelect)
		}
		current = append(current, f)
		size += n
	}
	if len(current) > 0 {
		batches = append(batches, current)
	}
	return batches
}

// batchSQL is one request: each file followed by its ledger row, then, when
// readBack, the ledger read.
func batchSQL(files []migrationFile, readBack bool) string {
	var sb strings.Builder
	for _, f := range files {
		sb.WriteString(withLedgerInsert(f))
		sb.WriteByte('\n')
	}
	if readBack {
		sb.WriteString(ledgerSelect)
	}
	return sb.String()
}

// ensureLedger creates the ledger if it is missing and reads it, in one
// request.
func ensureLedger(ctx context.Context, client *cfapi.Client, databaseID string) ([]AppliedMigration, error) {
	results, err := client.Query(ctx, databaseID, ledgerDDL+"\n"+ledgerSelect)
	if err != nil {
		return nil, fmt.Errorf("creating and reading the migration ledger: %w", err)
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("creating and reading the migration ledger: D1 returned no result for the ledger read")
	}
	return ledgerRows(results[len(results)-1]), nil
}

// applyPending applies pending (in order) in as few requests as the budget
// allows. It returns the hashes of the files it applied and the ledger as
// the last request left it, or nil when that ledger was not read (a run
// that ended in a failure). A failing batch was rolled back whole by D1; its
// files are then applied one per request, so the error names the failing
// file and the files before it are applied and recorded once.
func applyPending(ctx context.Context, client *cfapi.Client, databaseID string, pending []migrationFile,
	budget migrationBudget) (map[string]string, []AppliedMigration, error) {
	log := p.GetLogger(ctx)
	applied := map[string]string{}
	batches := packBatches(pending, budget)
	for i, batch := range batches {
		last := i == len(batches)-1
		log.Infof("applying %s", describeBatch(batch))
		results, err := client.Query(ctx, databaseID, batchSQL(batch, last))
		if err == nil {
			for _, f := range batch {
				applied[f.Version] = f.Hash
			}
			if last && len(results) > 0 {
				return applied, ledgerRows(results[len(results)-1]), nil
			}
			continue
		}
		if len(batch) == 1 {
			return applied, nil, fileFailed(batch[0], err)
		}
		log.Infof("the request with %d migrations failed and D1 rolled it back whole (%v); applying them one per request "+
			"to find the failing file", len(batch), err)
		if err := applyOneByOne(ctx, client, databaseID, batch, applied); err != nil {
			return applied, nil, err
		}
	}
	return applied, nil, nil
}

// applyOneByOne applies batch's files one per request, skipping those the
// ledger already records: a request whose answer was lost may still have
// committed, and a file must not run twice.
func applyOneByOne(ctx context.Context, client *cfapi.Client, databaseID string, batch []migrationFile, applied map[string]string) error {
	ledger, err := readLedger(ctx, client, databaseID)
	if err != nil {
		return err
	}
	todo := unrecorded(batch, ledger)
	for _, f := range batch {
		if !slices.ContainsFunc(todo, func(t migrationFile) bool { return t.Version == f.Version }) {
			applied[f.Version] = f.Hash // the lost answer's request committed it
		}
	}
	for _, f := range todo {
		p.GetLogger(ctx).Infof("applying migration %s", f.Name)
		if _, err := client.Query(ctx, databaseID, withLedgerInsert(f)); err != nil {
			return fileFailed(f, err)
		}
		applied[f.Version] = f.Hash
	}
	return nil
}

func fileFailed(f migrationFile, err error) error {
	return fmt.Errorf("migration %s failed and was rolled back (schema and ledger unchanged): %w", f.Name, err)
}

// unrecorded are the files the ledger lacks, in order.
func unrecorded(files []migrationFile, ledger []AppliedMigration) []migrationFile {
	recorded := map[string]bool{}
	for _, row := range ledger {
		recorded[row.Version] = true
	}
	var out []migrationFile
	for _, f := range files {
		if !recorded[f.Version] {
			out = append(out, f)
		}
	}
	return out
}

// checkRecorded refuses a run that ended without error but left a file it
// sent out of the ledger. Each ledger row travels in its file's request, so
// this cannot happen with SQL that ends where it appears to; it guards the
// claim that every applied file is recorded.
func checkRecorded(sent []migrationFile, ledger []AppliedMigration) error {
	missing := unrecorded(sent, ledger)
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, len(missing))
	for i, f := range missing {
		names[i] = f.Name
	}
	return fmt.Errorf("migrations %s were sent without error but the ledger does not record them; "+
		"check them for SQL that does not end where it appears to", strings.Join(names, ", "))
}

// changedBudget names the batching inputs that differ.
func changedBudget(olds, news D1MigrationsArgs) []string {
	var out []string
	if !sameOptional(olds.MaxBatchBytes, news.MaxBatchBytes) {
		out = append(out, "maxBatchBytes")
	}
	if !sameOptional(olds.MaxFilesPerBatch, news.MaxFilesPerBatch) {
		out = append(out, "maxFilesPerBatch")
	}
	return out
}

func sameOptional(a, b *int) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// describeBatch names a request's files for the log.
func describeBatch(batch []migrationFile) string {
	if len(batch) == 1 {
		return "migration " + batch[0].Name
	}
	return fmt.Sprintf("%d migrations in one request, %s to %s", len(batch), batch[0].Name, batch[len(batch)-1].Name)
}
