package provider_test

import (
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/provider/tenant"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

type M = map[string]any

// pending is a value a preview does not know yet: it depends on a resource
// not created (a generated secret, a database's ID, the rendered web).
var pending = property.New(property.Computed)

// TestCheckTreatsUnknownNestedInputsAsUnknown: at a preview, an input that
// depends on another resource is computed, often deep inside a list or an
// object. Each case Checks one resource twice with the same inputs: once with
// the field computed (no failure: the value is not known, so it cannot be
// wrong) and once with the zero value a computed field decodes as, given
// for real (the failure, naming the field). The first half failed before
// Checks looked up nested paths: the web Worker's assets.directory at every
// fresh installation's preview (issue 30).
func TestCheckTreatsUnknownNestedInputsAsUnknown(t *testing.T) {
	worker := func(extra M) M {
		out := M{"name": "oi-preview", "content": providertest.FixtureWorker}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	cases := []struct {
		name, token string
		// inputs builds the inputs with v at the field under test.
		inputs func(v any) M
		// known is the known value that is wrong; field is the failure's.
		known any
		field string
	}{
		{"worker assets.directory", cloudflare.WorkerToken, func(v any) M {
			return M{"name": "oi-web", "assets": M{"directory": v, "notFoundHandling": "single-page-application"}}
		}, "", "assets.directory"},
		{"worker assets.files entry", cloudflare.WorkerToken, func(v any) M {
			return M{"name": "oi-web", "assets": M{"files": M{"/index.html": v}}}
		}, "/nonexistent/index.html", `assets.files["/index.html"]`},
		{"worker one secret of several", cloudflare.WorkerToken, func(v any) M {
			return worker(M{"secrets": property.New(map[string]property.Value{
				"KNOWN": property.New("value"), "GENERATED": providertest.Value(t, v).WithSecret(true)}).WithSecret(true)})
		}, "", "secrets.GENERATED"},
		{"worker content", cloudflare.WorkerToken, func(v any) M { return M{"name": "oi-preview", "content": v} }, "", "content"},
		{"worker name", cloudflare.WorkerToken, func(v any) M { return worker(M{"name": v}) }, "", "name"},
		{"worker service binding target", cloudflare.WorkerToken, func(v any) M {
			return worker(M{"services": []any{M{"binding": "A", "service": "oi-a"}, M{"binding": "B", "service": v}}})
		}, "", "services[1].service"},
		{"worker d1 binding name", cloudflare.WorkerToken, func(v any) M {
			return worker(M{"d1Databases": []any{M{"binding": v, "databaseId": pending}}})
		}, "", "d1Databases[0].binding"},
		{"worker kv binding name", cloudflare.WorkerToken, func(v any) M {
			return worker(M{"kvNamespaces": []any{M{"binding": v, "namespaceId": pending}}})
		}, "bad-name", "kvNamespaces[0].binding"},
		{"worker durable object class", cloudflare.WorkerToken, func(v any) M {
			return worker(M{"durableObjects": []any{M{"binding": "SESSION", "className": v}}})
		}, "", "durableObjects[0].className"},
		{"worker one cron", cloudflare.WorkerToken, func(v any) M {
			return worker(M{"crons": []any{"* * * * *", v}})
		}, "61 * * * *", "crons[1]"},
		{"worker queue consumer setting", cloudflare.WorkerToken, func(v any) M {
			return worker(M{"queueConsumers": []any{M{"queueId": pending, "maxBatchSize": v}}})
		}, 500, "queueConsumers[0].maxBatchSize"},
		{"worker domain zone", cloudflare.WorkerToken, func(v any) M {
			return worker(M{"domains": []any{M{"hostname": "app.example.com", "zoneName": v}}})
		}, "", "domains[0].zoneId"},
		{"worker route pattern", cloudflare.WorkerToken, func(v any) M {
			return worker(M{"routes": []any{M{"pattern": v, "zoneId": "z"}}})
		}, "", "routes[0].pattern"},
		{"d1 database name", cloudflare.D1DatabaseToken, func(v any) M { return M{"name": v} }, "", "name"},
		{"d1 database location", cloudflare.D1DatabaseToken, func(v any) M { return M{"name": "oi-db", "primaryLocationHint": v} }, "mars", "primaryLocationHint"},
		{"d1 migrations budget", cloudflare.D1MigrationsToken, func(v any) M {
			return M{"databaseId": pending, "migrations": M{"0001_init.sql": "CREATE TABLE t (x);"}, "maxBatchBytes": v}
		}, 0, "maxBatchBytes"},
		{"kv namespace title", cloudflare.KvNamespaceToken, func(v any) M { return M{"title": v} }, "", "title"},
		{"r2 bucket location", cloudflare.R2BucketToken, func(v any) M { return M{"name": "oi-media", "locationHint": v} }, "mars", "locationHint"},
		{"queue name", cloudflare.QueueToken, func(v any) M { return M{"name": v} }, "", "name"},
		{"app secrets one value", tenant.AppSecretsToken, func(v any) M {
			return M{"controlPlaneUrl": "http://127.0.0.1:1", "service": "slack-bot", "serviceSecret": "s",
				"secrets": M{"KNOWN": "value", "GENERATED": v}}
		}, "", "secrets.GENERATED"},
		{"app secrets service", tenant.AppSecretsToken, func(v any) M {
			return M{"controlPlaneUrl": "http://127.0.0.1:1", "service": v, "serviceSecret": "s", "secrets": M{"K": "v"}}
		}, "web", "service"},
		{"generated secret length", tenant.GeneratedSecretToken, func(v any) M { return M{"length": v} }, 3, "length"},
		{"modal app owner", sandbox.ModalAppToken, func(v any) M { return M{"source": pending, "owner": v} }, "bad owner", "owner"},
		{"modal app secret name", sandbox.ModalAppToken, func(v any) M {
			return M{"source": pending, "secrets": []any{M{"name": v, "values": M{"KEY": pending}}}}
		}, "", "secrets[0].name"},
		{"daytona snapshot name prefix", sandbox.DaytonaSnapshotToken, func(v any) M { return M{"source": pending, "namePrefix": v} }, "", "namePrefix"},
		{"e2b template id overrides the source", sandbox.E2bTemplateToken, func(v any) M {
			return M{"source": "", "namePrefix": "oi", "apiKey": "k", "templateId": v}
		}, nil, "source"},
		{"opencomputer template overrides the source", sandbox.OpenComputerSnapshotToken, func(v any) M {
			return M{"source": "", "namePrefix": "oi", "apiKey": "k", "apiUrl": "https://api.example.com/api", "template": v}
		}, nil, "source"},
		{"vercel snapshot id overrides the source", sandbox.VercelSnapshotToken, func(v any) M {
			return M{"source": "", "namePrefix": "oi", "token": "k", "projectId": "prj", "snapshotId": v}
		}, nil, "source"},
		{"vercel project", sandbox.VercelSnapshotToken, func(v any) M {
			return M{"source": pending, "namePrefix": "oi", "token": "k", "projectId": v}
		}, "", "projectId"},
	}
	server := providertest.NewServer(t)
	check := func(t *testing.T, token string, inputs M) []p.CheckFailure {
		t.Helper()
		props := providertest.Props(t, inputs)
		for k, v := range props.All { // nil: the input left out
			if v.IsNull() {
				props = props.Delete(k)
			}
		}
		resp, err := server.Check(p.CheckRequest{Urn: providertest.URN(token, "r"), Inputs: props})
		require.NoError(t, err)
		return resp.Failures
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Empty(t, check(t, tc.token, tc.inputs(pending)), "%s is unknown at a preview, not wrong", tc.field)
			var fields []string
			for _, f := range check(t, tc.token, tc.inputs(tc.known)) {
				fields = append(fields, family.FailureField(f))
				// The engine renders a named property's input as a Go value
				// ({<nil>} for a nested path): the path is in the reason.
				assert.Empty(t, f.Property, "a failure names its field in its reason, not as a property")
				assert.True(t, strings.HasPrefix(f.Reason, family.FailureField(f)+": "), f.Reason)
			}
			assert.Contains(t, fields, tc.field, "the same inputs known and wrong fail at the field")
		})
	}
}

