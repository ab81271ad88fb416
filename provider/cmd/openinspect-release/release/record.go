package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// record replaces the contract's "artefacts" section, its last, with facts,
// leaving every other byte of the file as it is, and checks that the result
// still parses and validates.
func record(file string, facts upstream.Artefacts) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	const key = "\n  \"artefacts\": "
	at := bytes.LastIndex(raw, []byte(key))
	if at < 0 {
		return fmt.Errorf("%s has no top-level \"artefacts\" section to record into", file)
	}
	section, err := json.MarshalIndent(facts, "  ", "  ")
	if err != nil {
		return err
	}
	var out bytes.Buffer
	out.Write(raw[:at+len(key)])
	out.Write(section)
	out.WriteString("\n}\n")
	c, err := upstream.Parse(out.Bytes())
	if err != nil {
		return fmt.Errorf("recording into %s: %w", file, err)
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("recording into %s: %w", file, err)
	}
	return os.WriteFile(file, out.Bytes(), 0o644)
}
