package release

import (
	"fmt"
	"os"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// record replaces the contract's "artefacts" section with facts and writes
// the file in the contract's one layout (upstream.Format), so that every
// other fact and line stays as it is; the result must still validate.
func record(file string, facts upstream.Artefacts) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	c, err := upstream.Parse(raw)
	if err != nil {
		return fmt.Errorf("recording into %s: %w", file, err)
	}
	c.Artefacts = facts
	if err := c.Validate(); err != nil {
		return fmt.Errorf("recording into %s: %w", file, err)
	}
	out, err := upstream.Format(c)
	if err != nil {
		return fmt.Errorf("recording into %s: %w", file, err)
	}
	return os.WriteFile(file, out, 0o644)
}
