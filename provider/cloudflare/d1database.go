package cloudflare

import (
	"context"
	"fmt"
	"regexp"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// D1Database is a Cloudflare D1 database, created by name.
type D1Database struct{}

const D1DatabaseToken = "openinspect:index:D1Database"

// D1DatabaseArgs are the inputs of a D1Database.
type D1DatabaseArgs struct {
	Name                string `pulumi:"name" provider:"replaceOnChanges"`
	PrimaryLocationHint string `pulumi:"primaryLocationHint,optional" provider:"replaceOnChanges"`
	AdoptExisting       bool   `pulumi:"adoptExisting,optional"`
	Ownership
}

// D1DatabaseState is what the provider records about a D1Database.
type D1DatabaseState struct {
	D1DatabaseArgs
	DatabaseID string `pulumi:"databaseId"`
	AccountID  string `pulumi:"accountId"`
	CreatedAt  string `pulumi:"createdAt"`
	Version    string `pulumi:"version"`
	// Adopted records that the database existed before this resource took it
	// over, so the history of ownership is visible in state.
	Adopted bool `pulumi:"adopted"`
}

var (
	_ infer.CustomCheck[D1DatabaseArgs]                   = (*D1Database)(nil)
	_ infer.CustomUpdate[D1DatabaseArgs, D1DatabaseState] = (*D1Database)(nil)
	_ infer.CustomRead[D1DatabaseArgs, D1DatabaseState]   = (*D1Database)(nil)
	_ infer.CustomDelete[D1DatabaseState]                 = (*D1Database)(nil)
	_ infer.Annotated                                     = (*D1Database)(nil)
	_ infer.Annotated                                     = (*D1DatabaseArgs)(nil)
	_ infer.Annotated                                     = (*D1DatabaseState)(nil)
)

// Annotate documents the resource.
func (*D1Database) Annotate(a infer.Annotator) {
	a.Describe(&D1Database{}, "A Cloudflare D1 database, created by name in the configured account.\n\n"+
		"The owning installation (`owner`) is recorded in the database itself, in a one-row table "+
		"`_openinspect_owner`. A database that already exists under the name is adopted when it records this "+
		"owner, or when it has no table at all (nothing anyone could lose); one recording another installation "+
		"is refused unless `takeOverFrom` names it; any other needs `adoptExisting`, or "+
		"`pulumi import openinspect:index:D1Database <resource name> <database id>` when declared on its own.")
}

// Annotate documents the inputs.
func (a *D1DatabaseArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Name, "Database name, unique in the account. Changing it creates a new, empty database.")
	an.Describe(&a.PrimaryLocationHint, "Region hint for the primary (wnam, enam, weur, eeur, apac, oc). Fixed at creation.")
	an.Describe(&a.AdoptExisting, "Take over a database that already exists under this name instead of failing with a conflict.")
}

// Annotate documents the outputs.
func (s *D1DatabaseState) Annotate(a infer.Annotator) {
	a.Describe(&s.DatabaseID, "The database UUID, used by `d1` worker bindings.")
	a.Describe(&s.AccountID, "The Cloudflare account the database lives in.")
	a.Describe(&s.CreatedAt, "Creation time, RFC 3339.")
	a.Describe(&s.Version, "D1 storage backend version.")
	a.Describe(&s.Adopted, "Whether the database existed before and was adopted rather than created.")
}

// d1NamePattern is the name shape D1 accepts: letters, digits, '-' and '_'.
var d1NamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

var d1LocationHints = map[string]bool{"wnam": true, "enam": true, "weur": true, "eeur": true, "apac": true, "oc": true}

// D1NameProblem says what is wrong with a D1 database name, or "". The
// OpenInspect component applies it to the names it plans.
func D1NameProblem(name string) string {
	if name == registryDatabase {
		return fmt.Sprintf("%q is reserved for the account's ownership registry (see the Queue resource); pick another name", name)
	}
	if d1NamePattern.MatchString(name) {
		return ""
	}
	return fmt.Sprintf("%q is not a valid D1 database name: use 1-64 letters, digits, '-' or '_', starting with a letter or digit", name)
}

// Check validates the inputs before any remote call.
func (*D1Database) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[D1DatabaseArgs], error) {
	args, failures, err := infer.DefaultCheck[D1DatabaseArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[D1DatabaseArgs]{Inputs: args, Failures: failures}, err
	}
	if problem := D1NameProblem(args.Name); problem != "" {
		failures = append(failures, p.CheckFailure{Property: "name", Reason: problem})
	}
	if args.PrimaryLocationHint != "" && !d1LocationHints[args.PrimaryLocationHint] {
		failures = append(failures, p.CheckFailure{Property: "primaryLocationHint", Reason: fmt.Sprintf(
			"%q is not a D1 location hint: use one of wnam, enam, weur, eeur, apac, oc", args.PrimaryLocationHint)})
	}
	// A name or hint computed at a preview decodes as "": not a problem yet.
	return infer.CheckResponse[D1DatabaseArgs]{Inputs: args, Failures: family.KnownFailures(req.NewInputs, failures)}, nil
}

