package cloudflare

import (
	"context"
	"fmt"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// KvNamespace is a Workers KV namespace, created by title.
type KvNamespace struct{}

const KvNamespaceToken = "openinspect:index:KvNamespace"

// KvNamespaceArgs are the inputs of a KvNamespace.
type KvNamespaceArgs struct {
	Title         string `pulumi:"title"`
	AdoptExisting bool   `pulumi:"adoptExisting,optional"`
	Ownership
}

// KvNamespaceState is what the provider records about a KvNamespace.
type KvNamespaceState struct {
	KvNamespaceArgs
	NamespaceID string `pulumi:"namespaceId"`
	AccountID   string `pulumi:"accountId"`
	Adopted     bool   `pulumi:"adopted"`
}

var (
	_ infer.CustomCheck[KvNamespaceArgs]                    = (*KvNamespace)(nil)
	_ infer.CustomUpdate[KvNamespaceArgs, KvNamespaceState] = (*KvNamespace)(nil)
	_ infer.CustomRead[KvNamespaceArgs, KvNamespaceState]   = (*KvNamespace)(nil)
	_ infer.CustomDelete[KvNamespaceState]                  = (*KvNamespace)(nil)
)

// Annotate documents the resource.
func (r *KvNamespace) Annotate(a infer.Annotator) {
	a.Describe(r, "A Workers KV namespace, created by title in the configured account. Changing the title renames it in place.\n\n"+
		"The owning installation (`owner`) is recorded in the namespace itself, as the value of the key "+
		"`_openinspect_owner`. A namespace that already exists with the title is adopted when it records this owner, "+
		"or when it holds no key at all (nothing anyone could lose); one recording another installation is refused "+
		"unless `takeOverFrom` names it; any other needs `adoptExisting`, or "+
		"`pulumi import openinspect:index:KvNamespace <name> <namespace id>` when declared on its own.")
}

// Annotate documents the inputs.
func (a *KvNamespaceArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Title, "Namespace title, unique in the account. Changing it renames the namespace in place.")
	an.Describe(&a.AdoptExisting, "Take over a namespace that already exists with this title instead of failing with a conflict.")
}

// Annotate documents the outputs.
func (s *KvNamespaceState) Annotate(a infer.Annotator) {
	a.Describe(&s.NamespaceID, "The namespace ID, used by `kv_namespace` worker bindings.")
	a.Describe(&s.AccountID, "The Cloudflare account the namespace lives in.")
	a.Describe(&s.Adopted, "Whether the namespace existed before and was adopted rather than created.")
}

// KVTitleProblem says what is wrong with a KV namespace title, or "".
func KVTitleProblem(title string) string {
	if title == "" || len(title) > 512 {
		return fmt.Sprintf("KV namespace title must be 1-512 characters, got %d", len(title))
	}
	return ""
}

