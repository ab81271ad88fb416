package webbuild

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/openinspect/pulumi-openinspect/provider/esm"
	"github.com/openinspect/pulumi-openinspect/tests/serviceauth"
)

// fixture is the placeholder build of the fixture checkout.
const fixture = "../../../tests/fixtures/upstream/packages/web/.open-next"

// memOutput keeps what Render writes.
type memOutput map[string][]byte

func (m memOutput) WriteFile(name string, content io.Reader) error {
	if _, dup := m[name]; dup {
		return fmt.Errorf("%s written twice", name)
	}
	b, err := io.ReadAll(content)
	m[name] = b
	return err
}

// nasty are values that break out of any context escaped for the wrong one.
var nasty = Values{
	WSURL:           `wss://cp.example.test/ws?a='1'&b="2"\x`,
	SandboxProvider: "modal",
	AppName:         "Ünïcode </script><!-- `${x}` \\ \u2028 'q' \"dq\" --> 😀",
	AppIconURL:      "https://cdn.example.test/icon.png?a=1 b&c=<d>",
}

func testSecrets(t testing.TB, seed byte) Secrets {
	s, err := GenerateSecrets(bytes.NewReader(bytes.Repeat([]byte{seed, seed + 1, seed + 2}, 64)))
	require.NoError(t, err)
	return s
}

func render(t testing.TB, v Values, s Secrets) (*Result, memOutput) {
	t.Helper()
	out := memOutput{}
	res, err := Render(os.DirFS(fixture), Installation{Values: v, Secrets: s}, out)
	require.NoError(t, err)
	return res, out
}

func readManifest(t testing.TB) *Manifest {
	m, err := ReadManifest(os.DirFS(fixture))
	require.NoError(t, err)
	return m
}

// oracle says what a decoded text must become, by a route independent of the
// substituter: JSON and RSC rows are parsed and compared as values, HTML as
// trees, JS literal by literal with the code between them unchanged.
type oracle struct {
	t      *testing.T
	values map[string]string // placeholder → value
}

func newOracle(t *testing.T, m *Manifest, in Installation) *oracle {
	o := &oracle{t: t, values: map[string]string{}}
	for name, val := range in.Values.byVariable() {
		o.values[m.Placeholders[name]] = val
	}
	for _, f := range secretFields {
		o.values[*f.value(&m.BuildSecrets)] = *f.value(&in.Secrets)
	}
	return o
}

func (o *oracle) plain(s string) string {
	for p, v := range o.values {
		s = strings.ReplaceAll(s, p, v)
	}
	return s
}

func (o *oracle) has(s string) bool { return o.plain(s) != s }

// text compares a decoded string: HTML, JSON, RSC rows or plain text.
func (o *oracle) text(where, in, out string) {
	o.t.Helper()
	switch {
	case looksLikeHTMLDocument(in):
		o.html(where, in, out)
	case json.Valid([]byte(in)):
		o.json(where, in, out)
	case strings.Contains(in, "\n") && rscRows(in) != nil:
		inRows, outRows := rscRows(in), rscRows(out)
		require.Len(o.t, outRows, len(inRows), "%s: RSC rows", where)
		for i := range inRows {
			assert.Equal(o.t, inRows[i][0], outRows[i][0], "%s: row %d id", where, i)
			o.json(fmt.Sprintf("%s row %d", where, i), inRows[i][1], outRows[i][1])
		}
	default:
		assert.Equal(o.t, o.plain(in), out, where)
	}
}

// rscRows splits `id:json` lines, nil when in is not such a payload.
func rscRows(in string) [][2]string {
	var rows [][2]string
	for _, line := range strings.Split(strings.TrimSuffix(in, "\n"), "\n") {
		id, body, ok := strings.Cut(line, ":")
		if !ok || !json.Valid([]byte(body)) {
			return nil
		}
		rows = append(rows, [2]string{id, body})
	}
	return rows
}

