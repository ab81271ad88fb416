package upstream

import (
	"bytes"
	"reflect"
	"testing"
)

// TestContractIsInTheOneLayout: the committed contract.json is byte for byte
// what Format writes for it, so that the pin sync and the release step's
// -record, which write the file with Format, change only the facts they
// change (reformat it with `make sync-upstream` or Format if this fails).
func TestContractIsInTheOneLayout(t *testing.T) {
	c := mustLoad(t)
	got, err := Format(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, Raw()) {
		a, b := Raw(), got
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		line := bytes.Count(a[:i], []byte("\n")) + 1
		t.Fatalf("contract.json is not in Format's layout; first difference at line %d:\n committed: %q\n formatted: %q",
			line, excerpt(a, i), excerpt(b, i))
	}
}

func excerpt(b []byte, at int) []byte {
	end := min(len(b), at+80)
	return b[at:end]
}

// TestFormatRoundTrips: what Format writes parses back to the same contract,
// and formatting it again changes nothing.
func TestFormatRoundTrips(t *testing.T) {
	c := mustLoad(t)
	once, err := Format(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(once)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, back) {
		t.Fatal("Format's output parses to another contract")
	}
	twice, err := Format(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(once, twice) {
		t.Fatal("formatting twice changes the output")
	}
}
