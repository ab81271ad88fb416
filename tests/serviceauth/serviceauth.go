// Package serviceauth signs requests the way Open-Inspect's services sign their
// calls to the control plane (the sig1 scheme; facts from upstream's
// packages/shared/src/service-auth.ts at the pin), for tests that call a
// control plane running in the emulator's workerd. It is written apart from
// the provider's signer (provider/internal/controlplane) on purpose: a test
// signing with the code under test would prove nothing.
package serviceauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// Request is what a signature covers.
type Request struct {
	Service string // web, slack-bot, github-bot, linear-bot
	Key     string // the service's SERVICE_AUTH_SECRET_<SERVICE>
	At      time.Time
	Nonce   string
	Method  string
	Path    string // the pathname the worker sees, percent-encoded as sent
	Query   string // the canonical query ("" for none)
	Body    []byte
	Actor   string
}

// Header is the X-OpenInspect-Service-Signature value for r: zero At means
// now, an empty Nonce a fresh one.
func Header(r Request) string {
	if r.At.IsZero() {
		r.At = time.Now()
	}
	if r.Nonce == "" {
		r.Nonce = fmt.Sprintf("%016x", time.Now().UnixNano())
	}
	ms := r.At.UnixMilli()
	digest := sha256.Sum256(r.Body)
	msg := fmt.Sprintf("sig1\n%s\n%d\n%s\n%s\n%s\n%s\n%x\n%s", r.Service, ms, r.Nonce, r.Method, r.Path, r.Query, digest, r.Actor)
	mac := hmac.New(sha256.New, []byte(r.Key))
	mac.Write([]byte(msg))
	return fmt.Sprintf("sig1.%d.%s.%s", ms, r.Nonce, hex.EncodeToString(mac.Sum(nil)))
}