func (o *oracle) json(where, in, out string) {
	o.t.Helper()
	var a, b any
	require.NoError(o.t, json.Unmarshal([]byte(in), &a), "%s: input JSON", where)
	require.NoError(o.t, json.Unmarshal([]byte(out), &b), "%s: output is not JSON", where)
	o.value(where, a, b)
}

// value compares decoded JSON values; a string holding a placeholder is
// compared as text (it may be HTML or an RSC payload).
func (o *oracle) value(where string, a, b any) {
	o.t.Helper()
	switch a := a.(type) {
	case string:
		bs, ok := b.(string)
		require.True(o.t, ok, "%s: a string became %T", where, b)
		if o.has(a) {
			o.text(where, a, bs)
		} else {
			assert.Equal(o.t, a, bs, where)
		}
	case []any:
		bl, ok := b.([]any)
		require.True(o.t, ok && len(bl) == len(a), "%s: an array became %v", where, b)
		for i := range a {
			o.value(fmt.Sprintf("%s[%d]", where, i), a[i], bl[i])
		}
	case map[string]any:
		bm, ok := b.(map[string]any)
		require.True(o.t, ok, "%s: an object became %T", where, b)
		require.ElementsMatch(o.t, slices.Collect(maps.Keys(a)), slices.Collect(maps.Keys(bm)), where)
		for k := range a {
			o.value(where+"."+k, a[k], bm[k])
		}
	default:
		assert.Equal(o.t, a, b, where)
	}
}

// js compares two modules: the same literals (count and quotes), the same
// code between them, and each literal's text as text.
func (o *oracle) js(where, in, out string) {
	o.t.Helper()
	li, lo := esm.Literals(in), esm.Literals(out)
	require.Len(o.t, lo, len(li), "%s: string literals (a value broke out of one)", where)
	prevIn, prevOut := 0, 0
	for i := range li {
		require.Equal(o.t, li[i].Quote, lo[i].Quote, "%s: literal %d quote", where, i)
		require.Equal(o.t, in[prevIn:li[i].Start], out[prevOut:lo[i].Start], "%s: code before literal %d", where, i)
		ti, err := jsDecode(in[li[i].Start:li[i].End], li[i].Quote)
		require.NoError(o.t, err)
		to, err := jsDecode(out[lo[i].Start:lo[i].End], lo[i].Quote)
		require.NoError(o.t, err, "%s: literal %d", where, i)
		if o.has(ti) {
			o.text(fmt.Sprintf("%s literal %d", where, i), ti, to)
		} else {
			assert.Equal(o.t, ti, to, "%s: literal %d without a placeholder", where, i)
		}
		prevIn, prevOut = li[i].End, lo[i].End
	}
	assert.Equal(o.t, in[prevIn:], out[prevOut:], "%s: code after the last literal", where)
}

// html compares two documents as parsed trees: the same elements, text and
// attributes with the values in place, and scripts as JS.
func (o *oracle) html(where, in, out string) {
	o.t.Helper()
	a, err := html.Parse(strings.NewReader(in))
	require.NoError(o.t, err)
	b, err := html.Parse(strings.NewReader(out))
	require.NoError(o.t, err)
	var na, nb []*html.Node
	for n := range a.Descendants() {
		// A text node that is only a placeholder is no node at all when
		// its value is empty: the parser keeps no empty text.
		if n.Type == html.TextNode && o.plain(n.Data) == "" {
			continue
		}
		na = append(na, n)
	}
	for n := range b.Descendants() {
		nb = append(nb, n)
	}
	require.Len(o.t, nb, len(na), "%s: nodes (a value broke out of its element)", where)
	for i := range na {
		x, y := na[i], nb[i]
		at := fmt.Sprintf("%s node %d (%s)", where, i, x.Data)
		require.Equal(o.t, x.Type, y.Type, at)
		switch {
		case x.Type == html.TextNode && x.Parent != nil && x.Parent.Data == "script":
			o.js(at, x.Data, y.Data)
		case x.Type == html.TextNode || x.Type == html.CommentNode:
			assert.Equal(o.t, o.plain(x.Data), y.Data, at)
		default:
			require.Equal(o.t, x.Data, y.Data, at)
			require.Len(o.t, y.Attr, len(x.Attr), at)
			for j := range x.Attr {
				assert.Equal(o.t, x.Attr[j].Key, y.Attr[j].Key, at)
				assert.Equal(o.t, o.plain(x.Attr[j].Val), y.Attr[j].Val, "%s attribute %s", at, x.Attr[j].Key)
			}
		}
	}
}

