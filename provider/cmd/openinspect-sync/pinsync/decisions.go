package pinsync

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// Decisions are the facts a person decides because upstream's tree cannot
// say them: what an upstream value means in the contract's terms, and the
// names and words for what is new. The file sits beside contract.json
// (third_party/background-agents/decisions.json); the sync merges it and
// refuses to write the contract while a fact it needs is missing from both.
//
// Everything already in the current contract is kept from it (a condition's
// description, an input's name, a cron's purpose), so the file holds only
// the mappings the derivation needs every time (Variables, Expressions) and
// the decisions for facts that are new at the commit being moved to.
type Decisions struct {
	// Notes is for the person keeping the file; the sync ignores it.
	Notes string `json:"notes,omitempty"`
	// Variables maps an upstream Terraform variable to the contract's
	// derived value it is (deployment_name is deploymentName): variables
	// that are neither an input nor here are undecided when a fact uses them.
	Variables map[string]string `json:"variables,omitempty"`
	// Expressions maps an upstream expression (its source text, whitespace
	// collapsed, as the sync prints it) to the source it is, for values the
	// sync does not translate itself: locals and module outputs that stand
	// for a derived value such as local.web_app_url.
	Expressions map[string]upstream.Source `json:"expressions,omitempty"`
	// Inputs names new upstream variables that become installer inputs, by
	// upstream variable name. Type, default and secrecy come from upstream.
	Inputs map[string]NamedFact `json:"inputs,omitempty"`
	// Generated names new generated secrets, by upstream resource
	// (random_password.x). Length and alphabet come from upstream.
	Generated map[string]NamedFact `json:"generated,omitempty"`
	// Conditions are new named conditions: the sync prints the test it
	// derived; the person names it and describes it. The default is computed.
	Conditions map[string]ConditionDecision `json:"conditions,omitempty"`
	// Crons give the purpose of a new cron trigger: worker -> schedule ->
	// purpose.
	Crons map[string]map[string]string `json:"crons,omitempty"`
	// Bundles are the reference bundle digests of new workers until the
	// release step records them (a bundle's digest needs a build).
	Bundles map[string]upstream.BundleDigest `json:"bundles,omitempty"`
}

// NamedFact is the contract's name and description for a new fact.
type NamedFact struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// ConditionDecision is a new condition: its description and test (as the
// sync printed it).
type ConditionDecision struct {
	Description string        `json:"description"`
	Test        upstream.Test `json:"test"`
}

// LoadDecisions reads a decisions file strictly; a missing file is an empty
// set of decisions.
func LoadDecisions(path string) (*Decisions, error) {
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return &Decisions{}, nil
	} else if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var d Decisions
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &d, nil
}

// Undecided is a fact the derivation needs and neither the current contract
// nor the decisions file gives: what it is, and what to write where.
type Undecided struct {
	Fact  string
	Write string
}

// UndecidedError lists every undecided fact; the contract is not written.
type UndecidedError struct {
	Facts []Undecided
}

func (e *UndecidedError) Error() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d fact(s) at this commit are new and undecided; decide each in the decisions file, then run the sync again (the contract was not written):", len(e.Facts))
	for _, u := range e.Facts {
		fmt.Fprintf(&b, "\n  - %s\n    write: %s", u.Fact, u.Write)
	}
	return b.String()
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
