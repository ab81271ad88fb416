// Package pinsync moves the upstream pin mechanically: it reads upstream's
// tree at a commit (the Terraform of terraform/environments/production and
// the modules it calls, with HCL's parser; the workers' Env types; the
// sandbox builders' toolchain pins; the D1 migration files), derives
// contract.json for that commit from it, the current contract and a small
// decisions file, and reports every fact added, removed or changed.
//
// Files, by concern: sync.go runs it; tree.go extracts the commit from the
// checkout; hcl.go parses Terraform directories and reads expressions;
// values.go translates conditions and values into the contract's named
// conditions and sources; derive.go builds the contract (inputs, generated
// secrets, compatibility, conditions, bundles), with resources.go (D1, KV,
// R2, queues, consumers) and workers.go; pins.go reads the toolchain pins,
// the migration files and the Env types; decisions.go is the decisions file
// and the refusal; report.go the change report.
package pinsync

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// Options say what to sync and where the pin's files are.
type Options struct {
	// Source is a git checkout (work tree or bare clone) of upstream that
	// holds Commit.
	Source string
	// Commit is the upstream commit to move the pin to (a full or an
	// abbreviated ID, or any name git resolves in Source).
	Commit string
	// ContractFile is contract.json, the contract the pin moves from, which
	// is rewritten; PinFile is UPSTREAM_COMMIT; DecisionsFile is the
	// decisions file (absent: no decisions).
	ContractFile, PinFile, DecisionsFile string
	// Check derives and reports but writes nothing; Result.Changed says
	// whether writing would change the contract.
	Check bool
}

// Result is what a sync derived.
type Result struct {
	Commit   string
	Contract []byte // the derived contract.json, in upstream.Format's layout
	Report   *Report
	// Changed is true when Contract differs from the current file.
	Changed bool
}

// Run derives the contract of Commit and, unless Check, writes it and the
// commit. It writes nothing when anything is undecided (an *UndecidedError)
// or wrong.
func Run(ctx context.Context, o Options) (*Result, error) {
	currentRaw, err := os.ReadFile(o.ContractFile)
	if err != nil {
		return nil, fmt.Errorf("the current contract: %w", err)
	}
	current, err := upstream.Parse(currentRaw)
	if err != nil {
		return nil, fmt.Errorf("the current contract %s: %w", o.ContractFile, err)
	}
	decisions, err := LoadDecisions(o.DecisionsFile)
	if err != nil {
		return nil, fmt.Errorf("the decisions file: %w", err)
	}
	work, err := os.MkdirTemp("", "openinspect-sync-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	t, err := extract(ctx, o.Source, o.Commit, work)
	if err != nil {
		return nil, err
	}
	derived, d, err := derive(t, current, decisions)
	if err != nil {
		return nil, err
	}
	out, err := upstream.Format(derived)
	if err != nil {
		return nil, err
	}
	res := &Result{Commit: t.commit, Contract: out, Report: buildReport(current, derived, d), Changed: !bytes.Equal(out, currentRaw)}
	if o.Check {
		return res, nil
	}
	if err := os.WriteFile(o.ContractFile, out, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(o.PinFile, []byte(t.commit+"\n"), 0o644); err != nil {
		return nil, err
	}
	return res, nil
}