// file compares one file of the build with its rendering.
func (o *oracle) file(name, in, out string) {
	o.t.Helper()
	switch kindOf(name) {
	case kindJS:
		o.js(name, in, out)
	case kindHTML:
		o.html(name, in, out)
	case kindJSON:
		o.json(name, in, out)
	default:
		o.text(name, in, out)
	}
}

// undo maps an output file back to the build's bytes it must equal when it
// holds no placeholder: renamed hashes and the BUILD_ID put back.
func undo(res *Result, m *Manifest, content string) string {
	for old, np := range res.Renamed {
		content = strings.ReplaceAll(content, hashOf(np), hashOf(old))
	}
	return strings.ReplaceAll(content, res.BuildID, m.BuildID)
}

func hashOf(p string) string {
	stem := strings.TrimSuffix(path.Base(p), path.Ext(p))
	return stem[strings.LastIndexAny(stem, "-")+1:]
}

func TestRenderFixture(t *testing.T) {
	m := readManifest(t)
	secrets := testSecrets(t, 7)
	res, out := checkRendering(t, Installation{Values: nasty, Secrets: secrets})

	worker := string(out[m.Worker])
	for _, f := range secretFields {
		assert.Contains(t, worker, *f.value(&secrets), "the worker holds the installation's %s", f.name)
	}
	assert.Contains(t, worker, `"`+res.BuildID+`"`)

	// Every file is accounted for, and the result lists what was written.
	var written []string
	for _, f := range res.Files {
		written = append(written, f.Path)
		assert.Equal(t, digest(out[f.Path]), f.SHA256, f.Path)
		assert.EqualValues(t, len(out[f.Path]), f.Size, f.Path)
	}
	assert.Equal(t, slices.Sorted(maps.Keys(out)), written)
	assert.NotContains(t, written, ManifestFile)
}

// checkRendering renders the fixture for in and checks every file against
// the oracle: no placeholder, build key or build BUILD_ID left; each value
// where its placeholder was, in that context's terms; every other byte as
// the build had it (up to renamed hashes and the BUILD_ID).
func checkRendering(t *testing.T, in Installation) (*Result, memOutput) {
	m := readManifest(t)
	res, out := render(t, in.Values, in.Secrets)
	build := os.DirFS(fixture)
	inverse := map[string]string{}
	for old, np := range res.Renamed {
		inverse[np] = old
	}
	o := newOracle(t, m, in)
	checked := 0
	for name, content := range out {
		text := string(content)
		for _, v := range Variables {
			assert.NotContains(t, text, m.Placeholders[v], "%s keeps %s's placeholder", name, v)
		}
		for _, f := range secretFields {
			assert.NotContains(t, text, *f.value(&m.BuildSecrets), "%s keeps the build's %s", name, f.name)
		}
		assert.NotContains(t, name+text, m.BuildID, "%s keeps the build's BUILD_ID", name)

		src := name
		if old, ok := inverse[name]; ok {
			src = old
		}
		src = strings.ReplaceAll(src, res.BuildID, m.BuildID)
		orig, err := fs.ReadFile(build, src)
		require.NoError(t, err, "%s comes from %s", name, src)
		if o.has(string(orig)) {
			o.file(name, undo(res, m, string(orig)), undo(res, m, text))
			checked++
		} else {
			assert.Equal(t, string(orig), undo(res, m, text), "%s: only names and the BUILD_ID change", name)
		}
	}
	// worker.js, two chunks, 404.html and the prerendered cache entry.
	assert.Equal(t, 5, checked, "files holding placeholders")
	return res, out
}

