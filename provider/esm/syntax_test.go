package esm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckSyntaxAcceptsModernModules(t *testing.T) {
	for name, src := range map[string]string{
		"handlers":        "export default { async fetch(req, env) { return new Response('ok'); } };\n",
		"top-level await": "const cfg = await import('./cfg.js');\nexport default { fetch() { return new Response(cfg.x ?? 'none'); } };\n",
		"runtime import":  "import { DurableObject } from 'cloudflare:workers';\nexport class SessionDO extends DurableObject { #n = 0; static { } }\nexport default {};\n",
		"regex and class": "const r = /a\\/b/giu;\nexport class A { get x() { return r?.source; } }\nexport default { fetch: () => new Response(`${1n}`) };\n",
	} {
		if err := CheckSyntax([]byte(src)); err != nil {
			t.Errorf("%s: refused a valid module: %v", name, err)
		}
	}
}

func TestCheckSyntaxNamesLineAndColumn(t *testing.T) {
	src := "export default {\n  fetch(req) {\n    return new Response('é' +);\n  }\n};\n"
	err := CheckSyntax([]byte(src))
	if err == nil {
		t.Fatal("a module with a syntax error parsed")
	}
	if err.Line != 3 || err.Column != 30 {
		t.Errorf("position: got line %d column %d, want line 3 column 30 (characters, not bytes)", err.Line, err.Column)
	}
	if !strings.Contains(err.Reason, `")"`) {
		t.Errorf("reason %q lost the punctuation that tells what is wrong", err.Reason)
	}
}

func TestCheckSyntaxNeverQuotesTheModule(t *testing.T) {
	const secret = "sk_live_0123456789abcdef"
	for _, src := range []string{
		secret + " is not javascript\n",
		"export default { fetch() { return " + secret + " " + secret + "; } };\n",
		"let " + secret + " = 1; let " + secret + " = 2; export default {};\n",
	} {
		err := CheckSyntax([]byte(src))
		if err == nil {
			t.Fatalf("%q parsed", src)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "sk_live") {
			t.Errorf("the error quotes the module's text: %v", err)
		}
	}
}

func TestWithoutSourceText(t *testing.T) {
	for in, want := range map[string]string{
		`Expected ";" but found "token"`:            `Expected ";" but found …`,
		`Unexpected "}"`:                            `Unexpected "}"`,
		`The symbol "x1" has already been declared`: `The symbol … has already been declared`,
		`Unterminated string literal`:               `Unterminated string literal`,
		`Expected "=>" but found "a" and "unclosed`: `Expected "=>" but found … and "unclosed`,
	} {
		if got := withoutSourceText(in); got != want {
			t.Errorf("withoutSourceText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMain lets the test binary be the child the plugin starts.
func TestMain(m *testing.M) {
	if os.Getenv(ChildEnv) == "1" {
		if err := ServeChild(os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// In the plugin the parse runs in a child process: its verdicts are the
// in-process parser's, and a module that parsed is not parsed again.
func TestCheckSyntaxInAChildProcess(t *testing.T) {
	ParseInChildProcess(os.Args[0])
	t.Cleanup(func() { parseIn = parseHere })
	padding := "// " + strings.Repeat("x", childFrom) + "\n" // large enough for the child
	bad := []byte(padding + "export default { fetch() { return new Response('x' } };\n")
	got := CheckSyntax(bad)
	require.NotNil(t, got)
	assert.Equal(t, parseHere(bad), got)

	good := []byte(padding + "export default { fetch() { return new Response('child') } };\n")
	assert.Nil(t, CheckSyntax(good))
	parseIn = func([]byte) *SyntaxError { t.Fatal("parsed twice"); return nil }
	assert.Nil(t, CheckSyntax(good), "remembered by digest")
}

// Only modules of childFrom bytes or more go to the child: with no child to
// run, a large module's parse does not happen (and refuses nothing), a
// small one's still does, in process.
func TestCheckSyntaxSendsOnlyLargeModulesToTheChild(t *testing.T) {
	ParseInChildProcess(filepath.Join(t.TempDir(), "no-such-plugin"))
	t.Cleanup(func() { parseIn = parseHere })
	small := []byte("export default { fetch( };\n")
	large := []byte("// " + strings.Repeat("y", childFrom) + "\nexport default { fetch( };\n")
	assert.NotNil(t, CheckSyntax(small), "parsed in process")
	assert.Nil(t, CheckSyntax(large), "sent to the child, which could not start")
}
