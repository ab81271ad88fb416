package cloudflare

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/common"
)

// D1Migrations applies numbered SQL files to a D1 database and records each
// in the upstream ledger table `_schema_migrations`.
type D1Migrations struct{}

const D1MigrationsToken = "openinspect:index:D1Migrations"

// D1MigrationsArgs are the inputs of D1Migrations.
type D1MigrationsArgs struct {
	DatabaseID string            `pulumi:"databaseId" provider:"replaceOnChanges"`
	Migrations map[string]string `pulumi:"migrations,optional"`
	Directory  *resource.Archive `pulumi:"directory,optional"`
}

// AppliedMigration is one ledger row as the stack last saw it.
type AppliedMigration struct {
	Version   string `pulumi:"version"`
	Name      string `pulumi:"name"`
	AppliedAt string `pulumi:"appliedAt"`
	// Hash is the sha256 of the file when it was applied or first seen applied;
	// it is how later content changes to an applied file are noticed.
	Hash string `pulumi:"hash,optional"`
}

// D1MigrationsState is what the provider records about D1Migrations.
type D1MigrationsState struct {
	D1MigrationsArgs
	// AccountID is the account the database lives in; empty in state
	// written before it was recorded.
	AccountID     string             `pulumi:"accountId,optional"`
	Applied       []AppliedMigration `pulumi:"applied,optional"`
	AppliedCount  int                `pulumi:"appliedCount"`
	LatestVersion string             `pulumi:"latestVersion"`
	Pending       []string           `pulumi:"pending,optional"`
	Changed       []string           `pulumi:"changed,optional"`
}

var (
	_ infer.CustomCheck[D1MigrationsArgs]                     = (*D1Migrations)(nil)
	_ infer.CustomDiff[D1MigrationsArgs, D1MigrationsState]   = (*D1Migrations)(nil)
	_ infer.CustomUpdate[D1MigrationsArgs, D1MigrationsState] = (*D1Migrations)(nil)
	_ infer.CustomRead[D1MigrationsArgs, D1MigrationsState]   = (*D1Migrations)(nil)
	_ infer.CustomDelete[D1MigrationsState]                   = (*D1Migrations)(nil)
)

// Annotate documents the resource.
func (*D1Migrations) Annotate(a infer.Annotator) {
	a.Describe(&D1Migrations{}, "Applies numbered migration files (`NNNN_description.sql`) to a D1 database in order, "+
		"recording each in the `_schema_migrations` ledger that Open-Inspect installations already use, so a database "+
		"migrated by the upstream script is picked up where it stopped.\n\n"+
		"Each file runs together with its ledger row as one unit: a failing file leaves neither its changes nor its "+
		"row, and the error names the file. Files are sent whole, never split on `;`. Preview lists the pending files. "+
		"An applied file whose content changed is reported (a warning and the `changed` output), never re-applied. "+
		"Refresh reads the ledger, so migrations applied or removed out of band show up. Deleting this resource "+
		"leaves the schema as it is.")
}

// Annotate documents the inputs.
func (a *D1MigrationsArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.DatabaseID, "The D1 database to migrate.")
	an.Describe(&a.Migrations, "Migration files by file name, each the file's SQL. Exactly one of `migrations` and `directory` is set.")
	an.Describe(&a.Directory, "The migrations directory as an archive, e.g. `new FileArchive(\"./migrations\")`. Files that are not `.sql` are ignored.")
}

// Annotate documents the outputs.
func (s *D1MigrationsState) Annotate(a infer.Annotator) {
	a.Describe(&s.AccountID, "The Cloudflare account the database lives in.")
	a.Describe(&s.Applied, "The ledger rows, in order.")
	a.Describe(&s.AppliedCount, "How many migrations the ledger records.")
	a.Describe(&s.LatestVersion, "The highest applied version, as written in its file name.")
	a.Describe(&s.Pending, "Files not yet applied; filled during preview.")
	a.Describe(&s.Changed, "Applied files whose content differs from when they were applied.")
}