// FuzzSubstitute: whatever the values, each stays inside the context its
// placeholder stood in (the oracle parses every file), or is refused
// before anything is written.
func FuzzSubstitute(f *testing.F) {
	f.Add(nasty.WSURL, nasty.AppName, nasty.AppIconURL)
	f.Add("wss://x", "</script><script>alert(1)</script>", `" onload="x`)
	f.Add(`\u0022`, "`${`}`", `'--><!--`)
	f.Add(`\\`, "\u2029\u2028", "&amp;&#34;")
	secrets := testSecrets(f, 11)
	m := readManifest(f)
	f.Fuzz(func(t *testing.T, ws, app, icon string) {
		v := Values{WSURL: ws, SandboxProvider: "modal", AppName: app, AppIconURL: icon}
		if err := v.Check(m); err != nil {
			_, rerr := Render(os.DirFS(fixture), Installation{Values: v, Secrets: secrets}, memOutput{})
			require.Error(t, rerr, "Render accepts what Check refuses")
			return
		}
		checkRendering(t, Installation{Values: v, Secrets: secrets})
	})
}

func TestRenderIsDeterministic(t *testing.T) {
	s := testSecrets(t, 1)
	a, outA := render(t, nasty, s)
	b, outB := render(t, nasty, s)
	assert.Equal(t, a.Digest, b.Digest)
	assert.Equal(t, outA, outB)

	// Another installation's keys change the worker only.
	c, outC := render(t, nasty, testSecrets(t, 2))
	assert.NotEqual(t, a.Digest, c.Digest)
	for name := range outA {
		if name != a.Worker {
			assert.Equal(t, outA[name], outC[name], name)
		}
	}
	assert.NotEqual(t, outA[a.Worker], outC[a.Worker])

	// Written to a directory, the same files.
	dir := t.TempDir()
	d, err := Render(os.DirFS(fixture), Installation{Values: nasty, Secrets: s}, Dir(dir))
	require.NoError(t, err)
	assert.Equal(t, a.Digest, d.Digest)
	for name, content := range outA {
		got, err := os.ReadFile(dir + "/" + name)
		require.NoError(t, err)
		assert.Equal(t, content, got, name)
	}
}

// chunkNames are the rendered client chunks, by the build's name.
func chunkNames(t *testing.T, res *Result) map[string]string {
	names := map[string]string{}
	build := os.DirFS(fixture)
	chunks, err := fs.Glob(build, "assets/_next/static/chunks/*.js")
	require.NoError(t, err)
	require.Len(t, chunks, 7)
	for _, c := range chunks {
		names[c] = c
		if np, ok := res.Renamed[c]; ok {
			names[c] = np
		}
	}
	return names
}

func TestChangedValuesRenameExactlyTheChunksHoldingThem(t *testing.T) {
	m := readManifest(t)
	s := testSecrets(t, 3)
	base := Values{WSURL: "wss://a.example.test", SandboxProvider: "modal", AppName: "Open-Inspect", AppIconURL: ""}
	r1, out1 := render(t, base, s)

	build := os.DirFS(fixture)
	holding := func(variable string) []string {
		var out []string
		for _, c := range slices.Sorted(maps.Keys(chunkNames(t, r1))) {
			b, err := fs.ReadFile(build, c)
			require.NoError(t, err)
			if bytes.Contains(b, []byte(m.Placeholders[variable])) {
				out = append(out, c)
			}
		}
		return out
	}
	loader := "assets/_next/static/chunks/webpack-1b4137cb24ffd590.js"
	framework := "assets/_next/static/chunks/fc589df88a3cd456.js"
	mainApp := "assets/_next/static/chunks/c762e65781a36e3c.js"
	require.Len(t, holding(VarAppName), 1)
	require.Len(t, holding(VarWSURL), 1)

	// The framework and page-entry chunks hold nothing to substitute and
	// name chunks by module, not file: their names stay.
	names1 := chunkNames(t, r1)
	assert.Equal(t, framework, names1[framework])
	assert.Equal(t, mainApp, names1[mainApp])
	assert.Len(t, r1.Renamed, 3, "the two chunks with placeholders and the loader naming them")

	renamedBetween := func(a, b map[string]string) []string {
		var out []string
		for c := range a {
			if a[c] != b[c] {
				out = append(out, c)
			}
		}
		slices.Sort(out)
		return out
	}
	other := base
	other.AppName = "Renamed"
	r2, out2 := render(t, other, s)
	names2 := chunkNames(t, r2)
	// The chunk holding the app name, and the loader that names it.
	assert.Equal(t, slices.Sorted(slices.Values(append(holding(VarAppName), loader))), renamedBetween(names1, names2))
	for c, n := range names1 {
		if names2[c] == n {
			assert.Equal(t, out1[n], out2[n], "%s kept its name, so it must keep its content", c)
		}
	}
	assert.NotEqual(t, r1.BuildID, r2.BuildID, "the BUILD_ID follows the values")

	// The sandbox provider is in no client chunk: no chunk renamed.
	third := base
	third.SandboxProvider = "daytona"
	r3, _ := render(t, third, s)
	assert.Empty(t, renamedBetween(names1, chunkNames(t, r3)))

	// Back to the first values: the first names and files again.
	r4, out4 := render(t, base, s)
	assert.Equal(t, r1.Digest, r4.Digest)
	assert.Equal(t, out1, out4)
}

