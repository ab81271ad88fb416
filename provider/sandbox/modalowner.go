package sandbox

import (
	"context"
	"fmt"
	"slices"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/modalapi"
)

// modalOwnerPrefix names the ownership evidence of a Modal environment: the
// named secret modalOwnerPrefix+<installation identity>. Modal keeps no
// tags an app could carry from before its deploy, and never lets a client
// read a secret's values back, only list secret names; so the identity is
// in the name, and the secret exists before `modal deploy` starts (a
// provider killed mid-deploy leaves it behind). One evidence secret covers
// the environment: upstream's app and secret names are fixed, so an
// environment holds one installation.
const modalOwnerPrefix = "openinspect-owner-"

// modalAdoptHint is what to do about an unowned app in the way: the inputs
// that really work, for a component child and for a standalone resource.
const modalAdoptHint = "set adoptExisting: true on the OpenInspect component (or on the ModalApp, when it is declared on its own) " +
	"to take it over, or stop it (modal app stop)"

// modalOwners lists the installations the environment's evidence names.
func modalOwners(ctx context.Context, client *modalapi.Client) ([]string, error) {
	names, err := client.SecretNames(ctx, modalOwnerPrefix)
	if err != nil {
		return nil, fmt.Errorf("reading the Modal ownership evidence: %w", err)
	}
	owners := make([]string, 0, len(names))
	for _, n := range names {
		owners = append(owners, strings.TrimPrefix(n, modalOwnerPrefix))
	}
	return owners, nil
}

// markModal records owner as the environment's ("" records nothing).
func markModal(ctx context.Context, client *modalapi.Client, owner, appName string) error {
	if owner == "" {
		return nil
	}
	err := client.UpsertSecret(ctx, modalOwnerPrefix+owner, map[string]string{
		"OPENINSPECT_INSTALLATION": owner, "OPENINSPECT_MODAL_APP": appName})
	if err != nil {
		return fmt.Errorf("recording installation %s in the Modal environment: %w", owner, err)
	}
	return nil
}

// claimModal decides whether a create may go on in the environment, and
// records this installation there before anything is deployed. The
// environment's evidence decides, as for the Cloudflare objects:
//   - it records this installation: go on, adopting an app already
//     deployed (a deploy a killed run finished but never recorded);
//   - it records another installation: refused, naming it, even with
//     adoptExisting (that installation's secrets and app live there),
//     unless takeOverFrom names it;
//   - it records nothing: a deployed app needs adoptExisting.
func claimModal(ctx context.Context, client *modalapi.Client, args ModalAppArgs, appName string, env modalapi.EnvironmentInfo,
	existing modalapi.App, found bool) error {
	log := p.GetLogger(ctx)
	owners, err := modalOwners(ctx, client)
	if err != nil {
		return err
	}
	mine := args.Owner
	where := fmt.Sprintf("Modal environment %q of workspace %q", env.Name, env.Workspace)
	if found {
		where = fmt.Sprintf("modal app %q is already deployed in environment %q of workspace %q (app id %s)",
			appName, env.Name, env.Workspace, existing.ID)
	}
	var others []string
	for _, o := range owners {
		if o != mine {
			others = append(others, o)
		}
	}
	takeOver := args.TakeOverFrom != "" && slices.Contains(others, args.TakeOverFrom)
	switch {
	case mine != "" && slices.Contains(owners, mine):
		if found {
			log.Infof("%s and the environment records this installation (%s): adopting it, a deploy an interrupted run never recorded", where, mine)
		}
	case takeOver:
		log.Warningf("%s and the environment belongs to installation %s: taking it over as takeOverFrom asks. "+
			"That installation's destroy can still stop the app; remove it from that stack first (pulumi state delete there)",
			where, args.TakeOverFrom)
	case len(others) > 0:
		if found {
			where += " and the environment"
		}
		return fmt.Errorf("%s belongs to installation %s (Modal secret %s%s), not this one (%s); adoptExisting never takes over "+
			"another installation's app, since either stack's destroy would stop it. Give this installation its own Modal "+
			"environment (openinspect:modalEnvironment) or, to move the app into this installation, set takeOverFrom: %s "+
			"on the OpenInspect component",
			where, others[0], modalOwnerPrefix, others[0], family.DisplayOwner(mine), others[0])
	case found && !args.AdoptExisting:
		return fmt.Errorf("%s, records no installation and is not managed by this stack: upstream's app and secret names "+
			"are fixed, so each installation needs its own Modal environment (openinspect:modalEnvironment); %s",
			where, modalAdoptHint)
	}
	if mine != "" && !slices.Contains(owners, mine) {
		if err := markModal(ctx, client, mine, appName); err != nil {
			return err
		}
	}
	if takeOver {
		if err := client.DeleteSecret(ctx, modalOwnerPrefix+args.TakeOverFrom); err != nil {
			return fmt.Errorf("removing installation %s's ownership evidence: %w", args.TakeOverFrom, err)
		}
	}
	return nil
}
