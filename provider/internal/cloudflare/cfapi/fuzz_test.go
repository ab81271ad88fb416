package cfapi

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"testing"
)

// FuzzMultipartBody: whatever the names and contents, the upload body is a
// well-formed multipart form that reads back to the same parts (metadata
// first, then each module, content byte for byte), and building it never
// panics.
func FuzzMultipartBody(f *testing.F) {
	f.Add("index.js", []byte("export default {}"), "lib.cjs", []byte("module.exports = 1"), "KEY", "value")
	f.Add("main.mjs", []byte{}, "data.wasm", []byte{0, 1, 2, 0xff}, "", "")
	f.Add("a\"b\r\n.js", []byte("--boundary\r\n"), "x.py", []byte("\r\n--\r\n"), "N\x00", "\xff\xfe")
	f.Add("", []byte("x"), "index.js", []byte("y"), "DB", "")
	f.Fuzz(func(t *testing.T, main string, mainContent []byte, other string, otherContent []byte, binding, text string) {
		up := ScriptUpload{
			Name: "w", MainModule: main,
			Modules:           []Module{{Name: main, Content: mainContent}, {Name: other, Content: otherContent}},
			CompatibilityDate: "2024-09-23",
			Bindings:          []Binding{{Type: "secret_text", Name: binding, Text: &text}},
		}
		contentType, body, err := up.MultipartBody()
		if err != nil {
			return // refusing is fine; panicking is not
		}
		_, params, err := mime.ParseMediaType(contentType)
		if err != nil {
			t.Fatalf("content type %q: %v", contentType, err)
		}
		reader := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		var contents [][]byte
		for {
			part, err := reader.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("reading the body back: %v", err)
			}
			content, err := io.ReadAll(part)
			if err != nil {
				t.Fatalf("reading a part: %v", err)
			}
			contents = append(contents, content)
		}
		if len(contents) != 3 {
			t.Fatalf("%d parts, want metadata and two modules", len(contents))
		}
		var meta map[string]any
		if err := json.Unmarshal(contents[0], &meta); err != nil {
			t.Fatalf("metadata is not JSON: %v", err)
		}
		if !bytes.Equal(contents[1], mainContent) || !bytes.Equal(contents[2], otherContent) {
			t.Fatal("a module's content changed on the way")
		}
	})
}