// TestTurbopackNamesAreRenamed: Next 16's Turbopack names a chunk with 13
// characters that may hold '_' and '-' (`1ombj1_o3vp19.js`, with no run of
// eight letters and digits; upstream's web at 2026-08-02 had one holding a
// placeholder). Such a chunk is renamed when its content changes, and a
// chunk naming it is rewritten (and renamed in turn); a name merely of that
// length without a digit is not taken for a hash.
func TestTurbopackNamesAreRenamed(t *testing.T) {
	m := readManifest(t)
	build := fixtureMap(t)
	const dir = "assets/_next/static/chunks/"
	const chunk, loader = dir + "1ombj1_o3vp19.js", dir + "0d-k2a_7wq9zx.js"
	build[chunk] = &fstest.MapFile{Data: []byte(`var n = "` + m.Placeholders[VarAppName] + `";`), Mode: 0o644}
	build[loader] = &fstest.MapFile{Data: []byte(`import("./1ombj1_o3vp19.js"); var w = "x-1ombj1_o3vp19", v = "a1ombj1_o3vp19";`), Mode: 0o644}
	out := memOutput{}
	res, err := Render(build, Installation{Values: nasty, Secrets: testSecrets(t, 6)}, out)
	require.NoError(t, err)
	renamed := res.Renamed[chunk]
	require.Regexp(t, `^`+dir+`[0-9a-z]{13}\.js$`, renamed)
	assert.Contains(t, string(out[renamed]), `Ünïcode`, "the renamed chunk holds the value")
	newLoader := res.Renamed[loader]
	require.Regexp(t, `^`+dir+`[0-9a-z]{13}\.js$`, newLoader, "the loader names a renamed chunk, so it is renamed too")
	newName := strings.TrimSuffix(path.Base(renamed), ".js")
	assert.Equal(t, `import("./`+newName+`.js"); var w = "x-1ombj1_o3vp19", v = "a1ombj1_o3vp19";`, string(out[newLoader]),
		"the name as a whole is rewritten, not a longer run holding it")

	// A 13-character name without a digit is no hash: changing it refuses.
	build = fixtureMap(t)
	build[dir+"main-app_page.js"] = &fstest.MapFile{Data: []byte(`var n = "` + m.Placeholders[VarAppName] + `";`), Mode: 0o644}
	_, err = Render(build, Installation{Values: nasty, Secrets: testSecrets(t, 6)}, memOutput{})
	require.ErrorContains(t, err, dir+"main-app_page.js: its content changes, but its name carries no content hash")
}