// Check validates the title before any remote call.
func (*KvNamespace) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[KvNamespaceArgs], error) {
	args, failures, err := infer.DefaultCheck[KvNamespaceArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 || family.IsUnknown(req.NewInputs, "title") {
		return infer.CheckResponse[KvNamespaceArgs]{Inputs: args, Failures: failures}, err
	}
	if problem := KVTitleProblem(args.Title); problem != "" {
		failures = append(failures, p.CheckFailure{Property: "title", Reason: problem})
	}
	return infer.CheckResponse[KvNamespaceArgs]{Inputs: args, Failures: failures}, nil
}

// Create creates the namespace, or adopts an existing one when asked to.
func (*KvNamespace) Create(ctx context.Context, req infer.CreateRequest[KvNamespaceArgs]) (infer.CreateResponse[KvNamespaceState], error) {
	state := KvNamespaceState{KvNamespaceArgs: req.Inputs}
	if req.DryRun {
		return infer.CreateResponse[KvNamespaceState]{Output: state}, nil
	}
	client, err := config.Cloudflare(ctx)
	if err != nil {
		return infer.CreateResponse[KvNamespaceState]{}, err
	}
	ns, adopted, err := claim[cfapi.Namespace]{
		kind: "KV namespace", name: req.Inputs.Title,
		adopt: req.Inputs.AdoptExisting, accountID: client.AccountID(), ownership: req.Inputs.Ownership,
		find: func(ctx context.Context) (cfapi.Namespace, bool, error) {
			return client.FindNamespace(ctx, req.Inputs.Title)
		},
		create: func(ctx context.Context) (cfapi.Namespace, error) {
			return client.CreateNamespace(ctx, req.Inputs.Title)
		},
		taken: func(err error) bool { return cfapi.HasCode(err, cfapi.CodeNamespaceTitleTaken) },
		id:    func(ns cfapi.Namespace) string { return ns.ID },
		evidence: func(ctx context.Context, ns cfapi.Namespace) (string, bool, error) {
			return kvEvidence(ctx, client, ns.ID)
		},
		mark: func(ctx context.Context, ns cfapi.Namespace) error {
			return markKV(ctx, client, ns.ID, req.Inputs.Owner)
		},
	}.run(ctx)
	if err != nil {
		return infer.CreateResponse[KvNamespaceState]{}, err
	}
	state.NamespaceID, state.AccountID, state.Adopted = ns.ID, client.AccountID(), adopted
	return infer.CreateResponse[KvNamespaceState]{ID: ns.ID, Output: state}, nil
}

// Update renames the namespace when the title changed, and writes a new
// owner (a namespace recorded before KV carried evidence) into it.
func (*KvNamespace) Update(ctx context.Context, req infer.UpdateRequest[KvNamespaceArgs, KvNamespaceState]) (infer.UpdateResponse[KvNamespaceState], error) {
	state := req.State
	state.KvNamespaceArgs = req.Inputs
	rename := req.Inputs.Title != req.State.Title
	remark := req.Inputs.Owner != "" && req.Inputs.Owner != req.State.Owner
	if req.DryRun || (!rename && !remark) {
		return infer.UpdateResponse[KvNamespaceState]{Output: state}, nil
	}
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return infer.UpdateResponse[KvNamespaceState]{}, err
	}
	if rename {
		if err := client.RenameNamespace(ctx, req.ID, req.Inputs.Title); err != nil {
			return infer.UpdateResponse[KvNamespaceState]{}, err
		}
	}
	if remark {
		if err := markKV(ctx, client, req.ID, req.Inputs.Owner); err != nil {
			return infer.UpdateResponse[KvNamespaceState]{}, err
		}
	}
	return infer.UpdateResponse[KvNamespaceState]{Output: state}, nil
}

// Read refreshes the namespace; it also serves `pulumi import` by ID.
func (*KvNamespace) Read(ctx context.Context, req infer.ReadRequest[KvNamespaceArgs, KvNamespaceState]) (infer.ReadResponse[KvNamespaceArgs, KvNamespaceState], error) {
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return infer.ReadResponse[KvNamespaceArgs, KvNamespaceState]{}, err
	}
	ns, err := client.GetNamespace(ctx, req.ID)
	if cfapi.IsNotFound(err) {
		return infer.ReadResponse[KvNamespaceArgs, KvNamespaceState]{}, nil
	}
	if err != nil {
		return infer.ReadResponse[KvNamespaceArgs, KvNamespaceState]{}, err
	}
	inputs := req.Inputs
	inputs.Title = ns.Title
	state := req.State
	state.KvNamespaceArgs = inputs
	state.NamespaceID, state.AccountID = ns.ID, client.AccountID()
	return infer.ReadResponse[KvNamespaceArgs, KvNamespaceState]{ID: ns.ID, Inputs: inputs, State: state}, nil
}

// Delete removes the namespace and every key in it.
func (*KvNamespace) Delete(ctx context.Context, req infer.DeleteRequest[KvNamespaceState]) (infer.DeleteResponse, error) {
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	return infer.DeleteResponse{}, client.DeleteNamespace(ctx, req.ID)
}
