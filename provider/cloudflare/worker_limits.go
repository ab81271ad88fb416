package cloudflare

import (
	"fmt"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/esm"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
)

// limitFailures checks what Cloudflare refuses at upload, so preview says it
// before anything is sent: the Worker's size (10027), the number and size of
// its vars and secrets, and that the main module exports every Durable
// Object class this script declares (10061 for the binding, 10070 for the
// migration that creates it). Unknown fields are skipped (unknown, by path).
func (a WorkerArgs) limitFailures(lim config.WorkerLimits, unknown func(string) bool) []p.CheckFailure {
	var failures []p.CheckFailure
	fail := func(field, format string, args ...any) {
		failures = append(failures, p.CheckFailure{Property: field, Reason: fmt.Sprintf(format, args...)})
	}
	// An unknown map decodes as no entries and an unknown value as "": both
	// only undercount, so what is over a limit already is reported, with
	// entries whose values are pending among the count.
	if n := len(a.Vars) + len(a.Secrets); n > lim.MaxVars {
		fail("vars", "%d vars and secrets: the Workers %s plan allows %d per Worker (secrets and text combined)", n, lim.Plan, lim.MaxVars)
	}
	for _, field := range []struct {
		name   string
		values map[string]string
	}{{"vars", a.Vars}, {"secrets", a.Secrets}} {
		for key, value := range field.values {
			if len(value) > lim.MaxVarBytes {
				// The secret's value is never quoted, nor its size (a hint).
				fail(field.name+"."+key, "%s is over Cloudflare's %s limit for one variable", key, config.FormatSize(int64(lim.MaxVarBytes)))
			}
		}
	}
	if max := lim.MaxCrons; max > 0 && len(a.Crons) > max {
		fail("crons", "%d cron triggers: the Workers %s plan allows %d per account", len(a.Crons), lim.Plan, max)
	}
	if unknown("content") || unknown("script") || unknown("modules") || unknown("mainModule") {
		return failures
	}
	if a.Script != nil && a.Script.Asset != nil && !a.Script.Asset.HasContents() {
		return failures // a Diff-time asset without its contents
	}
	mods, err := a.modules()
	if err != nil || len(mods) == 0 {
		return failures // validate reports the unreadable script; assets-only has none
	}
	contents := make([][]byte, len(mods))
	for i, m := range mods {
		contents[i] = m.Content
	}
	if problem := lim.SizeProblem(contents...); problem != "" {
		fail(a.codeField(), "%s", problem)
	}
	if problem := mainModuleSyntaxProblem(mods[0]); problem != "" {
		fail(a.codeField(), "%s", problem)
	}
	for i, m := range mods {
		if !isJavaScriptModule(m.Name) {
			continue
		}
		if err := esm.CheckSyntax(m.Content); err != nil {
			field := a.codeField()
			if i > 0 {
				field = fmt.Sprintf("modules[%q]", m.Name)
			}
			fail(field, "the module %s is not valid JavaScript at %v; Cloudflare refuses the upload (10021): fix the module, "+
				"or rebuild the bundle", m.Name, err)
		}
	}
	exported := moduleExports(mods)
	for i, d := range a.DurableObjects {
		if unknown(fmt.Sprintf("durableObjects[%d]", i)) || unknown("name") {
			continue // its class, or whether this script declares it, is not known yet
		}
		if d.declaredBy(a.Name) && d.ClassName != "" && exported != nil && !exported[d.ClassName] {
			fail(fmt.Sprintf("durableObjects[%d].className", i),
				"the main module %s does not export class %s; Cloudflare refuses the binding (10061) and its migration (10070)",
				a.mainModule(), d.ClassName)
		}
	}
	return failures
}

// codeField is the input that holds the main module.
func (a WorkerArgs) codeField() string {
	if a.Script != nil {
		return "script"
	}
	return "content"
}

// moduleExports are the names the main module (mods[0]) exports, or nil
// when they cannot be known (a star export of a module not uploaded).
func moduleExports(mods []cfapi.Module) map[string]bool {
	names, known := esm.Graph(mods[0].Name, func(name string) ([]byte, bool) {
		for _, m := range mods {
			if m.Name == name {
				return m.Content, true
			}
		}
		return nil, false
	})
	if !known {
		return nil
	}
	return names
}

// mainModuleSyntaxProblem refuses a main module Cloudflare cannot start as
// an ES module, read with the project's own reader (esm): one that exports
// nothing is a service-worker script (addEventListener("fetch", ...)),
// which a modules upload refuses only once every resource before it exists.
// The message never quotes the module: it may be a secret.
func mainModuleSyntaxProblem(m cfapi.Module) string {
	if !isJavaScriptModule(m.Name) {
		return "" // mainModuleProblem names the extension
	}
	e := esm.Scan(string(m.Content))
	if len(e.Names) > 0 || len(e.StarFrom) > 0 {
		return ""
	}
	if strings.Contains(string(m.Content), "addEventListener") {
		return fmt.Sprintf("the main module %s is in service-worker syntax (addEventListener): Workers with bindings run ES modules; "+
			"export the handlers instead (export default { fetch(request, env) { ... } })", m.Name)
	}
	return fmt.Sprintf("the main module %s exports nothing: a Worker's ES module exports its handlers "+
		"(export default { fetch(request, env) { ... } })", m.Name)
}

// isJavaScriptModule: the module names Cloudflare reads as ES modules.
func isJavaScriptModule(name string) bool {
	return strings.HasSuffix(name, ".js") || strings.HasSuffix(name, ".mjs")
}
