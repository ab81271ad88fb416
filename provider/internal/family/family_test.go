package family

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Hashing a 5 MB module given as a string allocates a small buffer, not a
// copy of the module, and gives the digest of its bytes.
func TestSHA256HexStringDoesNotCopy(t *testing.T) {
	module := strings.Repeat("export default {};\n", 5<<20/19)
	sum := sha256.Sum256([]byte(module))

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := SHA256HexString(module)
	runtime.ReadMemStats(&after)

	assert.Equal(t, hex.EncodeToString(sum[:]), got)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20),
		"bytes allocated hashing a %d-byte string", len(module))
	assert.Equal(t, SHA256Hex(nil), SHA256HexString(""))
}