// TestRenderedJSRuns runs the rendered worker and chunk in Node: a real JS
// parser reads them, and the values come out as they went in.
func TestRenderedJSRuns(t *testing.T) {
	node := lookNode(t)
	res, out := render(t, nasty, testSecrets(t, 5))
	dir := t.TempDir()
	for name, content := range out {
		require.NoError(t, Dir(dir).WriteFile(name, bytes.NewReader(content)))
	}
	chunk := ""
	for old, np := range res.Renamed {
		if b, _ := os.ReadFile(fixture + "/" + old); bytes.Contains(b, []byte("exports.title")) {
			chunk = np
		}
	}
	require.NotEmpty(t, chunk)
	script := fmt.Sprintf(`
const worker = (await import(%q)).default;
const env = { CONTROL_PLANE_URL: "https://cp.example.test", SANDBOX_PROVIDER: "modal", SERVICE_AUTH_SECRET: "s" };
const config = await (await worker.fetch(new Request("https://web.example.test/api/config"), env)).json();
globalThis.self = globalThis;
await import(%q);
const exports = {};
self.__oi_chunks.find((c) => c[0] === "branding")[1](exports);
// The login page asks the control plane through its binding.
const asked = [];
env.CONTROL_PLANE_WORKER = { fetch: async (url, init) => {
  asked.push({ url: String(url), method: init.method, headers: init.headers });
  return Response.json({ providers: ["github", "google"] });
} };
const login = await (await worker.fetch(new Request("https://web.example.test/login"), env)).text();
console.log(JSON.stringify({ config, title: exports.title(""), icon: exports.icon, login, asked }));
`, dir+"/"+res.Worker, dir+"/"+chunk)
	got := runNode(t, node, dir, script)
	var v struct {
		Config      map[string]any
		Title, Icon string
		Login       string
		Asked       []struct {
			URL, Method string
			Headers     map[string]string
		}
	}
	require.NoError(t, json.Unmarshal(got, &v), string(got))

	// The server-rendered page: the values in their HTML contexts, a button
	// per provider, and one request signed as upstream's web signs it.
	doc, err := html.Parse(strings.NewReader(v.Login))
	require.NoError(t, err)
	assert.Equal(t, "Sign in · "+nasty.AppName, nodeText(find(doc, func(n *html.Node) bool { return n.Data == "title" })))
	app := find(doc, func(n *html.Node) bool { return attr(n, "id") == "app" })
	require.NotNil(t, app, v.Login)
	assert.Equal(t, nasty.WSURL, attr(app, "data-ws-url"))
	var buttons []string
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "button" {
			buttons = append(buttons, attr(n, "data-provider")+": "+nodeText(n))
		}
	})
	assert.Equal(t, []string{"github: Sign in with GitHub", "google: Sign in with Google"}, buttons)
	require.Len(t, v.Asked, 1)
	asked := v.Asked[0]
	assert.Equal(t, "https://cp.example.test/internal/auth/sign-in-providers", asked.URL)
	assert.Equal(t, "GET", asked.Method)
	assert.Equal(t, "web", asked.Headers["X-OpenInspect-Service"])
	sig := strings.Split(asked.Headers["X-OpenInspect-Service-Signature"], ".")
	require.Len(t, sig, 4, "sig1.<ms>.<nonce>.<mac>")
	ms, err := strconv.ParseInt(sig[1], 10, 64)
	require.NoError(t, err)
	assert.Equal(t, serviceauth.Header(serviceauth.Request{Service: "web", Key: "s", At: time.UnixMilli(ms), Nonce: sig[2], Method: "GET",
		Path: "/internal/auth/sign-in-providers"}), asked.Headers["X-OpenInspect-Service-Signature"],
		"signed with SERVICE_AUTH_SECRET over upstream's canonical request")
	assert.Equal(t, nasty.AppName, v.Config["appName"])
	assert.Equal(t, nasty.WSURL, v.Config["wsUrl"])
	assert.Equal(t, nasty.AppIconURL, v.Config["appIconUrl"])
	assert.Equal(t, "https://cp.example.test", v.Config["controlPlaneUrl"])
	assert.Equal(t, true, v.Config["serviceAuthConfigured"])
	assert.Equal(t, true, v.Config["serverActions"])
	assert.Equal(t, nasty.AppName, v.Title)
	assert.Equal(t, nasty.AppIconURL, v.Icon)
}

