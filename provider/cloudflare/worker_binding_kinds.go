package cloudflare

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
)

// How a binding kind is declared once (worker_bindings.go's tables) and
// what reads the declaration: the upload (declaredBindings), Check
// (validate), Diff (workerDiff), import (argsFromSettings) and the schema's
// descriptions (describeFields, from each type's Annotate).

// failFunc reports a problem with the input at field (a path such as
// "hyperdrives[0].id").
type failFunc = func(field, format string, args ...any)

// kindDocs are one kind's descriptions: its input's, its element type's,
// and each element field's by its Pulumi name.
type kindDocs struct {
	input  string
	elem   string
	fields map[string]string
}

// bindingKind is one binding kind the Worker takes as a list input.
type bindingKind interface {
	// input is the kind's Pulumi input name, e.g. "d1Databases".
	input() string
	// cloudflareType is the API's `type`; "" for otherBindings, whose
	// entries name their own.
	cloudflareType() string
	docs() kindDocs
	elemType() reflect.Type
	declare(a WorkerArgs, add func(path string, b cfapi.Binding))
	check(a WorkerArgs, fail failFunc, unknown func(string) bool)
	diff(c *workerChanges, olds, news WorkerArgs)
	// read adds b to the import's inputs when it is of this kind and
	// import reads the kind back.
	read(a *WorkerArgs, b cfapi.Binding) bool
}

// listKind declares a binding kind whose input is a list of T.
type listKind[T any] struct {
	name string // the input
	typ  string // the API's type
	doc  kindDocs
	list func(a *WorkerArgs) *[]T
	// upload converts one entry to the upload metadata's binding, its Name
	// set (the entry's binding name, which is also its diff key) and its
	// Type left to typ unless the entry names its own.
	upload func(x T, a WorkerArgs) cfapi.Binding
	// validate reports what is wrong with one entry's own fields; at names
	// a field of the entry. Names and clashes are checked across kinds.
	validate func(x T, at func(field string) string, a WorkerArgs, fail failFunc, unknown func(string) bool)
	// fromAPI is the entry an import reads from a binding of typ; nil when
	// import leaves the kind to the program.
	fromAPI func(b cfapi.Binding) T
}

func (k listKind[T]) input() string          { return k.name }
func (k listKind[T]) cloudflareType() string { return k.typ }
func (k listKind[T]) docs() kindDocs         { return k.doc }
func (k listKind[T]) elemType() reflect.Type { return reflect.TypeFor[T]() }

func (k listKind[T]) binding(x T, a WorkerArgs) cfapi.Binding {
	b := k.upload(x, a)
	if b.Type == "" {
		b.Type = k.typ
	}
	return b
}

func (k listKind[T]) declare(a WorkerArgs, add func(path string, b cfapi.Binding)) {
	for i, x := range *k.list(&a) {
		add(fmt.Sprintf("%s[%d].binding", k.name, i), k.binding(x, a))
	}
}

func (k listKind[T]) check(a WorkerArgs, fail failFunc, unknown func(string) bool) {
	if k.validate == nil {
		return
	}
	for i, x := range *k.list(&a) {
		at := func(field string) string { return fmt.Sprintf("%s[%d].%s", k.name, i, field) }
		k.validate(x, at, a, fail, unknown)
	}
}

// diff names each entry that moved, matched by binding name; every binding
// change needs an upload.
func (k listKind[T]) diff(c *workerChanges, olds, news WorkerArgs) {
	name := func(x T) string { return k.upload(x, news).Name }
	byKey(c, k.name, *k.list(&olds), *k.list(&news), name, &c.settings)
}

func (k listKind[T]) read(a *WorkerArgs, b cfapi.Binding) bool {
	if k.fromAPI == nil || b.Type != k.typ {
		return false
	}
	list := k.list(a)
	*list = append(*list, k.fromAPI(b))
	return true
}

// readBinding adds b to an import's inputs when one of Open-Inspect's kinds
// reads it back, and says whether one did.
func readBinding(a *WorkerArgs, b cfapi.Binding) bool {
	for _, k := range workerBindingKinds {
		if k.read(a, b) {
			return true
		}
	}
	return false
}

// describeFields describes the fields of the struct ptr points to from
// docs, by Pulumi name. A name that matches no field panics: the schema is
// built at start-up and in every schema test, so a stale entry is caught.
func describeFields(an infer.Annotator, ptr any, docs map[string]string) {
	v := reflect.ValueOf(ptr).Elem()
	found := 0
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("pulumi"), ",")
		if doc, ok := docs[name]; ok && !f.Anonymous {
			an.Describe(v.Field(i).Addr().Interface(), doc)
			found++
		}
	}
	if found != len(docs) {
		panic(fmt.Sprintf("describeFields %T: %d of %d descriptions name no field", ptr, len(docs)-found, len(docs)))
	}
}

// inputDocs are the input descriptions of kinds, by input name.
func inputDocs(kinds []bindingKind) map[string]string {
	docs := map[string]string{}
	for _, k := range kinds {
		docs[k.input()] = k.docs().input
	}
	return docs
}

// describeType describes the type ptr points to (*T) and its fields, from
// typeDocs or else from the first binding kind of that type: kinds sharing
// one (NamedBinding) share its text.
func describeType(an infer.Annotator, ptr any) {
	t := reflect.TypeOf(ptr).Elem()
	docs, ok := typeDocs[t]
	for _, k := range allBindingKinds() {
		if !ok && k.elemType() == t {
			docs, ok = k.docs(), true
		}
	}
	if !ok {
		panic(fmt.Sprintf("describeType: %s has no descriptions", t))
	}
	if docs.elem != "" {
		an.Describe(ptr, docs.elem)
	}
	describeFields(an, ptr, docs.fields)
}

// allBindingKinds are the kinds in declaration order: Open-Inspect's, then
// the others.
func allBindingKinds() []bindingKind {
	return append(append([]bindingKind{}, workerBindingKinds...), moreBindingKinds...)
}
