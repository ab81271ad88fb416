package webbuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"
)

// ManifestFile is the name of the manifest beside a placeholder build: the
// fixture's and the one the release step writes for the real build.
const ManifestFile = "openinspect-web.json"

// SchemaVersion is the version of the manifest's format this package reads.
const SchemaVersion = 1

// The variables upstream's web inlines when it is built, in the order they
// are reported.
const (
	VarWSURL           = "NEXT_PUBLIC_WS_URL"
	VarSandboxProvider = "NEXT_PUBLIC_SANDBOX_PROVIDER"
	VarAppName         = "NEXT_PUBLIC_APP_NAME"
	VarAppIconURL      = "NEXT_PUBLIC_APP_ICON_URL"
)

// Variables lists the inlined variables, each of which a manifest names a
// placeholder for.
var Variables = []string{VarWSURL, VarSandboxProvider, VarAppName, VarAppIconURL}

// Manifest describes one placeholder build: where its parts are and which
// values the build was made with.
type Manifest struct {
	SchemaVersion int `json:"schemaVersion"`
	// Worker is the path of the Worker's (bundled) main module, relative to
	// the build root; Assets the directory of its static assets.
	Worker string `json:"worker"`
	Assets string `json:"assets"`
	// BuildID is the BUILD_ID Next gave the build.
	BuildID string `json:"buildId"`
	// Placeholders maps each of Variables to the value it was built with.
	Placeholders map[string]string `json:"placeholders"`
	// BuildSecrets are the keys Next generated for this build. They are in
	// the public plugin; Render replaces every one of them.
	BuildSecrets Secrets `json:"buildSecrets"`
}

// Secrets are the keys Next generates per build. An installation must have
// its own: with the build's, anyone holding the plugin could forge server
// action payloads and preview-mode cookies.
type Secrets struct {
	// ServerActionsEncryptionKey encrypts server actions' closed-over
	// values: base64 of 32 bytes.
	ServerActionsEncryptionKey string `json:"serverActionsEncryptionKey"`
	// PreviewModeID is the preview-mode cookie's value: hex of 16 bytes.
	PreviewModeID string `json:"previewModeId"`
	// PreviewModeSigningKey and PreviewModeEncryptionKey sign and encrypt
	// the preview-data cookie: hex of 32 bytes each.
	PreviewModeSigningKey    string `json:"previewModeSigningKey"`
	PreviewModeEncryptionKey string `json:"previewModeEncryptionKey"`
}

// String and GoString keep the keys out of any log or error that formats a
// Secrets value.
func (Secrets) String() string   { return "webbuild.Secrets{redacted}" }
func (Secrets) GoString() string { return "webbuild.Secrets{redacted}" }

// secretField is one key with its shape: the installation's value must have
// the shape of the build's, so that a plain byte replacement is right in
// every context the build holds it in (base64 and hex need no escaping).
type secretField struct {
	name  string
	value func(*Secrets) *string
	bytes int
	hex   bool
}

var secretFields = []secretField{
	{"serverActionsEncryptionKey", func(s *Secrets) *string { return &s.ServerActionsEncryptionKey }, 32, false},
	{"previewModeId", func(s *Secrets) *string { return &s.PreviewModeID }, 16, true},
	{"previewModeSigningKey", func(s *Secrets) *string { return &s.PreviewModeSigningKey }, 32, true},
	{"previewModeEncryptionKey", func(s *Secrets) *string { return &s.PreviewModeEncryptionKey }, 32, true},
}

// Check reports the first key that does not have its shape, naming it
// (never its value) under prefix.
func (s Secrets) Check(prefix string) error {
	for _, f := range secretFields {
		v := *f.value(&s)
		var raw []byte
		var err error
		if f.hex {
			if strings.ToLower(v) != v {
				err = fmt.Errorf("upper-case digits")
			} else {
				raw, err = hex.DecodeString(v)
			}
		} else {
			raw, err = base64.StdEncoding.DecodeString(v)
		}
		if err != nil || len(raw) != f.bytes {
			kind := "base64 (standard alphabet, padded)"
			if f.hex {
				kind = "lower-case hex"
			}
			return fmt.Errorf("%s.%s: must be %s of %d bytes", prefix, f.name, kind, f.bytes)
		}
	}
	return nil
}

// GenerateSecrets draws an installation's keys from r (crypto/rand.Reader
// in production).
func GenerateSecrets(r io.Reader) (Secrets, error) {
	var s Secrets
	for _, f := range secretFields {
		b := make([]byte, f.bytes)
		if _, err := io.ReadFull(r, b); err != nil {
			return Secrets{}, fmt.Errorf("webbuild: generating %s: %w", f.name, err)
		}
		if f.hex {
			*f.value(&s) = hex.EncodeToString(b)
		} else {
			*f.value(&s) = base64.StdEncoding.EncodeToString(b)
		}
	}
	return s, nil
}