func TestRenderErrorsNameTheFile(t *testing.T) {
	m := readManifest(t)
	build := fixtureMap(t)
	s := testSecrets(t, 9)
	app := m.Placeholders[VarAppName]
	for _, tc := range []struct {
		name   string
		change func(fstest.MapFS)
		want   string
	}{
		{"placeholder in CSS", func(f fstest.MapFS) {
			f["assets/_next/static/css/0a1b2c3d4e5f6a7b.css"] = &fstest.MapFile{Data: []byte("body::after{content:'" + app + "'}")}
		}, `assets/_next/static/css/0a1b2c3d4e5f6a7b.css: holds a NEXT_PUBLIC_* placeholder, but ".css" is not a kind of file`},
		{"placeholder in a comment", func(f fstest.MapFS) {
			f["worker.js"].Data = append(f["worker.js"].Data, []byte("\n/* "+app+" */\n")...)
		}, "worker.js: the placeholder " + app + " at byte "},
		{"changed file under static without a hash", func(f fstest.MapFS) {
			f["assets/_next/static/chunks/main.js"] = &fstest.MapFile{Data: []byte(`var n = "` + app + `";`)}
		}, "assets/_next/static/chunks/main.js: its content changes, but its name carries no content hash"},
		{"build key in an asset", func(f fstest.MapFS) {
			f["assets/leak.json"] = &fstest.MapFile{Data: []byte(`{"k":"` + m.BuildSecrets.PreviewModeSigningKey + `"}`)}
		}, "assets/leak.json: holds one of the build's keys"},
		{"placeholder missing", func(f fstest.MapFS) {
			f["worker.js"].Data = bytes.ReplaceAll(f["worker.js"].Data, []byte(m.Placeholders[VarSandboxProvider]), []byte("x"))
			delete(f, "assets/404.html")
			delete(f, "assets/cdn-cgi/_next_cache/"+m.BuildID+"/login.cache")
		}, "no file of the build holds NEXT_PUBLIC_SANDBOX_PROVIDER's placeholder"},
		{"octal escape", func(f fstest.MapFS) {
			f["worker.js"].Data = append(f["worker.js"].Data, []byte("\nconst o = '\\101"+app+"';\n")...)
		}, "worker.js: the string at byte"},
		{"too large", func(f fstest.MapFS) {
			f["assets/big.bin"] = &fstest.MapFile{Data: make([]byte, MaxFileSize+1)}
		}, "assets/big.bin: larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := maps.Clone(build)
			for k, v := range f {
				c := *v
				c.Data = slices.Clone(v.Data)
				f[k] = &c
			}
			tc.change(f)
			_, err := Render(f, Installation{Values: nasty, Secrets: s}, memOutput{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			for _, sf := range secretFields {
				assert.NotContains(t, err.Error(), *sf.value(&s))
			}
		})
	}
}

func TestInputErrorsNameTheField(t *testing.T) {
	good := testSecrets(t, 4)
	bad := good
	bad.PreviewModeSigningKey = "A" + good.PreviewModeSigningKey[1:]
	_, err := Render(os.DirFS(fixture), Installation{Values: nasty, Secrets: bad}, memOutput{})
	require.ErrorContains(t, err, "secrets.previewModeSigningKey: must be lower-case hex of 32 bytes")
	assert.NotContains(t, err.Error(), bad.PreviewModeSigningKey)
	assert.Equal(t, "webbuild.Secrets{redacted}", fmt.Sprint(good))
	assert.Equal(t, "webbuild.Secrets{redacted}", fmt.Sprintf("%#v", good))

	short := good
	short.ServerActionsEncryptionKey = "c2hvcnQ="
	_, err = Render(os.DirFS(fixture), Installation{Values: nasty, Secrets: short}, memOutput{})
	require.ErrorContains(t, err, "secrets.serverActionsEncryptionKey: must be base64")

	v := nasty
	v.AppName = "line\nbreak"
	_, err = Render(os.DirFS(fixture), Installation{Values: v, Secrets: good}, memOutput{})
	require.ErrorContains(t, err, "NEXT_PUBLIC_APP_NAME: holds the control character U+000A")
	v.AppName = string([]byte{0xff})
	_, err = Render(os.DirFS(fixture), Installation{Values: v, Secrets: good}, memOutput{})
	require.ErrorContains(t, err, "NEXT_PUBLIC_APP_NAME: not valid UTF-8")
	v.AppName = readManifest(t).Placeholders[VarWSURL]
	_, err = Render(os.DirFS(fixture), Installation{Values: v, Secrets: good}, memOutput{})
	require.ErrorContains(t, err, "NEXT_PUBLIC_APP_NAME: holds a build placeholder")
}

func TestManifestCheck(t *testing.T) {
	for _, tc := range []struct {
		change func(*Manifest)
		want   string
	}{
		{func(m *Manifest) { m.SchemaVersion = 2 }, "schemaVersion 2"},
		{func(m *Manifest) { m.Worker = "../worker.js" }, "worker: \"../worker.js\" is not a clean relative path"},
		{func(m *Manifest) { m.Worker = "assets/worker.js" }, "lies inside assets"},
		{func(m *Manifest) { m.BuildID = "a/b" }, "buildId:"},
		{func(m *Manifest) { delete(m.Placeholders, VarAppIconURL) }, "placeholders: want exactly"},
		{func(m *Manifest) { m.Placeholders[VarAppName] = "short" }, "placeholders.NEXT_PUBLIC_APP_NAME:"},
		{func(m *Manifest) { m.Placeholders[VarAppName] = m.Placeholders[VarWSURL][:20] }, "is contained in NEXT_PUBLIC_WS_URL's placeholder"},
		{func(m *Manifest) { m.BuildSecrets.PreviewModeID = "xyz" }, "buildSecrets.previewModeId: must be lower-case hex of 16 bytes"},
	} {
		m := readManifest(t)
		m.Placeholders = maps.Clone(m.Placeholders)
		tc.change(m)
		assert.ErrorContains(t, m.Check(), tc.want)
	}
	require.NoError(t, readManifest(t).Check())
}

// fixtureMap is the fixture build in memory.
func fixtureMap(t testing.TB) fstest.MapFS {
	out := fstest.MapFS{}
	build := os.DirFS(fixture)
	require.NoError(t, fs.WalkDir(build, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(build, p)
		out[p] = &fstest.MapFile{Data: b, Mode: 0o644}
		return err
	}))
	return out
}

