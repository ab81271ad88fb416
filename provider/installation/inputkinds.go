package installation

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Stage 0: the inputs' kinds, before they are decoded into OpenInspectArgs.
// A YAML program's `deploymentName: 123` arrives as a number, and decoding
// it fails with the SDK's "failed to copy inputs" and no field a user
// recognises; this says which input and what to write instead.

// CheckInputKinds reports each input whose value has the wrong kind (a
// number where a string belongs, a string where a list belongs, ...), by
// its field path. Unknown and secret values are looked into without being
// quoted; a secret's value is never printed.
func CheckInputKinds(inputs property.Map) error {
	var errs problems
	checkKinds(&errs, "", reflect.TypeFor[OpenInspectArgs](), property.New(inputs), false)
	if len(errs) == 0 {
		return nil
	}
	return specError(errs)
}

var stringInputType = reflect.TypeFor[pulumi.StringInput]()

// checkKinds compares v with the Go type t the SDK decodes it into.
func checkKinds(errs *problems, path string, t reflect.Type, v property.Value, secret bool) {
	secret = secret || v.Secret()
	if v.IsComputed() || v.IsNull() {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	wrong := func(want, hint string) {
		got := kindName(v)
		switch {
		case secret: // the kind only
		case v.IsNumber():
			got = "the number " + strconv.FormatFloat(v.AsNumber(), 'f', -1, 64)
		case v.IsBool():
			got = "the boolean " + strconv.FormatBool(v.AsBool())
		}
		errs.add(path, "must be %s, got %s%s", want, got, hint)
	}
	switch {
	case t == stringInputType || t.Kind() == reflect.String:
		if !v.IsString() {
			hint := ""
			if v.IsNumber() || v.IsBool() {
				hint = ": quote it (in YAML, write it in quotes)"
			}
			wrong("a string", hint)
		}
	case t.Kind() == reflect.Bool:
		if !v.IsBool() {
			wrong("true or false", "")
		}
	case t.Kind() == reflect.Int:
		if !v.IsNumber() {
			wrong("a number", "")
		}
	case t.Kind() == reflect.Slice:
		if !v.IsArray() {
			wrong("a list", "")
			return
		}
		for i, e := range v.AsArray().All {
			checkKinds(errs, fmt.Sprintf("%s[%d]", path, i), t.Elem(), e, secret)
		}
	case t.Kind() == reflect.Map:
		if !v.IsMap() {
			wrong("a map", "")
			return
		}
		for k, e := range v.AsMap().All {
			checkKinds(errs, path+"."+k, t.Elem(), e, secret)
		}
	case t.Kind() == reflect.Struct:
		if !v.IsMap() {
			wrong("an object", "")
			return
		}
		m := v.AsMap()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("pulumi"), ",")
			if name == "" {
				continue
			}
			if e, ok := m.GetOk(name); ok {
				checkKinds(errs, joinPath(path, name), f.Type, e, secret || slices.Contains(strings.Split(f.Tag.Get("provider"), ","), "secret"))
			}
		}
	}
}

// kindName names a value's kind as a user reads it.
func kindName(v property.Value) string {
	switch {
	case v.IsString():
		return "a string"
	case v.IsNumber():
		return "a number"
	case v.IsBool():
		return "a boolean"
	case v.IsArray():
		return "a list"
	case v.IsMap():
		return "an object"
	}
	return "an asset or resource reference"
}

func joinPath(base, field string) string {
	if base == "" {
		return field
	}
	return base + "." + field
}

// NumericIDs turns githubApp.appId and githubApp.installationId given as
// whole numbers into their decimal strings. Both are numbers GitHub shows,
// and a YAML program's `appId: 123456` (or a config value interpolated into
// it) arrives as a number; the component keeps them as strings, as upstream
// passes them to the workers. Anything else is left for CheckInputKinds.
func NumericIDs(inputs property.Map) property.Map {
	app, ok := inputs.GetOk("githubApp")
	if !ok || !app.IsMap() {
		return inputs
	}
	m := app.AsMap()
	changed := false
	for _, key := range []string{"appId", "installationId"} {
		v, ok := m.GetOk(key)
		if !ok || !v.IsNumber() {
			continue
		}
		n := v.AsNumber()
		if n < 1 || n != float64(int64(n)) || n > 1<<53 {
			continue
		}
		m = m.Set(key, property.New(strconv.FormatInt(int64(n), 10)).WithSecret(v.Secret()).WithDependencies(v.Dependencies()))
		changed = true
	}
	if !changed {
		return inputs
	}
	return inputs.Set("githubApp", property.New(m).WithSecret(app.Secret()).WithDependencies(app.Dependencies()))
}
