package installation

import (
	"fmt"
	"math"
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

// maxExactInt is the largest whole number every engine language carries
// exactly (2^53): inputs travel as float64.
const maxExactInt = 1 << 53

// checkKinds compares v with the Go type t the SDK decodes it into.
func checkKinds(errs *problems, path string, t reflect.Type, v property.Value, secret bool) {
	secret = secret || v.Secret()
	if v.IsNull() {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// Only a field of an Input type takes a secret or another resource's
	// output; the SDK refuses one anywhere else with an error naming
	// only the top-level input ("expected destination type to implement
	// pulumi.Input").
	if !t.Implements(inputType) && (v.Secret() || v.IsComputed() || len(v.Dependencies()) > 0) {
		errs.add(path, "must be a plain value known at preview, not a secret or another resource's output: %s", plainReason(path))
		return
	}
	if v.IsComputed() {
		return
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
			return
		}
		// The SDK truncates a fraction and wraps a value past int64, so
		// 2.5 CPUs would deploy as 2 and 1e20 be reported as a negative.
		n := v.AsNumber()
		switch {
		case secret && (n != math.Trunc(n) || math.Abs(n) > maxExactInt):
			errs.add(path, "must be a whole number of at most %d", int64(maxExactInt))
		case n != math.Trunc(n):
			errs.add(path, "must be a whole number, got %s: write %s or %s",
				strconv.FormatFloat(n, 'f', -1, 64), strconv.FormatFloat(math.Floor(n), 'f', -1, 64), strconv.FormatFloat(math.Ceil(n), 'f', -1, 64))
		case math.Abs(n) > maxExactInt:
			errs.add(path, "%s is too large: a whole number of at most %d", strconv.FormatFloat(n, 'g', -1, 64), int64(maxExactInt))
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

var inputType = reflect.TypeFor[pulumi.Input]()

// plainReason says why the component needs the field's value before
// anything is created.
func plainReason(path string) string {
	top, _, _ := strings.Cut(path, ".")
	top, _, _ = strings.Cut(top, "[")
	switch top {
	case "deploymentName", "namePrefix":
		return "every resource of the installation is named from it, and names are checked before anything is created"
	case "appName", "appIconUrl":
		return "it is compiled into the web build and written into the workers' vars"
	case "webAppUrl", "web":
		return "the web's origin is checked and written into the control plane's vars when the installation is planned"
	case "sandbox":
		return "the sandbox backend's settings are checked and written into the workers' vars when the installation is planned; " +
			"give the value itself (a config value or a literal), or pass a secret through the fields marked secret " +
			"(of the plain settings, only the backend's apiUrl may be another resource's output)"
	}
	return "the component plans the installation from it before anything is created; give the value itself " +
		"(a config value or a literal), and pass secrets only through the fields marked secret"
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
