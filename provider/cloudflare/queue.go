package cloudflare

import (
	"context"
	"fmt"
	"regexp"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// Queue is a Cloudflare queue, created by name. Its consumers are declared on
// the consuming Worker (`queueConsumers`), which must exist before a queue can
// deliver to it.
type Queue struct{}

const QueueToken = "openinspect:index:Queue"

// QueueArgs are the inputs of a Queue.
type QueueArgs struct {
	Name          string `pulumi:"name" provider:"replaceOnChanges"`
	AdoptExisting bool   `pulumi:"adoptExisting,optional"`
	Ownership
}

// QueueState is what the provider records about a Queue.
type QueueState struct {
	QueueArgs
	QueueID   string `pulumi:"queueId"`
	AccountID string `pulumi:"accountId"`
	Adopted   bool   `pulumi:"adopted"`
}

var (
	_ infer.CustomCheck[QueueArgs]              = (*Queue)(nil)
	_ infer.CustomUpdate[QueueArgs, QueueState] = (*Queue)(nil)
	_ infer.CustomRead[QueueArgs, QueueState]   = (*Queue)(nil)
	_ infer.CustomDelete[QueueState]            = (*Queue)(nil)
)

// Annotate documents the resource.
func (r *Queue) Annotate(a infer.Annotator) {
	a.Describe(r, "A Cloudflare queue, created by name in the configured account. An existing queue "+
		"with the name is a conflict unless `adoptExisting` is true or it is imported "+
		"(`pulumi import openinspect:index:Queue <name> <queue id>`). Producers bind it with a `queue` binding; "+
		"the consumer, its dead-letter queue and delivery settings are declared on the consuming Worker.\n\n"+
		"Cloudflare's API keeps nothing on a queue but its name and settings, so the owning installation (`owner`) "+
		"is recorded in the account's ownership registry, the D1 database `openinspect-registry` (created by the "+
		"first installation that needs it, never deleted), before the queue is created. A queue that already exists "+
		"with the name is adopted when the registry records this owner (a create an interrupted run never "+
		"recorded); one recorded for another installation is refused, even with `adoptExisting`, unless "+
		"`takeOverFrom` names it; an unrecorded one needs `adoptExisting` and is then recorded. Delete removes "+
		"only a queue not recorded for another installation, then its record.")
}

// Annotate documents the inputs.
func (a *QueueArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Name, "Queue name: 1-63 lowercase letters, digits and hyphens. Changing it creates a new queue.")
	an.Describe(&a.AdoptExisting, "Take over a queue that already exists with this name instead of failing with a conflict.")
}

// Annotate documents the outputs.
func (s *QueueState) Annotate(a infer.Annotator) {
	a.Describe(&s.QueueID, "The queue ID.")
	a.Describe(&s.AccountID, "The Cloudflare account the queue lives in.")
	a.Describe(&s.Adopted, "Whether the queue existed before and was adopted rather than created.")
}

var queueNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// QueueNameProblem says what is wrong with a queue name, or "".
func QueueNameProblem(name string) string {
	if queueNamePattern.MatchString(name) {
		return ""
	}
	return fmt.Sprintf("%q is not a valid queue name: use 1-63 lowercase letters, digits or hyphens, not starting or ending with a hyphen", name)
}