// A known field next to an unknown one is still checked, and a map key is
// known even when its value is not.
func TestCheckStillChecksKnownSiblingsOfUnknowns(t *testing.T) {
	server := providertest.NewServer(t)
	for _, tc := range []struct {
		name, token string
		inputs      M
		fields      []string
	}{
		{"assets handling beside an unknown directory", cloudflare.WorkerToken,
			M{"name": "oi-web", "assets": M{"directory": pending, "htmlHandling": "sometimes"}}, []string{"assets.htmlHandling"}},
		{"secret name with an unknown value", cloudflare.WorkerToken,
			M{"name": "oi-w", "content": providertest.FixtureWorker, "secrets": M{"bad-key": pending}}, []string{"secrets.bad-key"}},
		{"empty known secret beside an unknown one", cloudflare.WorkerToken,
			M{"name": "oi-w", "content": providertest.FixtureWorker, "secrets": M{"EMPTY": "", "GENERATED": pending}}, []string{"secrets.EMPTY"}},
		{"known cron beside an unknown one", cloudflare.WorkerToken,
			M{"name": "oi-w", "content": providertest.FixtureWorker, "crons": []any{pending, "61 * * * *"}}, []string{"crons[1]"}},
		{"app secret key with an unknown value", tenant.AppSecretsToken,
			M{"controlPlaneUrl": "http://127.0.0.1:1", "service": "slack-bot", "serviceSecret": "s", "secrets": M{"bad-key": pending}},
			[]string{"secrets.bad-key"}},
		{"modal env key with an unknown value", sandbox.ModalAppToken,
			M{"source": pending, "secrets": []any{M{"name": "oi", "values": M{"bad key": pending}}}}, []string{"secrets[0].values.bad key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := server.Check(p.CheckRequest{Urn: providertest.URN(tc.token, "r"), Inputs: providertest.Props(t, tc.inputs)})
			require.NoError(t, err)
			var fields []string
			for _, f := range resp.Failures {
				fields = append(fields, family.FailureField(f))
			}
			assert.ElementsMatch(t, tc.fields, fields)
		})
	}
}
