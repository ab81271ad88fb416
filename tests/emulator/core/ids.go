package core

import (
	"crypto/rand"
	"encoding/hex"
)

// NewUUID returns a random RFC 4122 version 4 UUID, the shape D1 uses.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// NewHexID returns 32 hex digits, the shape of KV namespace IDs.
func NewHexID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Less2 orders pairs (account, name): what inventories sort by.
func Less2(a1, a2, b1, b2 string) bool {
	if a1 != b1 {
		return a1 < b1
	}
	return a2 < b2
}