// Check validates the name before any remote call.
func (*Queue) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[QueueArgs], error) {
	args, failures, err := infer.DefaultCheck[QueueArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 || family.IsUnknown(req.NewInputs, "name") {
		return infer.CheckResponse[QueueArgs]{Inputs: args, Failures: failures}, err
	}
	if problem := QueueNameProblem(args.Name); problem != "" {
		failures = append(failures, p.CheckFailure{Property: "name", Reason: problem})
	}
	return infer.CheckResponse[QueueArgs]{Inputs: args, Failures: failures}, nil
}

// Create creates the queue, or adopts an existing one when asked to.
func (*Queue) Create(ctx context.Context, req infer.CreateRequest[QueueArgs]) (infer.CreateResponse[QueueState], error) {
	state := QueueState{QueueArgs: req.Inputs}
	if req.DryRun {
		return infer.CreateResponse[QueueState]{Output: state}, nil
	}
	client, err := config.Cloudflare(ctx)
	if err != nil {
		return infer.CreateResponse[QueueState]{}, err
	}
	reg := newRegistry(client)
	name, owner := req.Inputs.Name, req.Inputs.Owner
	c := claim[cfapi.Queue]{
		kind: "queue", name: name,
		adopt: req.Inputs.AdoptExisting, accountID: client.AccountID(), ownership: req.Inputs.Ownership,
		find: func(ctx context.Context) (cfapi.Queue, bool, error) {
			return client.FindQueue(ctx, name)
		},
		create: func(ctx context.Context) (cfapi.Queue, error) {
			return client.CreateQueue(ctx, name)
		},
		id: func(q cfapi.Queue) string { return q.ID },
		// Read even without an owner: a queue declared on its own must not
		// take over an installation's.
		evidence: func(ctx context.Context, _ cfapi.Queue) (string, bool, error) {
			holder, err := reg.owner(ctx, registryQueue, name)
			return holder, false, err
		},
	}
	if owner != "" {
		c.reserve = func(ctx context.Context) (string, error) {
			return reg.record(ctx, registryQueue, name, owner, req.Inputs.TakeOverFrom)
		}
		c.mark = func(ctx context.Context, q cfapi.Queue) error {
			holder, err := reg.record(ctx, registryQueue, name, owner, req.Inputs.TakeOverFrom)
			if err == nil && holder != owner {
				err = fmt.Errorf("queue %q (id %s) was recorded for installation %s by a concurrent run while this one "+
					"adopted it; nothing was changed, run up again to see whose it is", name, q.ID, holder)
			}
			return err
		}
	}
	q, adopted, err := createQueue(ctx, reg, c, req.Inputs.TakeOverFrom)
	if err != nil {
		return infer.CreateResponse[QueueState]{}, err
	}
	state.QueueID, state.AccountID, state.Adopted = q.ID, client.AccountID(), adopted
	return infer.CreateResponse[QueueState]{ID: q.ID, Output: state}, nil
}

// createQueue is c.run without listing the account's queues when it can:
// Cloudflare lists queues only whole, so a listing costs what every other
// installation in the account has made. With an owner and the account's
// registry in place, the name is recorded first (as run reserves it) and
// the queue created; the queues are listed only when that create fails, to
// find the one in the way, which the record from before this run then
// decides about as run's evidence would (this installation's: a create an
// interrupted run never recorded; takeOverFrom's: taken over; none: only
// with adoptExisting, and the reservation is withdrawn on a refusal). A
// record of another installation, a reservation lost to a concurrent run,
// no owner, or an account without a registry take run's way, which lists
// first and so names what it refuses precisely (and, refusing, creates no
// registry).
func createQueue(ctx context.Context, reg *registry, c claim[cfapi.Queue], takeOverFrom string) (cfapi.Queue, bool, error) {
	owner := c.ownership.Owner
	if owner == "" {
		return c.run(ctx)
	}
	if ok, err := reg.find(ctx); err != nil || !ok {
		if err != nil {
			return cfapi.Queue{}, false, err
		}
		return c.run(ctx)
	}
	before, err := reg.owner(ctx, registryQueue, c.name)
	if err != nil {
		return cfapi.Queue{}, false, err
	}
	if before != "" && before != owner && before != takeOverFrom {
		return c.run(ctx)
	}
	holder, err := reg.record(ctx, registryQueue, c.name, owner, takeOverFrom)
	if err != nil {
		return cfapi.Queue{}, false, err
	}
	if holder != owner {
		return c.run(ctx)
	}
	created, createErr := c.create(ctx)
	if createErr == nil {
		return created, false, nil
	}
	existing, found, err := c.find(ctx)
	if err != nil {
		return cfapi.Queue{}, false, fmt.Errorf("%w (and then, looking for a queue in the way: %w)", createErr, err)
	}
	if !found {
		// The record stays, as a crash after it would leave it: the next
		// run goes on from it.
		return cfapi.Queue{}, false, createErr
	}
	c.evidence = func(context.Context, cfapi.Queue) (string, bool, error) { return before, false, nil }
	q, adopted, err := c.decide(ctx, existing)
	if err != nil && before == "" {
		if ferr := reg.forget(ctx, registryQueue, c.name, owner); ferr != nil {
			err = fmt.Errorf("%w (and withdrawing this run's record of the name failed: %w)", err, ferr)
		}
	}
	return q, adopted, err
}

// Update sees adoptExisting and the ownership inputs change; a new name
// replaces. A new owner (a queue in a state written before queues were
// recorded, or a stack whose identity changed) is recorded in the
// registry, refused when another installation holds the name.
func (*Queue) Update(ctx context.Context, req infer.UpdateRequest[QueueArgs, QueueState]) (infer.UpdateResponse[QueueState], error) {
	state := req.State
	state.QueueArgs = req.Inputs
	owner := req.Inputs.Owner
	if req.DryRun || owner == "" || owner == req.State.Owner {
		return infer.UpdateResponse[QueueState]{Output: state}, nil
	}
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return infer.UpdateResponse[QueueState]{}, err
	}
	holder, err := newRegistry(client).record(ctx, registryQueue, req.Inputs.Name, owner, req.State.Owner, req.Inputs.TakeOverFrom)
	if err != nil {
		return infer.UpdateResponse[QueueState]{}, err
	}
	if holder != owner {
		c := claim[cfapi.Queue]{kind: "queue", ownership: req.Inputs.Ownership}
		return infer.UpdateResponse[QueueState]{}, c.foreign(fmt.Sprintf("queue %q (id %s) in account %s is in this stack's "+
			"state, but the account's ownership registry records that it", req.Inputs.Name, req.ID, client.AccountID()), holder)
	}
	return infer.UpdateResponse[QueueState]{Output: state}, nil
}

