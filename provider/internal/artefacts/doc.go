// Package artefacts is the set of upstream artefacts a release embeds in the
// plugin binary: the worker bundles built at the pinned commit, the D1
// migrations, and the Modal app and sandbox runtime sources, laid out like an
// upstream checkout, with a manifest of SHA-256 digests.
//
// The release step (provider/cmd/openinspect-release) writes a set into the
// ignored directory dist/ with Write; the plugin embeds that directory and
// the OpenInspect component reads it through Embedded, materialising it as a
// checkout-shaped directory in the provider's cache (Materialise), verified
// against the manifest each time. Only dist/README.md is committed, so a
// build without the release step embeds nothing and Embedded says so.
//
// It imports only the standard library; the installation component and the
// release step use it.
package artefacts
