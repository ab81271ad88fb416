package tenant

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGeneratedSecretBase64IsRandomBytes(t *testing.T) {
	value, err := randomString(32, "base64")
	require.NoError(t, err)
	raw, err := base64.StdEncoding.DecodeString(value)
	require.NoError(t, err)
	assert.Len(t, raw, 32)
	assert.Len(t, value, 44)
}
