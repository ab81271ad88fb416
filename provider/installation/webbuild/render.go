package webbuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// MaxFileSize bounds one file of a build (Cloudflare's limit for an asset is
// 25 MiB; the real server bundle is 12.9 MB). Render holds one file at a
// time in memory, twice over at most.
const MaxFileSize = 32 << 20

// Installation is what one installation brings to a build.
type Installation struct {
	Values  Values
	Secrets Secrets
}

// Output receives the files of an installation, one call per file, in path
// order.
type Output interface {
	WriteFile(name string, content io.Reader) error
}

// File is one file written, with its digest.
type File struct {
	Path   string
	Size   int64
	SHA256 string
}

// Result says what Render wrote.
type Result struct {
	// Worker and Assets are the main module's path and the assets
	// directory in the output (as in the build).
	Worker, Assets string
	// BuildID is the installation's BUILD_ID.
	BuildID string
	// Files are every file written, in path order.
	Files []File
	// Renamed maps each content-hashed asset whose content changed to its
	// new path (build paths, with the build's BUILD_ID).
	Renamed map[string]string
	// Digest names the whole output: the SHA-256 of every path with its
	// content's SHA-256. Same build and installation, same digest.
	Digest string
}

// Render writes the files of one installation, made from the placeholder
// build in src (its manifest at the root), through out.
func Render(src fs.FS, in Installation, out Output) (*Result, error) {
	m, err := ReadManifest(src)
	if err != nil {
		return nil, err
	}
	if err := in.Values.Check(m); err != nil {
		return nil, fmt.Errorf("webbuild: %w", err)
	}
	if err := in.Secrets.Check("secrets"); err != nil {
		return nil, fmt.Errorf("webbuild: %w", err)
	}
	r := &renderer{src: src, m: m, in: in, sub: newSubstituter(m, in.Values), found: map[string]bool{}}
	if err := r.list(); err != nil {
		return nil, err
	}
	if err := r.scan(); err != nil {
		return nil, err
	}
	r.rename()
	return r.write(out)
}

// renderer carries the state of one Render.
type renderer struct {
	src fs.FS
	m   *Manifest
	in  Installation
	sub *substituter

	paths []string         // every file, in path order
	info  map[string]*info // by path
	// hashes maps each content-hashed asset's hash to its path.
	hashes  map[string]string
	found   map[string]bool // placeholders and build keys seen
	buildID string
	renamed map[string]string // hash → new hash
}

// info is what the first pass learnt about a file.
type info struct {
	hash    string   // the content hash in its name, for a hashed asset
	plain   bool     // nothing to substitute, rename or rewrite: copied
	changed bool     // substitution changed its content
	sum     string   // SHA-256 of the substituted content
	refs    []string // the hashed assets it names (paths)
	ownID   bool     // holds the build's BUILD_ID
}