// Read refreshes the queue; it also serves `pulumi import` by queue ID.
func (*Queue) Read(ctx context.Context, req infer.ReadRequest[QueueArgs, QueueState]) (infer.ReadResponse[QueueArgs, QueueState], error) {
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return infer.ReadResponse[QueueArgs, QueueState]{}, err
	}
	q, err := client.GetQueue(ctx, req.ID)
	if cfapi.IsNotFound(err) {
		return infer.ReadResponse[QueueArgs, QueueState]{}, nil
	}
	if err != nil {
		return infer.ReadResponse[QueueArgs, QueueState]{}, err
	}
	inputs := req.Inputs
	inputs.Name = q.Name
	state := req.State
	state.QueueArgs = inputs
	state.QueueID, state.AccountID = q.ID, client.AccountID()
	return infer.ReadResponse[QueueArgs, QueueState]{ID: q.ID, Inputs: inputs, State: state}, nil
}

// Delete removes the queue and any messages in it, then its record in the
// account's ownership registry. A queue the registry records for another
// installation (one that took it over) is left in place.
func (*Queue) Delete(ctx context.Context, req infer.DeleteRequest[QueueState]) (infer.DeleteResponse, error) {
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	reg := newRegistry(client)
	holder, err := reg.owner(ctx, registryQueue, req.State.Name)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	if holder != "" && holder != req.State.Owner {
		p.GetLogger(ctx).Warningf("queue %q (id %s) is recorded for installation %s in %s, not for this one (%s): "+
			"left in place, only removed from this stack", req.State.Name, req.ID, holder, reg.where(), family.DisplayOwner(req.State.Owner))
		return infer.DeleteResponse{}, nil
	}
	if err := client.DeleteQueue(ctx, req.ID); err != nil {
		return infer.DeleteResponse{}, err
	}
	if holder == "" {
		return infer.DeleteResponse{}, nil
	}
	return infer.DeleteResponse{}, reg.forget(ctx, registryQueue, req.State.Name, holder)
}
