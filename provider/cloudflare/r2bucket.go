package cloudflare

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// R2Bucket is an R2 bucket, created by name.
type R2Bucket struct{}

const R2BucketToken = "openinspect:index:R2Bucket"

// R2BucketArgs are the inputs of an R2Bucket.
type R2BucketArgs struct {
	Name          string `pulumi:"name" provider:"replaceOnChanges"`
	LocationHint  string `pulumi:"locationHint,optional" provider:"replaceOnChanges"`
	AdoptExisting bool   `pulumi:"adoptExisting,optional"`
	Ownership
}

// R2BucketState is what the provider records about an R2Bucket.
type R2BucketState struct {
	R2BucketArgs
	AccountID string `pulumi:"accountId"`
	Location  string `pulumi:"location"`
	CreatedAt string `pulumi:"createdAt"`
	Adopted   bool   `pulumi:"adopted"`
}

var (
	_ infer.CustomCheck[R2BucketArgs]                 = (*R2Bucket)(nil)
	_ infer.CustomUpdate[R2BucketArgs, R2BucketState] = (*R2Bucket)(nil)
	_ infer.CustomRead[R2BucketArgs, R2BucketState]   = (*R2Bucket)(nil)
	_ infer.CustomDelete[R2BucketState]               = (*R2Bucket)(nil)
)

// Annotate documents the resource.
func (*R2Bucket) Annotate(a infer.Annotator) {
	a.Describe(&R2Bucket{}, "An R2 bucket, created by name in the configured account.\n\n"+
		"The owning installation (`owner`) is recorded in the bucket itself, as the object `.openinspect-owner` "+
		"whose body is the identity. A bucket that already exists with the name is adopted when it records this owner; "+
		"one recording another installation is refused unless `takeOverFrom` names it; any other needs `adoptExisting`, "+
		"or `pulumi import openinspect:index:R2Bucket <name> <bucket name>` when declared on its own.\n\n"+
		"Delete removes the owner object first, since only an empty bucket can be deleted. Deleting a bucket that "+
		"still holds other objects does not fail the destroy: the owner object is written back, and the bucket is "+
		"retained and removed from the stack with a warning, since the API offers no way to list and empty it.")
}

// Annotate documents the inputs.
func (a *R2BucketArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Name, "Bucket name: 3-63 lowercase letters, digits and hyphens. Changing it creates a new bucket.")
	an.Describe(&a.LocationHint, "Location hint for the bucket (apac, eeur, enam, weur, wnam, oc; any case). Fixed at creation.")
	an.Describe(&a.AdoptExisting, "Take over a bucket that already exists with this name instead of failing with a conflict.")
}

// Annotate documents the outputs.
func (s *R2BucketState) Annotate(a infer.Annotator) {
	a.Describe(&s.AccountID, "The Cloudflare account the bucket lives in.")
	a.Describe(&s.Location, "Where the bucket was placed.")
	a.Describe(&s.CreatedAt, "Creation time as the API reports it.")
	a.Describe(&s.Adopted, "Whether the bucket existed before and was adopted rather than created.")
}

var (
	r2NamePattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)
	r2LocationHints = map[string]bool{"apac": true, "eeur": true, "enam": true, "weur": true, "wnam": true, "oc": true}
)

// R2BucketNameProblem says what is wrong with a bucket name, or "".
func R2BucketNameProblem(name string) string {
	if r2NamePattern.MatchString(name) {
		return ""
	}
	return fmt.Sprintf("%q is not a valid R2 bucket name: use 3-63 lowercase letters, digits or hyphens, not starting or ending with a hyphen", name)
}

// R2LocationProblem says what is wrong with a location hint (any case; ""
// means none), or "".
func R2LocationProblem(hint string) string {
	if hint == "" || r2LocationHints[strings.ToLower(hint)] {
		return ""
	}
	return fmt.Sprintf("%q is not an R2 location hint: use one of apac, eeur, enam, weur, wnam, oc (any case)", hint)
}

// Check validates the name and hint before any remote call, and normalizes
// the hint to the API's lowercase form so `ENAM` and `enam` never diff.
func (*R2Bucket) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[R2BucketArgs], error) {
	args, failures, err := infer.DefaultCheck[R2BucketArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[R2BucketArgs]{Inputs: args, Failures: failures}, err
	}
	args.LocationHint = strings.ToLower(args.LocationHint)
	if problem := R2BucketNameProblem(args.Name); problem != "" {
		failures = append(failures, p.CheckFailure{Property: "name", Reason: problem})
	}
	if problem := R2LocationProblem(args.LocationHint); problem != "" {
		failures = append(failures, p.CheckFailure{Property: "locationHint", Reason: problem})
	}
	// A name or hint computed at a preview decodes as "": not a problem yet.
	return infer.CheckResponse[R2BucketArgs]{Inputs: args, Failures: family.KnownFailures(req.NewInputs, failures)}, nil
}

