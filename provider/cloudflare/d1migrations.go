package cloudflare

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
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
	// Files is derived by Check from Migrations or Directory: each file's
	// sha256 by name. The engine sends archives to Diff without their
	// contents, so without it a preview could only say the directory's hash
	// moved; with it the diff names each file.
	Files map[string]string `pulumi:"files,optional"`
	// MaxBatchBytes and MaxFilesPerBatch bound one D1 request (d1batch.go).
	MaxBatchBytes    *int `pulumi:"maxBatchBytes,optional"`
	MaxFilesPerBatch *int `pulumi:"maxFilesPerBatch,optional"`
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

	// planned is set when Pending, Changed, AppliedCount and LatestVersion
	// were computed from known inputs and a known ledger, so a preview may
	// show them (WireDependencies); it is not recorded.
	planned bool
}

var (
	_ infer.CustomCheck[D1MigrationsArgs]                             = (*D1Migrations)(nil)
	_ infer.CustomDiff[D1MigrationsArgs, D1MigrationsState]           = (*D1Migrations)(nil)
	_ infer.CustomUpdate[D1MigrationsArgs, D1MigrationsState]         = (*D1Migrations)(nil)
	_ infer.CustomRead[D1MigrationsArgs, D1MigrationsState]           = (*D1Migrations)(nil)
	_ infer.CustomDelete[D1MigrationsState]                           = (*D1Migrations)(nil)
	_ infer.ExplicitDependencies[D1MigrationsArgs, D1MigrationsState] = (*D1Migrations)(nil)
)

// Annotate documents the resource.
func (*D1Migrations) Annotate(a infer.Annotator) {
	a.Describe(&D1Migrations{}, "Applies numbered migration files (`NNNN_description.sql`) to a D1 database in order, "+
		"recording each in the `_schema_migrations` ledger that Open-Inspect installations already use, so a database "+
		"migrated by the upstream script is picked up where it stopped.\n\n"+
		"Each file runs together with its ledger row as one unit: a failing file leaves neither its changes nor its "+
		"row, and the error names the file. Files are sent whole, never split on `;`. Pending files go to D1 several "+
		"to a request (within `maxBatchBytes` and `maxFilesPerBatch`), each followed by its ledger row; D1 runs a "+
		"request as one transaction, and a request that fails is retried one file per request, so the files before "+
		"the failing one are applied and recorded once. Preview lists the pending files "+
		"by name, in order (the `pending` output and the detailed diff), names "+
		"applied files that were edited, and refuses a renumbered or removed applied file. "+
		"An applied file whose content changed is reported (a warning and the `changed` output), never re-applied. "+
		"Refresh reads the ledger, so migrations applied or removed out of band show up. Deleting this resource "+
		"leaves the schema as it is.")
}

// Annotate documents the inputs.
func (a *D1MigrationsArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.DatabaseID, "The D1 database to migrate.")
	an.Describe(&a.Migrations, "Migration files by file name, each the file's SQL. Exactly one of `migrations` and `directory` is set.")
	an.Describe(&a.Directory, "The migrations directory as an archive, e.g. `new FileArchive(\"./migrations\")`. Files that are not `.sql` are ignored.")
	an.Describe(&a.MaxBatchBytes, "At most this many bytes of SQL in one D1 request (the files and their ledger rows). "+
		"Defaults to 100000, the statement length D1 documents (https://developers.cloudflare.com/d1/platform/limits/), "+
		"applied to the whole request because D1 does not say how it counts several statements. A file larger than "+
		"this goes alone.")
	an.Describe(&a.MaxFilesPerBatch, "At most this many files in one D1 request; unset, only `maxBatchBytes` bounds a "+
		"request. `1` sends each file in its own request, as upstream's script and wrangler do: for data migrations "+
		"that each take seconds on a large database, since D1 gives a request 30 seconds (a request that times out "+
		"is rolled back and retried one file per request anyway, at the cost of the time spent).")
	an.Describe(&a.Files, "Set by the provider from `migrations` or `directory` (any value given is replaced): each file's sha256 by "+
		"name, so a preview names the files that will be applied or were edited.")
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
// anything runs, and records each file's hash in `files`: Check is the one
// call that sees an archive's contents before Diff.
func (*D1Migrations) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[D1MigrationsArgs], error) {
	args, failures, err := infer.DefaultCheck[D1MigrationsArgs](ctx, req.NewInputs)
	args.Files = nil // derived, whatever was given
	if err == nil && len(failures) == 0 {
		failures = family.KnownFailures(req.NewInputs, args.budgetFailures())
	}
	if err != nil || len(failures) > 0 || family.IsUnknown(req.NewInputs, "migrations") || family.IsUnknown(req.NewInputs, "directory") {
		return infer.CheckResponse[D1MigrationsArgs]{Inputs: args, Failures: failures}, err
	}
	files, failures, err := args.files()
	if err == nil && len(failures) == 0 {
		args.Files = make(map[string]string, len(files))
		for _, f := range files {
			args.Files[f.Name] = f.Hash
		}
	}
	return infer.CheckResponse[D1MigrationsArgs]{Inputs: args, Failures: failures}, err
}