// list finds the worker and every asset.
func (r *renderer) list() error {
	r.info, r.hashes = map[string]*info{}, map[string]string{}
	if st, err := fs.Stat(r.src, r.m.Worker); err != nil {
		return fmt.Errorf("webbuild: worker: %w", err)
	} else if !st.Mode().IsRegular() {
		return fmt.Errorf("webbuild: worker: %s is not a regular file", r.m.Worker)
	}
	r.paths = []string{r.m.Worker}
	err := fs.WalkDir(r.src, r.m.Assets, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// Like wrangler, only regular files are assets (no symlinks).
		if d.Type().IsRegular() {
			r.paths = append(r.paths, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("webbuild: assets: %w", err)
	}
	slices.Sort(r.paths)
	for _, p := range r.paths {
		i := &info{}
		if h := r.contentHash(p); h != "" {
			if other, dup := r.hashes[h]; dup {
				return fmt.Errorf("webbuild: %s and %s carry the same content hash %s in their names", other, p, h)
			}
			i.hash, r.hashes[h] = h, p
		}
		r.info[p] = i
	}
	return nil
}

// static is the directory browsers cache for good (Next serves it with
// `Cache-Control: public, max-age=31536000, immutable`).
func (r *renderer) static() string { return r.m.Assets + "/_next/static/" }

// buildDir is the part of static named by the BUILD_ID instead of hashes.
func (r *renderer) buildDir() string { return r.static() + r.m.BuildID + "/" }

// contentHash is the hash in a static asset's name: the last run of
// lower-case letters and digits, at least 8 long and with a digit, in the
// name without its extension (`page-0a1b2c3d4e5f6a7b.js`, `0a1b2c3d4e5f6a7b.js`,
// `[turbopack]_runtime_0a1b2c3d._.js`, `font.p.0a1b2c3d.woff2`); failing
// that, the whole name when it is one of Turbopack's (Next 16) 13-character
// names, whose alphabet has '_' and '-' too (`1ombj1_o3vp19.js`: no run of
// 8); "" for any other file.
func (r *renderer) contentHash(p string) string {
	if !strings.HasPrefix(p, r.static()) || strings.HasPrefix(p, r.buildDir()) {
		return ""
	}
	stem := strings.TrimSuffix(path.Base(p), path.Ext(p))
	hash := ""
	for _, run := range strings.FieldsFunc(stem, func(c rune) bool { return !isHashChar(byte(c)) || c >= 0x80 }) {
		if len(run) >= 8 && strings.ContainsAny(run, "0123456789") {
			hash = run
		}
	}
	if hash == "" && isTurbopackName(stem) {
		hash = stem
	}
	return hash
}

// turbopackNameLen is the length of Turbopack's chunk names in Next 16.
const turbopackNameLen = 13

// isTurbopackName: 13 lower-case letters, digits, '_' or '-', with a digit.
func isTurbopackName(stem string) bool {
	if len(stem) != turbopackNameLen || !strings.ContainsAny(stem, "0123456789") {
		return false
	}
	for i := 0; i < len(stem); i++ {
		if !isHashChar(stem[i]) && !isJoinChar(stem[i]) {
			return false
		}
	}
	return true
}

func isHashChar(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' }

func isWordChar(c byte) bool { return isHashChar(c) || c >= 'A' && c <= 'Z' }

// isJoinChar: the characters a Turbopack name has besides letters and
// digits.
func isJoinChar(c byte) bool { return c == '_' || c == '-' }

// spans calls fn with each maximal run of word characters, '_' and '-' (a
// Turbopack name as a whole), and with each run of word characters inside
// it; fn answers whether it consumed the run, and a consumed outer run's
// inner runs are skipped.
func spans(b []byte, fn func(start, end int, outer bool) bool) {
	for i := 0; i < len(b); {
		if !isWordChar(b[i]) && !isJoinChar(b[i]) {
			i++
			continue
		}
		j := i
		for j < len(b) && (isWordChar(b[j]) || isJoinChar(b[j])) {
			j++
		}
		if !fn(i, j, true) {
			for k := i; k < j; {
				if !isWordChar(b[k]) {
					k++
					continue
				}
				l := k
				for l < j && isWordChar(b[l]) {
					l++
				}
				fn(k, l, false)
				k = l
			}
		}
		i = j
	}
}

// read reads one file of the build, refusing one over MaxFileSize.
func (r *renderer) read(p string) ([]byte, error) {
	f, err := r.src.Open(p)
	if err != nil {
		return nil, fmt.Errorf("webbuild: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("webbuild: reading %s: %w", p, err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("webbuild: %s: larger than %d bytes", p, MaxFileSize)
	}
	return b, nil
}

// substitute puts the installation's values and keys in one file.
func (r *renderer) substitute(p string, content []byte) ([]byte, error) {
	text, err := r.sub.file(p, string(content))
	if err != nil {
		return nil, fmt.Errorf("webbuild: %s: %w", p, err)
	}
	out := []byte(text)
	out, hasKey := replaceSecrets(out, r.m.BuildSecrets, r.in.Secrets)
	if hasKey && p != r.m.Worker {
		return nil, fmt.Errorf("webbuild: %s: holds one of the build's keys, which would be served to anyone as a static asset", p)
	}
	return out, nil
}

// scan is the first pass: what each file holds.
func (r *renderer) scan() error {
	for _, p := range r.paths {
		content, err := r.read(p)
		if err != nil {
			return err
		}
		i := r.info[p]
		for name, tok := range r.m.Placeholders {
			if bytes.Contains(content, []byte(tok)) {
				r.found[name] = true
			}
		}
		for _, f := range secretFields {
			if bytes.Contains(content, []byte(*f.value(&r.m.BuildSecrets))) {
				r.found[f.name] = true
			}
		}
		out, err := r.substitute(p, content)
		if err != nil {
			return err
		}
		i.changed = !bytes.Equal(out, content)
		i.sum = digest(out)
		i.ownID = bytes.Contains(out, []byte(r.m.BuildID))
		words(out, func(w string) {
			if q, ok := r.hashes[w]; ok && q != p && !slices.Contains(i.refs, q) {
				i.refs = append(i.refs, q)
			}
		})
		slices.Sort(i.refs)
		i.plain = !i.changed && !i.ownID && len(i.refs) == 0
	}
	for _, name := range Variables {
		if !r.found[name] {
			return fmt.Errorf("webbuild: no file of the build holds %s's placeholder %s: the manifest does not describe this build", name, r.m.Placeholders[name])
		}
	}
	for _, f := range secretFields {
		if !r.found[f.name] {
			return fmt.Errorf("webbuild: %s does not hold the build's %s: the manifest does not describe this build", r.m.Worker, f.name)
		}
	}
	return nil
}

// words calls fn with every maximal run of ASCII letters and digits, and
// every maximal run of them, '_' and '-' that holds one of those (a
// Turbopack name), at least 8 long.
func words(b []byte, fn func(string)) {
	spans(b, func(i, j int, outer bool) bool {
		if j-i >= 8 && (!outer || bytes.ContainsAny(b[i:j], "_-")) {
			fn(string(b[i:j]))
		}
		return false
	})
}

// rename decides the installation's BUILD_ID and the new name of every
// hashed asset whose content changes: those whose own text changed, those
// holding the BUILD_ID, and, transitively, those naming a renamed one.
//
// A new hash is derived from the asset's substituted content and the new
// hashes of the assets it names, so equal names always mean equal content
// (what browsers' immutable caching needs) and an asset nothing changed
// keeps its name. Assets naming each other in a cycle are named together.
func (r *renderer) rename() {
	// The BUILD_ID follows the values (it names the immutable files under
	// _next/static/<BUILD_ID>/ and is public, so it depends on no key).
	vals := r.in.Values.byVariable()
	h := sha256.New()
	fmt.Fprintf(h, "openinspect-webbuild buildId\x00%s", r.m.BuildID)
	for _, name := range Variables {
		fmt.Fprintf(h, "\x00%s=%s", name, vals[name])
	}
	// 43 characters; a longer BUILD_ID keeps its tail.
	id := base64.RawURLEncoding.EncodeToString(h.Sum(nil))
	if n := len(r.m.BuildID); n <= len(id) {
		id = id[:n]
	} else {
		id += r.m.BuildID[len(id):]
	}
	r.buildID = id

	r.renamed = map[string]string{}
	var hashed []string
	for _, p := range r.paths {
		if r.info[p].hash != "" {
			hashed = append(hashed, p)
		}
	}
	for _, scc := range components(hashed, func(p string) []string { return r.info[p].refs }) {
		members := map[string]bool{}
		for _, p := range scc {
			members[p] = true
		}
		dirty := false
		h := sha256.New()
		fmt.Fprintf(h, "openinspect-webbuild chunk")
		for _, p := range scc {
			i := r.info[p]
			dirty = dirty || i.changed || i.ownID
			fmt.Fprintf(h, "\x00%s %s", i.hash, i.sum)
			if i.ownID {
				fmt.Fprintf(h, " buildId=%s", r.buildID)
			}
			for _, q := range i.refs {
				if !members[q] {
					nh, ok := r.renamed[r.info[q].hash]
					dirty = dirty || ok
					fmt.Fprintf(h, " %s=%s", r.info[q].hash, nh)
				}
			}
		}
		if !dirty {
			continue
		}
		group := h.Sum(nil)
		for _, p := range scc {
			old := r.info[p].hash
			r.renamed[old] = newHash(group, old)
		}
	}
}

// newHash derives an asset's new hash, of the old one's length and
// alphabet (hex when the old one is hex, else lower-case letters and digits).
func newHash(group []byte, old string) string {
	alphabet := "0123456789abcdef"
	if strings.Trim(old, alphabet) != "" {
		alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	}
	var b strings.Builder
	for counter := 0; b.Len() < len(old); counter++ {
		sum := sha256.Sum256(fmt.Appendf(nil, "%x\x00%s\x00%d", group, old, counter))
		for _, c := range sum {
			if b.Len() < len(old) {
				b.WriteByte(alphabet[int(c)%len(alphabet)])
			}
		}
	}
	return b.String()
}

// components are the strongly connected components of the graph (Tarjan),
// each sorted, in an order where a component comes after every component it
// has an edge to.
func components(nodes []string, edges func(string) []string) [][]string {
	index, low, onStack := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	var out [][]string
	var visit func(string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range edges(v) {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var scc []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			slices.Sort(scc)
			out = append(out, scc)
		}
	}
	for _, v := range nodes {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return out
}

// outPath is a file's path in the output: its hash and the BUILD_ID replaced.
func (r *renderer) outPath(p string) string {
	i := r.info[p]
	if nh, ok := r.renamed[i.hash]; ok {
		dir, base := path.Split(p)
		at := strings.LastIndex(base, i.hash)
		p = dir + base[:at] + nh + base[at+len(i.hash):]
	}
	return strings.ReplaceAll(p, r.m.BuildID, r.buildID)
}

// write is the second pass: every file substituted again, its references to
// renamed assets and the BUILD_ID rewritten, under its new path.
func (r *renderer) write(out Output) (*Result, error) {
	res := &Result{Worker: r.m.Worker, Assets: r.m.Assets, BuildID: r.buildID, Renamed: map[string]string{}}
	for _, p := range r.paths {
		i := r.info[p]
		np := r.outPath(p)
		if np != p && i.hash != "" {
			res.Renamed[p] = np
		}
		var content []byte
		if i.plain {
			f, err := r.src.Open(p)
			if err != nil {
				return nil, fmt.Errorf("webbuild: %w", err)
			}
			file, err := copyOut(out, np, f)
			f.Close()
			if err != nil {
				return nil, err
			}
			res.Files = append(res.Files, file)
			continue
		}
		orig, err := r.read(p)
		if err != nil {
			return nil, err
		}
		if content, err = r.substitute(p, orig); err != nil {
			return nil, err
		}
		content = r.rewrite(content)
		if strings.HasPrefix(p, r.static()) && i.hash == "" && !strings.HasPrefix(p, r.buildDir()) && !bytes.Equal(content, orig) {
			return nil, fmt.Errorf("webbuild: %s: its content changes, but its name carries no content hash to change with it, "+
				"so browsers that cached it (for good, as everything under _next/static/) would keep the old one", p)
		}
		file, err := copyOut(out, np, bytes.NewReader(content))
		if err != nil {
			return nil, err
		}
		res.Files = append(res.Files, file)
	}
	slices.SortFunc(res.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	h := sha256.New()
	for _, f := range res.Files {
		fmt.Fprintf(h, "%s\x00%s\n", f.Path, f.SHA256)
	}
	res.Digest = hex.EncodeToString(h.Sum(nil))
	return res, nil
}

// rewrite replaces every reference to a renamed asset (its hash as a whole
// word, or a Turbopack name as a whole run) and the BUILD_ID.
func (r *renderer) rewrite(content []byte) []byte {
	if len(r.renamed) > 0 {
		var b bytes.Buffer
		last := 0
		spans(content, func(i, j int, _ bool) bool {
			nh, ok := r.renamed[string(content[i:j])]
			if ok {
				b.Write(content[last:i])
				b.WriteString(nh)
				last = j
			}
			return ok
		})
		if last > 0 {
			b.Write(content[last:])
			content = b.Bytes()
		}
	}
	return bytes.ReplaceAll(content, []byte(r.m.BuildID), []byte(r.buildID))
}

// copyOut writes one file, digesting it on the way.
func copyOut(out Output, name string, content io.Reader) (File, error) {
	h := sha256.New()
	counter := &countingReader{r: io.TeeReader(content, h)}
	if err := out.WriteFile(name, counter); err != nil {
		return File{}, fmt.Errorf("webbuild: writing %s: %w", name, err)
	}
	// An Output that stopped early must not leave a short digest.
	if _, err := io.Copy(io.Discard, counter); err != nil {
		return File{}, fmt.Errorf("webbuild: reading %s: %w", name, err)
	}
	return File{Path: name, Size: counter.n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Dir is an Output writing under a directory, which should be empty.
type Dir string

// WriteFile writes one file under the directory.
func (d Dir) WriteFile(name string, content io.Reader) error {
	if !fs.ValidPath(name) {
		return fmt.Errorf("%q is not a relative slash path", name)
	}
	target := filepath.Join(string(d), filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, content)
	return errors.Join(err, f.Close())
}