// Create creates the database, or adopts an existing one when asked to.
func (*D1Database) Create(ctx context.Context, req infer.CreateRequest[D1DatabaseArgs]) (infer.CreateResponse[D1DatabaseState], error) {
	state := D1DatabaseState{D1DatabaseArgs: req.Inputs}
	if req.DryRun {
		return infer.CreateResponse[D1DatabaseState]{Output: state}, nil
	}
	client, err := config.Cloudflare(ctx)
	if err != nil {
		return infer.CreateResponse[D1DatabaseState]{}, err
	}
	db, adopted, err := claim[cfapi.Database]{
		kind: "D1 database", name: req.Inputs.Name,
		adopt: req.Inputs.AdoptExisting, accountID: client.AccountID(), ownership: req.Inputs.Ownership,
		find: func(ctx context.Context) (cfapi.Database, bool, error) {
			return client.FindDatabase(ctx, req.Inputs.Name)
		},
		create: func(ctx context.Context) (cfapi.Database, error) {
			return client.CreateDatabase(ctx, req.Inputs.Name, req.Inputs.PrimaryLocationHint)
		},
		id: func(db cfapi.Database) string { return db.ID },
		evidence: func(ctx context.Context, db cfapi.Database) (string, bool, error) {
			return d1Evidence(ctx, client, db.ID)
		},
		mark: func(ctx context.Context, db cfapi.Database) error {
			return markD1(ctx, client, db.ID, req.Inputs.Owner)
		},
	}.run(ctx)
	if err != nil {
		return infer.CreateResponse[D1DatabaseState]{}, err
	}
	state.Adopted = adopted
	state.fill(db, client.AccountID())
	return infer.CreateResponse[D1DatabaseState]{ID: db.ID, Output: state}, nil
}

func (s *D1DatabaseState) fill(db cfapi.Database, accountID string) {
	s.Name = db.Name
	s.DatabaseID = db.ID
	s.AccountID = accountID
	s.CreatedAt = db.CreatedAt.UTC().Format(time.RFC3339)
	s.Version = db.Version
}

// Update sees only adoptExisting and the ownership inputs change; the other
// inputs replace. A new owner (a database recorded before identities
// existed) is written into the database.
func (*D1Database) Update(ctx context.Context, req infer.UpdateRequest[D1DatabaseArgs, D1DatabaseState]) (infer.UpdateResponse[D1DatabaseState], error) {
	state := req.State
	if !req.DryRun && req.Inputs.Owner != "" && req.Inputs.Owner != req.State.Owner {
		client, err := accountClient(ctx, req.State.AccountID)
		if err != nil {
			return infer.UpdateResponse[D1DatabaseState]{}, err
		}
		if err := markD1(ctx, client, req.State.DatabaseID, req.Inputs.Owner); err != nil {
			return infer.UpdateResponse[D1DatabaseState]{}, err
		}
	}
	state.D1DatabaseArgs = req.Inputs
	return infer.UpdateResponse[D1DatabaseState]{Output: state}, nil
}

// Read refreshes the database from the API; it also serves `pulumi import`,
// where only the ID is known.
func (*D1Database) Read(ctx context.Context, req infer.ReadRequest[D1DatabaseArgs, D1DatabaseState]) (infer.ReadResponse[D1DatabaseArgs, D1DatabaseState], error) {
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return infer.ReadResponse[D1DatabaseArgs, D1DatabaseState]{}, err
	}
	db, err := client.GetDatabase(ctx, req.ID)
	if cfapi.IsNotFound(err) {
		// Gone remotely: an empty ID tells the engine to drop it from state.
		return infer.ReadResponse[D1DatabaseArgs, D1DatabaseState]{}, nil
	}
	if err != nil {
		return infer.ReadResponse[D1DatabaseArgs, D1DatabaseState]{}, err
	}
	inputs := req.Inputs
	inputs.Name = db.Name
	state := req.State
	state.D1DatabaseArgs = inputs
	state.fill(db, client.AccountID())
	return infer.ReadResponse[D1DatabaseArgs, D1DatabaseState]{ID: db.ID, Inputs: inputs, State: state}, nil
}

// Delete removes the database and everything in it.
func (*D1Database) Delete(ctx context.Context, req infer.DeleteRequest[D1DatabaseState]) (infer.DeleteResponse, error) {
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	return infer.DeleteResponse{}, client.DeleteDatabase(ctx, req.ID)
}