var (
	// A placeholder is made of characters no context escapes, so it appears
	// verbatim wherever the build put it, and is long enough to be unique.
	placeholderPattern = regexp.MustCompile(`^[A-Za-z0-9_]{16,128}$`)
	buildIDPattern     = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)
)

// ReadManifest reads and checks the manifest at the root of a build.
func ReadManifest(build fs.FS) (*Manifest, error) {
	raw, err := fs.ReadFile(build, ManifestFile)
	if err != nil {
		return nil, fmt.Errorf("webbuild: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("webbuild: %s %s", ManifestFile, decodeProblem(err))
	}
	if err := m.Check(); err != nil {
		return nil, fmt.Errorf("webbuild: %s: %w", ManifestFile, err)
	}
	return &m, nil
}

// decodeProblem says in words why the manifest did not decode: the JSON
// decoder's own errors name Go types ("cannot unmarshal string into Go
// struct field Manifest.schemaVersion of type int").
func decodeProblem(err error) string {
	var syntax *json.SyntaxError
	var kind *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "is empty: rebuild the web (its builder writes the manifest last)"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "ends early (a truncated file): rebuild the web"
	case errors.As(err, &syntax):
		return fmt.Sprintf("is not valid JSON (at byte %d): rebuild the web", syntax.Offset)
	case errors.As(err, &kind):
		return fmt.Sprintf("has %s as a JSON %s, which must be a %s: rebuild the web with the builder of this provider's version",
			kind.Field, kind.Value, jsonKind(kind.Type))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Sprintf("has the field %s, which this provider's manifest does not have: the build was made by another "+
			"version of the web builder; rebuild it with this provider's", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return "is not a web build manifest: rebuild the web"
}

// jsonKind is the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16,
		reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "list"
	}
	return "object"
}

// Check validates a manifest: clean paths, one distinct placeholder per
// variable (none inside another), a BUILD_ID and build keys of their shapes.
func (m *Manifest) Check() error {
	if m.SchemaVersion != SchemaVersion {
		return fmt.Errorf("schemaVersion %d; this plugin reads version %d", m.SchemaVersion, SchemaVersion)
	}
	for field, p := range map[string]string{"worker": m.Worker, "assets": m.Assets} {
		if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == "." || strings.HasPrefix(p, "../") {
			return fmt.Errorf("%s: %q is not a clean relative path", field, p)
		}
	}
	if m.Worker == m.Assets || strings.HasPrefix(m.Worker, m.Assets+"/") {
		return fmt.Errorf("worker: %q lies inside assets %q", m.Worker, m.Assets)
	}
	if !buildIDPattern.MatchString(m.BuildID) {
		return fmt.Errorf("buildId: %q is not 8 to 64 characters of A-Z, a-z, 0-9, _ and -", m.BuildID)
	}
	if len(m.Placeholders) != len(Variables) {
		return fmt.Errorf("placeholders: want exactly %s", strings.Join(Variables, ", "))
	}
	for _, v := range Variables {
		p, ok := m.Placeholders[v]
		switch {
		case !ok:
			return fmt.Errorf("placeholders: %s is missing", v)
		case !placeholderPattern.MatchString(p):
			return fmt.Errorf("placeholders.%s: %q is not 16 to 128 characters of A-Z, a-z, 0-9 and _", v, p)
		}
		for _, w := range Variables {
			if w != v && strings.Contains(m.Placeholders[w], p) {
				return fmt.Errorf("placeholders.%s: %q is contained in %s's placeholder", v, p, w)
			}
		}
	}
	return m.BuildSecrets.Check("buildSecrets")
}

// Values are one installation's values of Variables.
type Values struct {
	WSURL, SandboxProvider, AppName, AppIconURL string
}

func (v Values) byVariable() map[string]string {
	return map[string]string{VarWSURL: v.WSURL, VarSandboxProvider: v.SandboxProvider, VarAppName: v.AppName, VarAppIconURL: v.AppIconURL}
}

// maxValueLen bounds a value: the longest is a URL.
const maxValueLen = 2048

// Check refuses values no context can carry faithfully: invalid UTF-8,
// control characters (a raw one is invalid in a JS string and an HTML
// parse error), and values holding a placeholder (the substitution's own
// completeness check would see it).
func (v Values) Check(m *Manifest) error {
	vals := v.byVariable()
	for _, name := range Variables {
		val := vals[name]
		switch {
		case len(val) > maxValueLen:
			return fmt.Errorf("%s: longer than %d bytes", name, maxValueLen)
		case !utf8.ValidString(val):
			return fmt.Errorf("%s: not valid UTF-8", name)
		}
		for _, r := range val {
			if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
				return fmt.Errorf("%s: holds the control character %U", name, r)
			}
		}
		for _, p := range m.Placeholders {
			if strings.Contains(val, p) {
				return fmt.Errorf("%s: holds a build placeholder", name)
			}
		}
	}
	return nil
}

// digest is a value's SHA-256 in hex.
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
