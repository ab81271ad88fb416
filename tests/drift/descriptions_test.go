package drift

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEverySchemaElementIsDescribed reads the committed schema.json (which
// TestCommittedFilesMatchGenerator ties to the provider's Annotate calls) and
// fails for each resource, function, type, enum value, property, input and
// config key whose description is empty or only restates its name: the
// generated SDK docs and the registry pages are built from these strings.
func TestEverySchemaElementIsDescribed(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "schema.json"))
	require.NoError(t, err)
	var spec schema.PackageSpec
	require.NoError(t, json.Unmarshal(raw, &spec))
	require.NotEmpty(t, spec.Resources, "schema.json has no resources")

	if missing := undescribed(spec); len(missing) > 0 {
		t.Fatalf("%d schema element(s) lack a useful description (describe them with Annotate, then run %s):\n  %s",
			len(missing), fixCommand, strings.Join(missing, "\n  "))
	}
}

// TestUndescribedElementsAreFound proves the check reports each kind of
// element, on a copy of the committed schema with one description blanked.
func TestUndescribedElementsAreFound(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "schema.json"))
	require.NoError(t, err)
	fresh := func() schema.PackageSpec {
		var spec schema.PackageSpec
		require.NoError(t, json.Unmarshal(raw, &spec))
		return spec
	}
	firstKey := func(m map[string]schema.PropertySpec) string {
		require.NotEmpty(t, m)
		return slices.Sorted(maps.Keys(m))[0]
	}
	resource := "openinspect:index:OpenInspect"
	objectType := slices.Sorted(maps.Keys(fresh().Types))[0]

	cases := []struct {
		name  string
		blank func(s *schema.PackageSpec) string // returns the element it blanked
	}{
		{"package", func(s *schema.PackageSpec) string { s.Description = ""; return "package" }},
		{"resource", func(s *schema.PackageSpec) string {
			r := s.Resources[resource]
			r.Description = "   "
			s.Resources[resource] = r
			return "resource " + resource
		}},
		{"resource output", func(s *schema.PackageSpec) string {
			r := s.Resources[resource]
			k := firstKey(r.Properties)
			p := r.Properties[k]
			p.Description = ""
			r.Properties[k] = p
			return fmt.Sprintf("resource %s output %s", resource, k)
		}},
		{"resource input restating its name", func(s *schema.PackageSpec) string {
			r := s.Resources[resource]
			k := firstKey(r.InputProperties)
			p := r.InputProperties[k]
			p.Description = k + "."
			r.InputProperties[k] = p
			return fmt.Sprintf("resource %s input %s", resource, k)
		}},
		{"type", func(s *schema.PackageSpec) string {
			ty := s.Types[objectType]
			ty.Description = ""
			s.Types[objectType] = ty
			return "type " + objectType
		}},
		{"type property", func(s *schema.PackageSpec) string {
			ty := s.Types[objectType]
			k := firstKey(ty.Properties)
			p := ty.Properties[k]
			p.Description = ""
			ty.Properties[k] = p
			return fmt.Sprintf("type %s property %s", objectType, k)
		}},
		{"config key", func(s *schema.PackageSpec) string {
			k := firstKey(s.Config.Variables)
			p := s.Config.Variables[k]
			p.Description = ""
			s.Config.Variables[k] = p
			return "config " + k
		}},
		{"provider input", func(s *schema.PackageSpec) string {
			k := firstKey(s.Provider.InputProperties)
			p := s.Provider.InputProperties[k]
			p.Description = ""
			s.Provider.InputProperties[k] = p
			return "provider input " + k
		}},
		{"function", func(s *schema.PackageSpec) string {
			s.Functions = map[string]schema.FunctionSpec{"openinspect:index:lookup": {
				Description: "Looks something up.",
				Inputs: &schema.ObjectTypeSpec{Properties: map[string]schema.PropertySpec{
					"name": {TypeSpec: schema.TypeSpec{Type: "string"}},
				}},
			}}
			return "function openinspect:index:lookup input name"
		}},
		{"enum value", func(s *schema.PackageSpec) string {
			s.Types["openinspect:index:Kind"] = schema.ComplexTypeSpec{
				ObjectTypeSpec: schema.ObjectTypeSpec{Type: "string", Description: "A kind."},
				Enum:           []schema.EnumValueSpec{{Value: "a", Description: "The a kind."}, {Value: "b"}},
			}
			return "type openinspect:index:Kind enum value b"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := fresh()
			want := tc.blank(&spec)
			assert.Equal(t, []string{want}, undescribed(spec))
		})
	}
}

// undescribed lists the schema elements without a useful description, sorted.
func undescribed(spec schema.PackageSpec) []string {
	var missing []string
	check := func(what, name, description string) {
		if !useful(name, description) {
			missing = append(missing, what)
		}
	}
	properties := func(what, kind string, props map[string]schema.PropertySpec) {
		for _, k := range slices.Sorted(maps.Keys(props)) {
			check(strings.Join(strings.Fields(what+" "+kind+" "+k), " "), k, props[k].Description)
		}
	}

	check("package", spec.Name, spec.Description)
	properties("config", "", spec.Config.Variables)
	check("provider", "provider", spec.Provider.Description)
	properties("provider", "input", spec.Provider.InputProperties)
	properties("provider", "output", spec.Provider.Properties)
	for _, tok := range slices.Sorted(maps.Keys(spec.Resources)) {
		r := spec.Resources[tok]
		what := "resource " + tok
		check(what, tok, r.Description)
		properties(what, "input", r.InputProperties)
		properties(what, "output", r.Properties)
	}
	for _, tok := range slices.Sorted(maps.Keys(spec.Functions)) {
		f := spec.Functions[tok]
		what := "function " + tok
		check(what, tok, f.Description)
		if f.Inputs != nil {
			properties(what, "input", f.Inputs.Properties)
		}
		if f.Outputs != nil {
			properties(what, "output", f.Outputs.Properties)
		}
	}
	for _, tok := range slices.Sorted(maps.Keys(spec.Types)) {
		ty := spec.Types[tok]
		what := "type " + tok
		check(what, tok, ty.Description)
		properties(what, "property", ty.Properties)
		for _, e := range ty.Enum {
			check(fmt.Sprintf("%s enum value %v", what, e.Value), fmt.Sprint(e.Value), e.Description)
		}
	}
	return missing
}

// useful reports whether description says more than the element's name: not
// blank, and not the name (or the last segment of its token) alone.
func useful(name, description string) bool {
	d := strings.ToLower(strings.Trim(strings.TrimSpace(description), ".`"))
	if d == "" {
		return false
	}
	short := name[strings.LastIndex(name, ":")+1:]
	return d != strings.ToLower(name) && d != strings.ToLower(short)
}
