// Command openinspect-release is the release step: it fetches upstream at the
// pinned commit, installs what the workers need, builds the shared package
// and then each worker with upstream's own build, twice in two separate
// trees, fails unless both builds are byte-identical and match the digests
// recorded in third_party/background-agents/contract.json, and writes the
// bundles, migrations and sandbox sources with a manifest of SHA-256 digests
// into provider/internal/artefacts/dist, which the plugin embeds. goreleaser
// runs it before building (.goreleaser.yaml, before.hooks).
//
// It needs git, Node.js with npm, network to the upstream source and to the
// npm registry; see the README's "Releases" for how long it takes.
//
//	go run ./provider/cmd/openinspect-release                       # the pin, from GitHub
//	go run ./provider/cmd/openinspect-release -source /path/to/clone # or a mirror, or a tarball
//	go run ./provider/cmd/openinspect-release -source ... -record third_party/background-agents/contract.json
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/openinspect/pulumi-openinspect/provider/cmd/openinspect-release/release"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

func main() {
	c, err := upstream.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// A flag set of its own: the packages it builds on register glog's
	// flags on the global one (-log_dir, -v, ...), which this command never
	// reads, and its -h listed them beside its own.
	fs := flag.NewFlagSet("openinspect-release", flag.ExitOnError)
	var o release.Options
	fs.StringVar(&o.Source, "source", c.Upstream.Repository+".git",
		"upstream: a git URL, a tarball URL, a local git clone or mirror, or a local tarball (.tar, .tar.gz)")
	fs.StringVar(&o.Commit, "commit", c.Upstream.Commit, "the upstream commit to build (a release builds the pin)")
	fs.StringVar(&o.Out, "out", "provider/internal/artefacts/dist", "the directory the plugin embeds")
	fs.StringVar(&o.Work, "work", "", "where the two build trees go (default: a temporary directory)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the build trees and their logs")
	fs.StringVar(&o.Record, "record", "", "record this build's digests in this contract.json instead of checking against it")
	fs.BoolVar(&o.Unverified, "unverified", false, "build a set that is not checked against the recorded digests (test fixtures)")
	fs.BoolVar(&o.Prebuilt, "prebuilt", false, "take the bundles the source holds instead of building (fixture trees; needs -unverified)")
	fs.BoolVar(&o.NoWeb, "no-web", false, "skip the web UI's placeholder build (a quicker set without the web)")
	fs.StringVar(&o.NPM, "npm", "npm", "the npm command")
	fs.StringVar(&o.Node, "node", "node", "the node command")
	// ExitOnError: -h prints the usage and exits 0, a bad flag exits 2.
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "openinspect-release: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		os.Exit(2)
	}

	o.Log = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "openinspect-release: "+format+"\n", args...) }
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	res, err := release.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "openinspect-release: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "openinspect-release: %d files written to %s; fetch %s, builds %v, total %s\n",
		len(res.Manifest.Files), o.Out, res.Fetch.Round(time.Second), res.Builds, time.Since(start).Round(time.Second))
}
