package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/provider/tenant"
)

// TestEveryReplacementHasItsReason: each property the schema marks
// replace-on-change, and each a custom diff replaces on, has its own reason.
func TestEveryReplacementHasItsReason(t *testing.T) {
	raw, err := os.ReadFile("../schema.json")
	require.NoError(t, err)
	var schema struct {
		Resources map[string]struct {
			InputProperties map[string]struct {
				ReplaceOnChanges bool `json:"replaceOnChanges"`
			} `json:"inputProperties"`
		} `json:"resources"`
	}
	require.NoError(t, json.Unmarshal(raw, &schema))
	want := map[string][]string{
		// Replaced by a custom Diff, so not marked in the schema.
		tenant.AppSecretsToken: {"controlPlaneUrl"},
		sandbox.ModalAppToken:  {"appName", "environment"},
	}
	for token, r := range schema.Resources {
		for name, prop := range r.InputProperties {
			if prop.ReplaceOnChanges {
				want[token] = append(want[token], name)
			}
		}
	}
	require.NotEmpty(t, want[cloudflare.WorkerToken], "the schema marks the Worker's name")
	for token, props := range want {
		for _, prop := range props {
			assert.NotEmpty(t, replacementReasons[token][prop], "no reason for replacing %s on %s", token, prop)
		}
	}
}

// TestReplacementIsLoggedWithItsReason runs a real Diff through the wrapped
// provider: a Worker renamed logs why it is replaced, a var change logs
// nothing.
func TestReplacementIsLoggedWithItsReason(t *testing.T) {
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	prov, err := New()
	require.NoError(t, err)
	urn := presource.NewURN("stack", "project", "", cloudflare.WorkerToken, "w")
	worker := func(name, greeting string) property.Map {
		return property.NewMap(map[string]property.Value{
			"name":              property.New(name),
			"content":           property.New("export default {}"),
			"compatibilityDate": property.New("2025-01-01"),
			"vars":              property.New(map[string]property.Value{"GREETING": property.New(greeting)}),
		})
	}
	state := worker("oi-old", "hi")
	for key, value := range map[string]property.Value{"hash": property.New("h"), "accountId": property.New("a"),
		"secretsHash": property.New("s"), "etag": property.New("e"), "adopted": property.New(false)} {
		state = state.Set(key, value)
	}
	diff := func(inputs property.Map) p.DiffResponse {
		resp, err := prov.Diff(context.Background(), p.DiffRequest{ID: "oi-old", Urn: urn, State: state,
			OldInputs: worker("oi-old", "hi"), Inputs: inputs})
		require.NoError(t, err)
		return resp
	}

	resp := diff(worker("oi-new", "hi"))
	assert.Equal(t, p.UpdateReplace, resp.DetailedDiff["name"].Kind)
	assert.Contains(t, logs.String(), "replaces: name: "+replacementReasons[cloudflare.WorkerToken]["name"])

	logs.Reset()
	resp = diff(worker("oi-old", "hello"))
	assert.True(t, resp.HasChanges)
	assert.NotContains(t, logs.String(), "replaces:")
}