// Create creates the bucket, or adopts an existing one when asked to.
func (*R2Bucket) Create(ctx context.Context, req infer.CreateRequest[R2BucketArgs]) (infer.CreateResponse[R2BucketState], error) {
	state := R2BucketState{R2BucketArgs: req.Inputs}
	if req.DryRun {
		return infer.CreateResponse[R2BucketState]{Output: state}, nil
	}
	client, err := config.Cloudflare(ctx)
	if err != nil {
		return infer.CreateResponse[R2BucketState]{}, err
	}
	bucket, adopted, err := claim[cfapi.Bucket]{
		kind: "R2 bucket", name: req.Inputs.Name,
		adopt: req.Inputs.AdoptExisting, accountID: client.AccountID(), ownership: req.Inputs.Ownership,
		find: func(ctx context.Context) (cfapi.Bucket, bool, error) {
			return client.FindBucket(ctx, req.Inputs.Name)
		},
		create: func(ctx context.Context) (cfapi.Bucket, error) {
			return client.CreateBucket(ctx, req.Inputs.Name, req.Inputs.LocationHint, "")
		},
		id: func(b cfapi.Bucket) string { return b.Name },
		evidence: func(ctx context.Context, b cfapi.Bucket) (string, bool, error) {
			return r2Evidence(ctx, client, b.Name)
		},
		mark: func(ctx context.Context, b cfapi.Bucket) error {
			return markR2(ctx, client, b.Name, req.Inputs.Owner)
		},
	}.run(ctx)
	if err != nil {
		return infer.CreateResponse[R2BucketState]{}, err
	}
	state.fill(bucket, client.AccountID())
	state.Adopted = adopted
	return infer.CreateResponse[R2BucketState]{ID: bucket.Name, Output: state}, nil
}

func (s *R2BucketState) fill(b cfapi.Bucket, accountID string) {
	// Lower-case, the SDKs' declared form: Cloudflare has answered both cases.
	s.Name, s.AccountID, s.Location, s.CreatedAt = b.Name, accountID, strings.ToLower(b.Location), b.CreatedAt
}

// Update sees only adoptExisting and the ownership inputs change; the other
// inputs replace. A new owner (a bucket recorded before R2 carried evidence)
// is written into the bucket.
func (*R2Bucket) Update(ctx context.Context, req infer.UpdateRequest[R2BucketArgs, R2BucketState]) (infer.UpdateResponse[R2BucketState], error) {
	state := req.State
	if !req.DryRun && req.Inputs.Owner != "" && req.Inputs.Owner != req.State.Owner {
		client, err := accountClient(ctx, req.State.AccountID)
		if err != nil {
			return infer.UpdateResponse[R2BucketState]{}, err
		}
		if err := markR2(ctx, client, req.ID, req.Inputs.Owner); err != nil {
			return infer.UpdateResponse[R2BucketState]{}, err
		}
	}
	state.R2BucketArgs = req.Inputs
	return infer.UpdateResponse[R2BucketState]{Output: state}, nil
}

// Read refreshes the bucket; it also serves `pulumi import` by bucket name.
func (*R2Bucket) Read(ctx context.Context, req infer.ReadRequest[R2BucketArgs, R2BucketState]) (infer.ReadResponse[R2BucketArgs, R2BucketState], error) {
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return infer.ReadResponse[R2BucketArgs, R2BucketState]{}, err
	}
	bucket, err := client.GetBucket(ctx, req.ID)
	if cfapi.IsNotFound(err) {
		return infer.ReadResponse[R2BucketArgs, R2BucketState]{}, nil
	}
	if err != nil {
		return infer.ReadResponse[R2BucketArgs, R2BucketState]{}, err
	}
	inputs := req.Inputs
	inputs.Name = bucket.Name
	state := req.State
	state.R2BucketArgs = inputs
	state.fill(bucket, client.AccountID())
	return infer.ReadResponse[R2BucketArgs, R2BucketState]{ID: bucket.Name, Inputs: inputs, State: state}, nil
}

// Delete removes the owner object and then the bucket (R2 deletes only empty
// buckets), or retains the bucket with a warning while it holds other
// objects.
func (*R2Bucket) Delete(ctx context.Context, req infer.DeleteRequest[R2BucketState]) (infer.DeleteResponse, error) {
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	// What the bucket records is read first, so a retained bucket gets back
	// exactly its evidence (another installation's, after a take-over there).
	owner, _, err := r2Evidence(ctx, client, req.ID)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	if owner != "" {
		if err := client.DeleteObject(ctx, req.ID, ownerR2Object); err != nil {
			return infer.DeleteResponse{}, fmt.Errorf("removing the ownership evidence of R2 bucket %q before deleting it: %w", req.ID, err)
		}
	}
	notEmpty, err := client.DeleteBucket(ctx, req.ID)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	if notEmpty {
		// Retained, the bucket keeps saying whose it is: that installation
		// can adopt it again, and no other one captures it silently.
		if err := markR2(ctx, client, req.ID, owner); err != nil {
			return infer.DeleteResponse{}, err
		}
		p.GetLogger(ctx).Warningf("R2 bucket %q still holds objects, so it was retained in account %s and removed from this stack; "+
			"empty and delete it by hand, or adopt it again (%s)", req.ID, client.AccountID(), readoptHint(owner))
	}
	return infer.DeleteResponse{}, nil
}

// readoptHint says how a retained bucket comes back under management.
func readoptHint(owner string) string {
	if owner == "" {
		return "adoptExisting: true"
	}
	return "it still records installation " + owner + ", which adopts it on its next create; another installation needs takeOverFrom: " + owner
}
