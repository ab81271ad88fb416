package conformance_test

import (
	"fmt"
	"reflect"
	"strings"
)

// apiField is what cloudflare-go's decoder records of each field it
// decoded (its internal apijson.Field): whether the JSON had it, and
// whether its value fit the declared type.
type apiField interface {
	IsNull() bool
	IsMissing() bool
	IsInvalid() bool
	Raw() string
}

// shapeProblems lists where a decoded answer departs from the shape the
// SDK declares: a value of another type than the field's (the decoder keeps
// the zero value and marks the field invalid, so a program reading it sees
// nothing wrong), and a field the SDK declares required that the answer
// lacks. Each problem is named by its JSON path under root.
func shapeProblems(root string, v any) []string {
	var out []string
	walkShape(reflect.ValueOf(v), root, &out, map[uintptr]bool{})
	return out
}

func walkShape(v reflect.Value, path string, out *[]string, seen map[uintptr]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		walkShape(v.Elem(), path, out, seen)
	case reflect.Interface:
		if !v.IsNil() {
			walkShape(v.Elem(), path, out, seen)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkShape(v.Index(i), fmt.Sprintf("%s[%d]", path, i), out, seen)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			walkShape(iter.Value(), fmt.Sprintf("%s[%v]", path, iter.Key()), out, seen)
		}
	case reflect.Struct:
		walkStruct(v, path, out, seen)
	}
}

func walkStruct(v reflect.Value, path string, out *[]string, seen map[uintptr]bool) {
	t := v.Type()
	meta := v.FieldByName("JSON")
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Name == "JSON" {
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" {
			continue
		}
		if meta.IsValid() && meta.Kind() == reflect.Struct {
			if fv := meta.FieldByName(f.Name); fv.IsValid() && fv.CanInterface() {
				if af, ok := fv.Interface().(apiField); ok {
					switch {
					case af.IsInvalid():
						*out = append(*out, fmt.Sprintf("%s.%s is %s, which does not fit the declared %s", path, name, af.Raw(), f.Type))
						continue
					case af.IsMissing() && strings.Contains(opts, "required"):
						*out = append(*out, fmt.Sprintf("%s.%s is declared required and is missing", path, name))
						continue
					case af.IsNull():
						continue // absent or null: nothing inside to check
					}
				}
			}
		}
		walkShape(v.Field(i), path+"."+name, out, seen)
	}
	// A union's variant carries its own field records.
	if m := v.MethodByName("AsUnion"); m.IsValid() && m.Type().NumIn() == 0 && m.Type().NumOut() == 1 {
		walkShape(m.Call(nil)[0], path, out, seen)
	}
}
