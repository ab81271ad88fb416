// Command openinspect-sync moves the upstream pin: it derives
// third_party/background-agents/contract.json from an upstream checkout at a
// commit (Terraform read as HCL, the workers' Env types, the sandbox
// builders' toolchain pins, the D1 migration files), merges the decisions
// file kept beside it, writes the contract and UPSTREAM_COMMIT, and prints
// the change report. It refuses to write while a new fact is undecided, and
// names each with what to write. `make sync-upstream COMMIT=<sha>
// SOURCE=<checkout>` runs it; docs/releases.md ("Moving the pin") says how.
//
//	go run ./provider/cmd/openinspect-sync -source ../background-agents -commit <sha>
//	go run ./provider/cmd/openinspect-sync -source ... -commit <sha> -check   # report only
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/openinspect/pulumi-openinspect/provider/cmd/openinspect-sync/pinsync"
)

func main() {
	const pin = "third_party/background-agents/"
	var o pinsync.Options
	flag.StringVar(&o.Source, "source", "", "a git checkout (or bare clone) of upstream holding the commit")
	flag.StringVar(&o.Commit, "commit", "", "the upstream commit to move the pin to")
	flag.StringVar(&o.ContractFile, "contract", pin+"contract.json", "the contract to move from and rewrite")
	flag.StringVar(&o.PinFile, "pin", pin+"UPSTREAM_COMMIT", "the pinned-commit file to rewrite")
	flag.StringVar(&o.DecisionsFile, "decisions", pin+"decisions.json", "the decisions kept beside the contract")
	flag.BoolVar(&o.Check, "check", false, "derive and report, write nothing; exit 3 when the contract would change")
	flag.Parse()
	if o.Source == "" || o.Commit == "" {
		fmt.Fprintln(os.Stderr, "openinspect-sync: -source and -commit are required (make sync-upstream COMMIT=<sha> SOURCE=<checkout>)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := pinsync.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "openinspect-sync: %v\n", err)
		os.Exit(1)
	}
	fmt.Print(res.Report)
	switch {
	case o.Check && res.Changed:
		fmt.Fprintf(os.Stderr, "openinspect-sync: %s at %s differs from the derived contract (-check: nothing written)\n", o.ContractFile, res.Commit)
		os.Exit(3)
	case o.Check:
		fmt.Fprintf(os.Stderr, "openinspect-sync: %s reproduces %s exactly\n", o.ContractFile, res.Commit)
	default:
		fmt.Fprintf(os.Stderr, "openinspect-sync: wrote %s and %s for %s\n", o.ContractFile, o.PinFile, res.Commit)
	}
}