// walk calls fn on n and every node below it, in document order.
func walk(n *html.Node, fn func(*html.Node)) {
	fn(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

// find is the first element below n that match accepts, or nil.
func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	var found *html.Node
	walk(n, func(c *html.Node) {
		if found == nil && c.Type == html.ElementNode && match(c) {
			found = c
		}
	})
	return found
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// nodeText is the text below n ("" for nil).
func nodeText(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return b.String()
}

// A manifest that does not decode is described in words, not with the JSON
// decoder's Go types.
func TestBrokenManifestSaysWhy(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"", "is empty"},
		{`{"schemaVersion": 1,`, "ends early"},
		{`{"schemaVersion": }`, "is not valid JSON (at byte"},
		{`{"schemaVersion": "one"}`, "has schemaVersion as a JSON string, which must be a number"},
		{`{"extra": true}`, `has the field "extra"`},
	} {
		_, err := ReadManifest(fstest.MapFS{ManifestFile: &fstest.MapFile{Data: []byte(tc.raw)}})
		require.Error(t, err, tc.raw)
		assert.Contains(t, err.Error(), tc.want, tc.raw)
		for _, goText := range []string{"Go struct", "Go value", "webbuild.Manifest", "unmarshal"} {
			assert.NotContains(t, err.Error(), goText, tc.raw)
		}
	}
}
