// Package webbuild turns one build of upstream's web UI, made with unique
// placeholder values, into the files of one installation: the Worker's
// module and its static assets, with the installation's values, its own
// per-build keys and a digest naming the result. It is pure Go: no network,
// no Node, no build.
//
// # Why substitute instead of building per installation
//
// Upstream's web (Next.js through OpenNext) inlines four NEXT_PUBLIC_*
// values when it is built (the WebSocket URL, the sandbox provider, the app
// name and icon), so each installation needs its own files. Building at
// deploy time would put Node, npm, about 1 GB of packages and 70-90 s (1.7 GB
// of memory) into every `pulumi up`, and a fetch of Google Fonts or a mock of
// it. Instead the release step builds once, at the pin, with a placeholder
// for each value, and records them in a manifest (ManifestFile) beside the
// build; the plugin embeds both, and Render writes an installation's files in
// well under a second. What stays shared is everything else: the code, the
// styles, the chunk graph, every file without a placeholder (byte for byte).
// The cost is that the values must fit every context the build put them in,
// which is what the substituter and its tests are about, and that code which
// computes with a value at build time (a length, a hash) would not follow:
// upstream's web only passes them through.
//
// # Contexts
//
// A placeholder is made of letters, digits and `_`, so it appears verbatim in
// every context. Each file is read in the grammar of its kind (.js: the ES
// module lexer of provider/esm; .html: golang.org/x/net/html's tokenizer;
// .json and OpenNext's .cache entries: JSON; .rsc/.txt: text), and a string
// that holds a placeholder is decoded, substituted as the layer inside it (an
// HTML document, or text whose JSON strings take JSON escapes, as in an RSC
// payload) and encoded again with its own quotes. So JSON inside a JS string
// inside an HTML <script> inside a JSON cache entry is escaped for each layer,
// innermost first, and `<`, `>`, `&` and U+2028/9 are always escaped in JS
// and JSON strings (no `</script>` can appear). A placeholder anywhere else (a
// comment, a <style>, a file of another kind) is an error naming the file and
// the byte, as are values with control characters or invalid UTF-8.
//
// # Per-build keys are per installation
//
// Next also generates, per build, the server-actions encryption key and the
// preview-mode ID, signing key and encryption key. Shipped in a public plugin
// they would be everyone's, so Render replaces each (found in the worker
// module; one in a static asset is an error: it would be public) by the
// installation's, of the same shape (base64 or hex), which the component
// generates once and keeps as Pulumi secrets. The BUILD_ID is not a secret
// (it is in every page): it is derived from the build's and the values.
//
// # Renamed chunks
//
// Files under _next/static/ are served as immutable: a browser keeps one for
// a year under its name. A client chunk's name carries a hash of its content,
// so a chunk whose content changes must change its name, or a browser that
// saw the installation under its old app name would keep the old chunk.
// Render therefore gives a new hash (same length and alphabet) to every
// hashed asset whose content changes: those holding a placeholder, and,
// transitively, those naming a renamed one (a loader's chunk list). The new
// hash is derived from the asset's substituted content and the new names it
// holds (assets naming each other in a cycle are named together), so an
// equal name always means equal content, and an asset whose content did not
// change keeps its name: changing the app name renames exactly the chunks
// holding it and those that name them. Every reference (the hash as a whole
// word) in every file is rewritten, and _next/static/<BUILD_ID>/ follows the
// derived BUILD_ID. A changed file under _next/static/ with no hash in its
// name is an error.
//
// # Digest and memory
//
// Result.Digest is the SHA-256 of every output path with its content's
// SHA-256: the same build, values and keys give the same bytes and digest,
// which is what the Worker's content hash and assets manifest see. Render
// reads the build twice, one file at a time (a file over MaxFileSize is
// refused): first to learn what each file holds and names, then to write it;
// a file with nothing to change is streamed through. Errors name the file.
package webbuild
