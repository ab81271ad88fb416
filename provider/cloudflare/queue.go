package cloudflare

import (
	"context"
	"fmt"
	"regexp"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/common"
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
		"Unlike the other Cloudflare resources, a queue records no owning installation: Cloudflare's API keeps "+
		"nothing on a queue but its name and settings. Pulumi state and the account's name uniqueness protect it, "+
		"and `adoptExisting` is the only way to take over one that already exists.")
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
	if err != nil || len(failures) > 0 || common.IsUnknown(req.NewInputs, "name") {
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
	q, adopted, err := claim[cfapi.Queue]{
		kind: "queue", name: req.Inputs.Name,
		adopt: req.Inputs.AdoptExisting, accountID: client.AccountID(),
		find: func(ctx context.Context) (cfapi.Queue, bool, error) {
			return client.FindQueue(ctx, req.Inputs.Name)
		},
		create: func(ctx context.Context) (cfapi.Queue, error) {
			return client.CreateQueue(ctx, req.Inputs.Name)
		},
		id: func(q cfapi.Queue) string { return q.ID },
	}.run(ctx)
	if err != nil {
		return infer.CreateResponse[QueueState]{}, err
	}
	state.QueueID, state.AccountID, state.Adopted = q.ID, client.AccountID(), adopted
	return infer.CreateResponse[QueueState]{ID: q.ID, Output: state}, nil
}

// Update only ever sees adoptExisting change; a new name replaces.
func (*Queue) Update(_ context.Context, req infer.UpdateRequest[QueueArgs, QueueState]) (infer.UpdateResponse[QueueState], error) {
	state := req.State
	state.QueueArgs = req.Inputs
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

// Delete removes the queue and any messages in it.
func (*Queue) Delete(ctx context.Context, req infer.DeleteRequest[QueueState]) (infer.DeleteResponse, error) {
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	return infer.DeleteResponse{}, client.DeleteQueue(ctx, req.ID)
}