// files returns the migration set from whichever input holds it.
func (a D1MigrationsArgs) files() ([]migrationFile, []p.CheckFailure, error) {
	var raw map[string]string
	switch {
	case a.Directory != nil && len(a.Migrations) > 0:
		return nil, []p.CheckFailure{{Property: "directory", Reason: "set either migrations or directory, not both"}}, nil
	case a.Directory != nil:
		var err error
		if raw, err = readMigrationArchive(a.Directory); err != nil {
			return nil, []p.CheckFailure{{Property: "directory", Reason: err.Error()}}, nil
		}
	default:
		raw = a.Migrations
	}
	files, problems := parseMigrations(raw)
	field := "migrations"
	if a.Directory != nil {
		field = "directory"
	}
	var failures []p.CheckFailure
	for _, prob := range problems {
		failures = append(failures, p.CheckFailure{Property: field, Reason: prob.String()})
	}
	if len(files) == 0 && len(failures) == 0 {
		failures = append(failures, p.CheckFailure{Property: field, Reason: "no NNNN_*.sql migration files given"})
	}
	return files, failures, nil
}

// MigrationsDirectoryProblems says what D1Migrations' Check would refuse in
// the directory dir given as its archive: the OpenInspect component asks
// before registering anything.
func MigrationsDirectoryProblems(dir string) []string {
	archive, err := resource.NewPathArchive(dir)
	if err != nil {
		return []string{fmt.Sprintf("reading %s: %v", dir, err)}
	}
	_, failures, err := D1MigrationsArgs{Directory: archive}.files()
	if err != nil {
		return []string{err.Error()}
	}
	out := make([]string, len(failures))
	for i, f := range failures {
		out[i] = f.Reason
	}
	return out
}

// validFiles is files for callers past Check, where a failure is an error.
func (a D1MigrationsArgs) validFiles() ([]migrationFile, error) {
	files, failures, err := a.files()
	if err != nil {
		return nil, err
	}
	if len(failures) > 0 {
		reasons := make([]string, len(failures))
		for i, f := range failures {
			reasons[i] = f.Property + ": " + f.Reason
		}
		return nil, fmt.Errorf("invalid migrations: %s", strings.Join(reasons, "; "))
	}
	return files, nil
}