// manifestFiles reads the manifest Check recorded as files without SQL, in
// apply order. Check rejected names that do not parse.
func manifestFiles(manifest map[string]string) []migrationFile {
	out := make([]migrationFile, 0, len(manifest))
	for name, hash := range manifest {
		if m := migrationNamePattern.FindStringSubmatch(name); m != nil {
			out = append(out, migrationFile{Version: m[1], Name: name, Hash: hash})
		}
	}
	sort.Slice(out, func(i, j int) bool { return migrationLess(out[i].Version, out[i].Name, out[j].Version, out[j].Name) })
	return out
}

// plannedFiles is the migration set to plan with, without its SQL where only
// the manifest is at hand (Diff, Read: the engine elides archive contents).
// It is false when the files are not known (a preview whose migrations come
// from another resource's output).
func (a D1MigrationsArgs) plannedFiles() ([]migrationFile, bool) {
	if a.Files != nil {
		return manifestFiles(a.Files), true
	}
	if files, failures, err := a.files(); err == nil && len(failures) == 0 {
		return files, true
	}
	return nil, false
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

// refuseRewrites refuses, naming the files, a set that no longer matches
// what the ledger records as applied: a version applied under another name
// (a renumbering), or an applied file that is gone. Rows without a hash were
// never a file of this resource (applied out of band) and are left alone.
func refuseRewrites(files []migrationFile, applied []AppliedMigration) error {
	byVersion, byHash := map[string]migrationFile{}, map[string]migrationFile{}
	for _, f := range files {
		byVersion[f.Version] = f
		byHash[f.Hash] = f
	}
	var problems []string
	for _, row := range applied {
		if f, ok := byVersion[row.Version]; ok {
			if f.Name != row.Name {
				problems = append(problems, fmt.Sprintf("%s (ledger has %s): version %s is applied under another name; renumber the new file",
					f.Name, row.Name, row.Version))
			}
			continue
		}
		if row.Hash == "" {
			continue
		}
		problem := fmt.Sprintf("%s was applied and is no longer in the migrations; restore it", row.Name)
		if f, ok := byHash[row.Hash]; ok {
			problem = fmt.Sprintf("%s was applied and is no longer in the migrations, and %s has its content: "+
				"renumbering an applied file would run it again; keep its name", row.Name, f.Name)
		}
		problems = append(problems, problem)
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("the migrations no longer match the ledger in _schema_migrations (nothing was changed): %s. "+
		"A file removed on purpose needs its ledger row deleted and a `pulumi refresh` first", strings.Join(problems, "; "))
}

// fileKey is the detailed-diff key of one migration file.
func fileKey(name string) string { return fmt.Sprintf("files[%q]", name) }

// Diff names each file that will be applied and each applied file whose
// content moved, from state alone: even a preview with changes makes no
// remote call here. A renumbered or removed applied file is refused.
func (*D1Migrations) Diff(ctx context.Context, req infer.DiffRequest[D1MigrationsArgs, D1MigrationsState]) (infer.DiffResponse, error) {
	olds, news := req.State, req.Inputs
	log := p.GetLogger(ctx)
	detailed := map[string]p.PropertyDiff{}
	if news.DatabaseID != olds.DatabaseID {
		detailed["databaseId"] = p.PropertyDiff{Kind: p.UpdateReplace, InputDiff: true}
		log.Infof("replace because databaseId changes (%s -> %s): the ledger lives in the database, so every file is "+
			"applied to the new database from the first; the old database keeps its schema", olds.DatabaseID, orUnknown(news.DatabaseID))
	}
	for _, field := range changedBudget(olds.D1MigrationsArgs, news) {
		// Only how later files are sent changes; nothing is applied for it.
		detailed[field] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	files, known := news.plannedFiles()
	if !known {
		// Only in a preview whose migrations come from another resource's
		// output: the update applies whatever is pending then.
		if field := changedSource(olds.D1MigrationsArgs, news); field != "" {
			detailed[field] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
			log.Infof("the migration files are not known until the resources they come from are updated; the update applies what is pending then")
		}
		return infer.DiffResponse{HasChanges: len(detailed) > 0, DetailedDiff: detailed}, nil
	}
	if _, replacing := detailed["databaseId"]; replacing {
		return infer.DiffResponse{HasChanges: true, DetailedDiff: detailed}, nil
	}
	if err := refuseRewrites(files, olds.Applied); err != nil {
		return infer.DiffResponse{}, err
	}
	pending, changed := plan(files, olds.Applied)
	for _, name := range pending {
		detailed[fileKey(name)] = p.PropertyDiff{Kind: p.Add, InputDiff: true}
	}
	if len(pending) > 0 {
		log.Infof("%d migration(s) will be applied, in order: %s", len(pending), strings.Join(pending, ", "))
	}
	applied := map[string]AppliedMigration{}
	for _, row := range olds.Applied {
		applied[row.Name] = row
	}
	for _, f := range files {
		row, ok := applied[f.Name]
		if !ok || row.Hash == "" {
			continue
		}
		changedNow, changedBefore := slices.Contains(changed, f.Name), slices.Contains(olds.Changed, f.Name)
		editedAgain := olds.Files[f.Name] != "" && olds.Files[f.Name] != f.Hash
		switch {
		case changedNow && (!changedBefore || editedAgain):
			detailed[fileKey(f.Name)] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
			log.Warningf("%s was applied (version %s, %s) and its content changed since (sha256 %s -> %s): "+
				"it will not be applied again; the `changed` output lists it", f.Name, row.Version, row.AppliedAt, short(row.Hash), short(f.Hash))
		case !changedNow && changedBefore:
			detailed[fileKey(f.Name)] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
			log.Infof("%s is back to the content it was applied with; it leaves the `changed` output", f.Name)
		}
	}
	var dropped []string
	for _, name := range slices.Sorted(maps.Keys(olds.Files)) {
		if _, kept := news.Files[name]; !kept {
			if _, wasApplied := applied[name]; !wasApplied {
				detailed[fileKey(name)] = p.PropertyDiff{Kind: p.Delete, InputDiff: true}
				dropped = append(dropped, name)
			}
		}
	}
	if len(dropped) > 0 {
		log.Infof("no longer pending, removed before they were applied: %s", strings.Join(dropped, ", "))
	}
	return infer.DiffResponse{HasChanges: len(detailed) > 0, DetailedDiff: detailed}, nil
}

// changedSource is the input holding the files when it changed, compared
// the way the engine hands it to Diff (archives by hash).
func changedSource(olds, news D1MigrationsArgs) string {
	if news.Directory != nil || olds.Directory != nil {
		if olds.Directory == nil || news.Directory == nil || olds.Directory.Hash != news.Directory.Hash {
			return "directory"
		}
		return ""
	}
	if !maps.Equal(olds.Migrations, news.Migrations) {
		return "migrations"
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "a value known after this update"
	}
	return s
}

// short is a digest shortened for messages.
func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}

// WireDependencies lets a preview show the plan: pending, changed, the
// count and the latest version once the pending files apply are known
// whenever the files and the ledger were (planned), instead of unknown
// because the files changed.
func (*D1Migrations) WireDependencies(f infer.FieldSelector, _ *D1MigrationsArgs, state *D1MigrationsState) {
	if state.planned {
		f.OutputField(&state.Pending).AlwaysKnown()
		f.OutputField(&state.Changed).AlwaysKnown()
		f.OutputField(&state.AppliedCount).AlwaysKnown()
		f.OutputField(&state.LatestVersion).AlwaysKnown()
	}
}

// Create applies every pending file. Its preview reads the ledger of a
// database that already exists (its ID is known before this update): such a
// database may have been migrated by upstream's script, and a plan from an
// empty ledger would list files that will not run. A database created in
// the same update has an unknown ID in preview, and its plan stays unknown
// (it may be an adopted database with a ledger).
func (*D1Migrations) Create(ctx context.Context, req infer.CreateRequest[D1MigrationsArgs]) (infer.CreateResponse[D1MigrationsState], error) {
	prior := D1MigrationsState{D1MigrationsArgs: req.Inputs}
	if req.DryRun {
		if req.Inputs.DatabaseID == "" {
			return infer.CreateResponse[D1MigrationsState]{Output: prior}, nil
		}
		files, known := req.Inputs.plannedFiles()
		if !known {
			return infer.CreateResponse[D1MigrationsState]{Output: prior}, nil
		}
		ledger, err := currentLedger(ctx, req.Inputs.DatabaseID, "")
		if err != nil {
			return infer.CreateResponse[D1MigrationsState]{}, err
		}
		prior.record(ledger, files, nil)
		prior.planned = true
		prior.predict(files)
		return infer.CreateResponse[D1MigrationsState]{ID: req.Inputs.DatabaseID, Output: prior}, nil
	}
	state, err := migrate(ctx, req.Inputs, prior, false)
	return infer.CreateResponse[D1MigrationsState]{ID: req.Inputs.DatabaseID, Output: state}, keepPartial(err, false)
}

// currentLedger reads the ledger of a database, empty when it has none.
func currentLedger(ctx context.Context, databaseID, accountID string) ([]AppliedMigration, error) {
	client, err := accountClient(ctx, accountID)
	if err != nil {
		return nil, err
	}
	exists, err := ledgerExists(ctx, client, databaseID)
	if err != nil || !exists {
		return nil, err
	}
	return readLedger(ctx, client, databaseID)
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
	if dryRun {
		// From the state's ledger: an update's preview makes no call.
		if files, known := args.plannedFiles(); known {
			state.Pending, state.Changed = plan(files, prior.Applied)
			state.planned = true
			state.predict(files)
		}
		return state, nil
	}
	files, err := args.validFiles()
	if err != nil {
		return state, err
	}
	client, err := accountClient(ctx, prior.AccountID)
	if err != nil {
		return state, err
	}
	state.AccountID = client.AccountID()
	ledger, err := ensureLedger(ctx, client, args.DatabaseID)
	if err != nil {
		return state, err
	}
	if err := checkRenumbered(files, ledger); err != nil {
		return state, err
	}
	pending := unrecorded(files, ledger)
	hashes := knownHashes(prior.Applied)
	var applyErr error
	if len(pending) > 0 {
		var applied map[string]string
		var after []AppliedMigration
		applied, after, applyErr = applyPending(ctx, client, args.DatabaseID, pending, args.budget())
		maps.Copy(hashes, applied)
		// The ledger is the truth, also after a failure part-way; the last
		// request read it back when the run ended well.
		if after == nil {
			if after, err = readLedger(ctx, client, args.DatabaseID); err != nil {
				return state, errors.Join(applyErr, err)
			}
		}
		ledger = after
		if applyErr == nil {
			applyErr = checkRecorded(pending, ledger)
		}
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

// predict sets the count and latest version the ledger will have once the
// pending files apply, for a preview.
func (s *D1MigrationsState) predict(files []migrationFile) {
	s.AppliedCount = len(s.Applied) + len(s.Pending)
	for _, f := range files {
		if slices.Contains(s.Pending, f.Name) && (s.LatestVersion == "" || migrationLess(s.LatestVersion, "", f.Version, f.Name)) {
			s.LatestVersion = f.Version
		}
	}
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
	results, err := client.Query(ctx, databaseID, ledgerSelect)
	if err != nil {
		return nil, fmt.Errorf("reading the migration ledger: %w", err)
	}
	var rows []AppliedMigration
	for _, r := range results {
		rows = append(rows, ledgerRows(r)...)
	}
	sortLedger(rows)
	return rows, nil
}

// ledgerRows are the rows of one ledger read, in apply order.
func ledgerRows(r cfapi.StatementResult) []AppliedMigration {
	rows := make([]AppliedMigration, 0, len(r.Rows))
	for _, row := range r.Rows {
		rows = append(rows, AppliedMigration{
			Version:   fmt.Sprint(row["version"]),
			Name:      fmt.Sprint(row["name"]),
			AppliedAt: fmt.Sprint(row["applied_at"]),
		})
	}
	sortLedger(rows)
	return rows
}

func sortLedger(rows []AppliedMigration) {
	sort.Slice(rows, func(i, j int) bool {
		return migrationLess(rows[i].Version, rows[i].Name, rows[j].Version, rows[j].Name)
	})
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
	files, _ := inputs.plannedFiles()
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
