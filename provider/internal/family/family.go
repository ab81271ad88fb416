package family

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
)

// PackageName is the Pulumi package name; tokens are openinspect:index:<Name>.
const PackageName = "openinspect"

// ModuleMap puts every family's resources and types into the schema's one
// "index" module. Tokens are derived from a Go type's package (the last path
// element), so without it a Worker would be openinspect:cloudflare:Worker; the
// families are a code layout, not part of the public API.
var ModuleMap = map[tokens.ModuleName]tokens.ModuleName{
	"provider":     "index",
	"config":       "index",
	"cloudflare":   "index",
	"tenant":       "index",
	"sandbox":      "index",
	"installation": "index",
	"web":          "index",
	"vercel":       "index",
}

// Token is the type token of a resource or type named name.
func Token(name string) string { return PackageName + ":index:" + name }

// PulumiName is the property name a struct field has on the wire: its pulumi
// tag without options.
func PulumiName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("pulumi"), ",")
	return name
}

// SHA256Hex is the lower-case hex SHA-256 of b, the digest every content hash
// of the provider uses.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// SHA256HexString is SHA256Hex of a string without copying it into a byte
// slice first (a worker's module may be megabytes): it goes through a small
// buffer, because io.WriteString copies the whole string when, as here, the
// hash has no WriteString (measured: 25 MB more at the plugin's peak for five
// 5 MB inline Workers).
func SHA256HexString(s string) string {
	h := sha256.New()
	var buf [32 << 10]byte
	for len(s) > 0 {
		n := copy(buf[:], s)
		_, _ = h.Write(buf[:n])
		s = s[n:]
	}
	return hex.EncodeToString(h.Sum(nil))
}

// SHA256HexFile is SHA256Hex of a file's content, hashed as it is read
// rather than after reading it whole.
func SHA256HexFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Deref is *p, or fallback when p is nil: optional inputs are pointers.
func Deref[T any](p *T, fallback T) T {
	if p == nil {
		return fallback
	}
	return *p
}

// DisplayOwner is an installation identity as ownership messages name it.
func DisplayOwner(owner string) string {
	if owner == "" {
		return "no installation identity"
	}
	return owner
}