// Check rejects unprefixed files and duplicate prefixes, naming them, before
// anything runs.
func (*D1Migrations) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[D1MigrationsArgs], error) {
	args, failures, err := infer.DefaultCheck[D1MigrationsArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 || common.IsUnknown(req.NewInputs, "migrations") || common.IsUnknown(req.NewInputs, "directory") {
		return infer.CheckResponse[D1MigrationsArgs]{Inputs: args, Failures: failures}, err
	}
	_, failures, err = args.files()
	return infer.CheckResponse[D1MigrationsArgs]{Inputs: args, Failures: failures}, err
}

// plan compares the wanted files with the ledger the state last saw.
func plan(files []migrationFile, applied []AppliedMigration) (pending, changed []string) {
	seen := map[string]AppliedMigration{}
	for _, a := range applied {
		seen[a.Version] = a
	}
	for _, f := range files {
		row, ok := seen[f.Version]
		switch {
		case !ok:
			pending = append(pending, f.Name)
		case row.Hash != "" && row.Hash != f.Hash:
			changed = append(changed, f.Name)
		}
	}
	return pending, changed
}

// Diff shows each pending file, and applied files whose content changed, from
// state alone: a preview makes no remote call.
func (*D1Migrations) Diff(_ context.Context, req infer.DiffRequest[D1MigrationsArgs, D1MigrationsState]) (infer.DiffResponse, error) {
	detailed := map[string]p.PropertyDiff{}
	if req.Inputs.DatabaseID != req.State.DatabaseID {
		detailed["databaseId"] = p.PropertyDiff{Kind: p.UpdateReplace, InputDiff: true}
	}
	if d := req.Inputs.Directory; d != nil && !d.HasContents() {
		// The engine elides archive contents in Diff: compare hashes, and let
		// the preview's update list the files.
		if req.State.Directory == nil || req.State.Directory.Hash != d.Hash {
			detailed["directory"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
		}
		if len(req.State.Pending) > 0 {
			detailed["pending"] = p.PropertyDiff{Kind: p.Update}
		}
		return infer.DiffResponse{HasChanges: len(detailed) > 0, DetailedDiff: detailed}, nil
	}
	files, err := req.Inputs.validFiles()
	if err != nil {
		return infer.DiffResponse{}, err
	}
	pending, changed := plan(files, req.State.Applied)
	for _, name := range pending {
		detailed[fmt.Sprintf("migrations[%q]", name)] = p.PropertyDiff{Kind: p.Add, InputDiff: true}
	}
	if !slices.Equal(changed, req.State.Changed) {
		detailed["changed"] = p.PropertyDiff{Kind: p.Update}
	}
	return infer.DiffResponse{HasChanges: len(detailed) > 0, DetailedDiff: detailed}, nil
}

// Create applies every pending file.
func (*D1Migrations) Create(ctx context.Context, req infer.CreateRequest[D1MigrationsArgs]) (infer.CreateResponse[D1MigrationsState], error) {
	state, err := migrate(ctx, req.Inputs, D1MigrationsState{D1MigrationsArgs: req.Inputs}, req.DryRun)
	return infer.CreateResponse[D1MigrationsState]{ID: req.Inputs.DatabaseID, Output: state}, keepPartial(err, req.DryRun)
}

// Update applies the files added since the last run.
func (*D1Migrations) Update(ctx context.Context, req infer.UpdateRequest[D1MigrationsArgs, D1MigrationsState]) (infer.UpdateResponse[D1MigrationsState], error) {
	state, err := migrate(ctx, req.Inputs, req.State, req.DryRun)
	return infer.UpdateResponse[D1MigrationsState]{Output: state}, keepPartial(err, req.DryRun)
}

// keepPartial marks a failure after some files applied as a partial
// initialization, so the engine saves the returned state (what the ledger
// holds) and the next `pulumi up` continues from there.
func keepPartial(err error, dryRun bool) error {
	if err == nil || dryRun {
		return err
	}
	return fmt.Errorf("%w: %w", infer.ResourceInitFailedError{Reasons: []string{err.Error()}}, err)
}

// migrate brings the database's ledger up to the wanted files. In preview it
// only computes what would run.
func migrate(ctx context.Context, args D1MigrationsArgs, prior D1MigrationsState, dryRun bool) (D1MigrationsState, error) {
	state := prior
	state.D1MigrationsArgs = args
	files, err := args.validFiles()
	if err != nil {
		return state, err
	}
	if dryRun {
		state.Pending, state.Changed = plan(files, prior.Applied)
		return state, nil
	}
	client, err := accountClient(ctx, prior.AccountID)
	if err != nil {
		return state, err
	}
	state.AccountID = client.AccountID()
	if _, err := client.Query(ctx, args.DatabaseID, ledgerDDL); err != nil {
		return state, fmt.Errorf("creating the migration ledger: %w", err)
	}
	ledger, err := readLedger(ctx, client, args.DatabaseID)
	if err != nil {
		return state, err
	}
	if err := checkRenumbered(files, ledger); err != nil {
		return state, err
	}
	hashes := knownHashes(prior.Applied)
	applied := map[string]bool{}
	for _, row := range ledger {
		applied[row.Version] = true
	}
	var applyErr error
	for _, f := range files {
		if applied[f.Version] {
			continue
		}
		p.GetLogger(ctx).Infof("applying migration %s", f.Name)
		if _, err := client.Query(ctx, args.DatabaseID, withLedgerInsert(f)); err != nil {
			applyErr = fmt.Errorf("migration %s failed and was rolled back (schema and ledger unchanged): %w", f.Name, err)
			break
		}
		hashes[f.Version] = f.Hash
	}
	// The ledger is the truth, also after a failure part-way.
	ledger, err = readLedger(ctx, client, args.DatabaseID)
	if err != nil {
		return state, err
	}
	state.record(ledger, files, hashes)
	if len(state.Changed) > 0 {
		p.GetLogger(ctx).Warningf("applied migrations changed since they ran (not re-applied): %s", strings.Join(state.Changed, ", "))
	}
	return state, applyErr
}

// record fills the state from the ledger. Files already applied by someone
// else get today's content hash as their baseline.
func (s *D1MigrationsState) record(ledger []AppliedMigration, files []migrationFile, hashes map[string]string) {
	current := map[string]migrationFile{}
	for _, f := range files {
		current[f.Version] = f
	}
	s.Applied = nil
	for _, row := range ledger {
		if h, ok := hashes[row.Version]; ok {
			row.Hash = h
		} else if f, ok := current[row.Version]; ok {
			row.Hash = f.Hash
		}
		s.Applied = append(s.Applied, row)
	}
	s.AppliedCount = len(s.Applied)
	s.LatestVersion = ""
	if n := len(s.Applied); n > 0 {
		s.LatestVersion = s.Applied[n-1].Version
	}
	s.Pending, s.Changed = plan(files, s.Applied)
}

func knownHashes(applied []AppliedMigration) map[string]string {
	out := map[string]string{}
	for _, a := range applied {
		if a.Hash != "" {
			out[a.Version] = a.Hash
		}
	}
	return out
}

// checkRenumbered refuses a version the ledger holds under another name:
// applying or skipping either file would be wrong.
func checkRenumbered(files []migrationFile, ledger []AppliedMigration) error {
	recorded := map[string]string{}
	for _, row := range ledger {
		recorded[row.Version] = row.Name
	}
	var clashes []string
	for _, f := range files {
		if name, ok := recorded[f.Version]; ok && name != f.Name {
			clashes = append(clashes, fmt.Sprintf("%s (ledger has %s)", f.Name, name))
		}
	}
	if len(clashes) > 0 {
		return fmt.Errorf("migration versions already applied under another name; renumber the new files: %s", strings.Join(clashes, "; "))
	}
	return nil
}

func readLedger(ctx context.Context, client *cfapi.Client, databaseID string) ([]AppliedMigration, error) {
	results, err := client.Query(ctx, databaseID, "SELECT version, name, applied_at FROM _schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("reading the migration ledger: %w", err)
	}
	var rows []AppliedMigration
	for _, r := range results {
		for _, row := range r.Rows {
			rows = append(rows, AppliedMigration{
				Version:   fmt.Sprint(row["version"]),
				Name:      fmt.Sprint(row["name"]),
				AppliedAt: fmt.Sprint(row["applied_at"]),
			})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		return migrationLess(rows[i].Version, rows[i].Name, rows[j].Version, rows[j].Name)
	})
	return rows, nil
}

// Read reports the ledger, so refresh sees migrations applied or removed out
// of band. A database without a ledger has nothing applied. Through a
// provider configured for another account it refuses: there the database
// would read as missing and be dropped from state.
func (*D1Migrations) Read(ctx context.Context, req infer.ReadRequest[D1MigrationsArgs, D1MigrationsState]) (infer.ReadResponse[D1MigrationsArgs, D1MigrationsState], error) {
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return infer.ReadResponse[D1MigrationsArgs, D1MigrationsState]{}, err
	}
	if _, err := client.GetDatabase(ctx, req.ID); cfapi.IsNotFound(err) {
		return infer.ReadResponse[D1MigrationsArgs, D1MigrationsState]{}, nil
	} else if err != nil {
		return infer.ReadResponse[D1MigrationsArgs, D1MigrationsState]{}, err
	}
	var ledger []AppliedMigration
	if exists, err := ledgerExists(ctx, client, req.ID); err != nil {
		return infer.ReadResponse[D1MigrationsArgs, D1MigrationsState]{}, err
	} else if exists {
		if ledger, err = readLedger(ctx, client, req.ID); err != nil {
			return infer.ReadResponse[D1MigrationsArgs, D1MigrationsState]{}, err
		}
	}
	inputs := req.Inputs
	inputs.DatabaseID = req.ID
	files, _, _ := inputs.files()
	state := req.State
	state.D1MigrationsArgs = inputs
	state.AccountID = client.AccountID()
	state.record(ledger, files, knownHashes(req.State.Applied))
	return infer.ReadResponse[D1MigrationsArgs, D1MigrationsState]{ID: req.ID, Inputs: inputs, State: state}, nil
}

func ledgerExists(ctx context.Context, client *cfapi.Client, databaseID string) (bool, error) {
	results, err := client.Query(ctx, databaseID,
		"SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_schema_migrations'")
	if err != nil {
		return false, fmt.Errorf("looking for the migration ledger: %w", err)
	}
	return len(results) > 0 && len(results[0].Rows) > 0, nil
}

// Delete leaves the schema and the ledger as they are, but like every other
// resource refuses a provider configured for another account than the one
// recorded, so an account change is noticed rather than passed over.
func (*D1Migrations) Delete(ctx context.Context, req infer.DeleteRequest[D1MigrationsState]) (infer.DeleteResponse, error) {
	if req.State.AccountID == "" {
		return infer.DeleteResponse{}, nil // recorded before the account was
	}
	_, err := accountClient(ctx, req.State.AccountID)
	return infer.DeleteResponse{}, err
}
