package family_test

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"

	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

func TestIsUnknownFollowsThePath(t *testing.T) {
	computed := property.New(property.Computed)
	inputs := property.NewMap(map[string]property.Value{
		"name": property.New("w"),
		"assets": property.New(map[string]property.Value{
			"directory": computed,
			"binding":   property.New("ASSETS"),
		}),
		// A secret map with one computed value, as the engine sends it.
		"secrets": property.New(map[string]property.Value{
			"KNOWN":   property.New("v"),
			"PENDING": computed.WithSecret(true),
		}).WithSecret(true),
		"services": property.New([]property.Value{
			property.New(map[string]property.Value{"binding": property.New("A"), "service": property.New("a")}),
			property.New(map[string]property.Value{"binding": property.New("B"), "service": computed}),
		}),
		"crons": computed,
		"files": property.New(map[string]property.Value{"/a.b[c]": computed}),
	})
	for path, want := range map[string]bool{
		"name":                 false,
		"assets":               true, // a container with a computed field inside
		"assets.directory":     true,
		"assets.binding":       false,
		"assets.files":         false, // absent
		"secrets":              true,
		"secrets.KNOWN":        false,
		"secrets.PENDING":      true,
		"services[0].service":  false,
		"services[1].service":  true,
		"services[1].binding":  false,
		"services[7].service":  false, // past the end
		"crons":                true,
		"crons[2]":             true, // under a computed list
		`files["/a.b[c]"]`:     true,
		`files["/other"]`:      false,
		"missing.deeper[0].x":  false,
		"":                     false,
		"services[x]":          false, // does not parse
		`files["/a.b[c]"`:      false,
		"secrets.PENDING.deep": true, // below a computed value
	} {
		assert.Equal(t, want, family.IsUnknown(inputs, path), "IsUnknown(%q)", path)
	}
}

func TestKnownFailuresDropsOnlyUnknownFields(t *testing.T) {
	inputs := property.NewMap(map[string]property.Value{
		"a": property.New(property.Computed),
		"b": property.New(""),
	})
	got := family.KnownFailures(inputs, []p.CheckFailure{{Property: "a", Reason: "empty"}, {Property: "b", Reason: "empty"}, {Reason: "general"}})
	assert.Equal(t, []p.CheckFailure{{Property: "b", Reason: "empty"}, {Reason: "general"}}, got)
}

func TestKeyPathQuotesWhatIsNotAPlainName(t *testing.T) {
	assert.Equal(t, "vars.MY-VAR", family.KeyPath("vars", "MY-VAR"))
	assert.Equal(t, `files["/index.html"]`, family.KeyPath("files", "/index.html"))
	assert.Equal(t, `vars[""]`, family.KeyPath("vars", ""))
}
