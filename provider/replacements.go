package provider

import (
	"context"
	"maps"
	"slices"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/provider/tenant"
	"github.com/openinspect/pulumi-openinspect/provider/vercel"
)

// replacementReasons say, for each resource and property whose change
// replaces the resource, why it cannot change in place and what the
// replacement does. The engine marks a replacement with +- and names the
// property; the reason is what a reviewer of `pulumi preview` needs next.
var replacementReasons = map[string]map[string]string{
	cloudflare.WorkerToken: {
		"name": "a Worker is its script name: a script under the new name is uploaded, then the old script is deleted with its secrets and workers.dev route",
	},
	cloudflare.D1DatabaseToken: {
		"name":                "D1 cannot rename a database: a new, empty database is created and the old one deleted with its data",
		"primaryLocationHint": "D1 places a database once, at creation: a new, empty database is created and the old one deleted with its data",
	},
	cloudflare.R2BucketToken: {
		"name":         "R2 cannot rename a bucket: a new, empty bucket is created and the old one deleted (refused while it holds objects)",
		"locationHint": "R2 places a bucket once, at creation: a new, empty bucket is created and the old one deleted (refused while it holds objects)",
	},
	cloudflare.QueueToken: {
		"name": "workers bind a queue by name: a new queue is created and the old one deleted with any messages in it",
	},
	cloudflare.D1MigrationsToken: {
		"databaseId": "the ledger belongs to one database: every migration is applied to the new database",
	},
	tenant.GeneratedSecretToken: {
		"length":   "a new value is generated",
		"alphabet": "a new value is generated",
		"keepers":  "a keeper changed, which is what asks for a new value",
	},
	tenant.AppSecretsToken: {
		"controlPlaneUrl": "the secrets are seeded into the new control plane, and pruned from the old one",
	},
	vercel.VercelProjectToken: {
		"name":   "the project's name is its identity in the team: a new project is created with the variables, and the old one deleted with its deployments",
		"teamId": "Vercel cannot move a project between teams here: a new project is created in the new team, and the old one deleted with its deployments",
	},
	sandbox.ModalAppToken: {
		"appName":     "Modal cannot rename a deployed app: the old app is stopped first, then the new one deployed",
		"environment": "Modal cannot move an app between environments: the old app is stopped first, then deployed in the new environment",
	},
}

// explainReplacements wraps a provider so that every diff that replaces a
// resource logs, per property, why: "replaces: name: <reason>".
func explainReplacements(inner p.Provider) p.Provider {
	diff := inner.Diff
	if diff == nil {
		return inner
	}
	inner.Diff = func(ctx context.Context, req p.DiffRequest) (p.DiffResponse, error) {
		resp, err := diff(ctx, req)
		if err == nil {
			if why := whyReplaced(req.Urn.Type().String(), resp); len(why) > 0 {
				p.GetLogger(ctx).Infof("replaces: %s", strings.Join(why, "; "))
			}
		}
		return resp, err
	}
	return inner
}

// whyReplaced lists "<property>: <reason>" for each property of
// resp that replaces a resource of type token.
func whyReplaced(token string, resp p.DiffResponse) []string {
	var out []string
	for _, key := range slices.Sorted(maps.Keys(resp.DetailedDiff)) {
		switch resp.DetailedDiff[key].Kind {
		case p.AddReplace, p.UpdateReplace, p.DeleteReplace:
		default:
			continue
		}
		reason, ok := replacementReasons[token][key]
		if !ok {
			reason = "this property cannot change in place, so the resource is created anew and the old one deleted"
		}
		out = append(out, key+": "+reason)
	}
	return out
}
