package esm

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestScan(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
		starFrom  []string
	}{
		{"class and default", "export class SessionDO {}\nexport default { fetch() {} };", []string{"SessionDO", "default"}, nil},
		{"class extending", "export class A extends B { m() { return 1 } }", []string{"A"}, nil},
		{"functions", "export function f() {}\nexport async function g() {}\nexport function* h() {}", []string{"f", "g", "h"}, nil},
		{"declarations", "export const a = 1, b = { c: [1, 2] }, d = (x, y) => x;\nexport let e;", []string{"a", "b", "d", "e"}, nil},
		{"no semicolon", "export const a = 1\nexport class B {}", []string{"a", "B"}, nil},
		{"esbuild list", "class SessionDO {}\nvar src_default = {};\nexport {\n  SessionDO,\n  src_default as default\n};\n", []string{"SessionDO", "default"}, nil},
		{"re-exports", "export { A as B, C } from './x.js';\nexport * from \"./y.js\";\nexport * as ns from './z.js';", []string{"B", "C", "ns"}, []string{"./y.js"}},
		{"string names", `export { a as "my-name" };`, []string{"my-name"}, nil},
		{"nested export is not top level", "function f() { const s = { export: 1 }; }\nif (x) { /* export class Hidden {} */ }", nil, nil},
		{"comments", "// export class A {}\n/* export class B {} */\nexport class C {}", []string{"C"}, nil},
		{"strings", "const s = 'export class A {}'; const t = \"export { B }\";\nexport class C {}", []string{"C"}, nil},
		{"templates", "const s = `export class A {} ${ {a: 1}.a } export class B {}`;\nexport class C {}", []string{"C"}, nil},
		{"nested templates", "const s = `a ${ `b ${ c } d` } e`;\nexport class C {}", []string{"C"}, nil},
		{"regex with braces and quotes", "const r = /[{'\"`]/g;\nconst q = a / b / c;\nexport class C {}", []string{"C"}, nil},
		{"regex after return", "function f() { return /}/.test(x) }\nexport class C {}", []string{"C"}, nil},
		{"division after paren", "const x = (a) / 2; const y = {}\nexport class C {}", []string{"C"}, nil},
		{"empty", "", nil, nil},
		{"no exports", "addEventListener('fetch', e => e.respondWith(new Response('hi')))", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Scan(tc.src)
			assert.ElementsMatch(t, tc.want, slices.Collect(maps.Keys(got.Names)))
			assert.Equal(t, tc.starFrom, got.StarFrom)
		})
	}
}

// FuzzScan: any input, no panic, and the scan ends.
func FuzzScan(f *testing.F) {
	f.Add("export class A {}")
	f.Add("export { a as b } from './c'; `${ { } }` /[/]/ ")
	f.Add("export const a = (1, [2]), b")
	f.Fuzz(func(t *testing.T, src string) {
		Scan(src)
	})
}

func TestLiterals(t *testing.T) {
	src := "// 'not a string'\nconst a = \"x\\\"y\", b = 'z', r = /'[\"]/g;\nconst t = `p${ {k: 'q'}.k }s`; /* `no` */"
	var got []string
	for _, lit := range Literals(src) {
		got = append(got, string(lit.Quote)+src[lit.Start:lit.End])
	}
	assert.Equal(t, []string{`"x\"y`, `'z`, "`p", `'q`, "`s"}, got)
}
