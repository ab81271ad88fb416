package emulator_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
)

// randomJS is an ES module of n incompressible bytes.
func randomJS(n int) mod {
	raw := make([]byte, n)
	_, _ = rand.Read(raw)
	return mod{"index.js", "application/javascript+module", "export default {};\n// " + base64.StdEncoding.EncodeToString(raw)[:n]}
}

// TestWorkerUploadSizeLimit: over the plan's size, Cloudflare's 10027 and its
// message; the compressed rule measures after gzip.
func TestWorkerUploadSizeLimit(t *testing.T) {
	c := newClient(start(t, emulator.Options{}))
	mustUpload(t, c, "big", meta(), randomJS(2<<20)) // under the default 64 MiB

	c = newClient(start(t, emulator.Options{Workers: workers.Options{Limits: workers.Limits{MaxScriptBytes: 1 << 20, Compressed: true}}}))
	_, err := upload(t, c, "big", meta(), randomJS(2<<20))
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 10027)
	assert.Contains(t, apiErr.Errors[0].Message, "Your Worker exceeded the size limit of 1 MiB.")
	compressible := mod{"index.js", "application/javascript+module", "export default {};\n// " + strings.Repeat("a", 4<<20)}
	mustUpload(t, c, "big", meta(), compressible)

	c = newClient(start(t, emulator.Options{Workers: workers.Options{Limits: workers.Limits{MaxScriptBytes: 1 << 20}}}))
	_, err = upload(t, c, "big", meta(), compressible)
	requireAPIError(t, err, http.StatusBadRequest, 10027)
}

// TestWorkerUploadVarLimits: vars and secrets are counted together by plan,
// and each is at most 5 KB.
func TestWorkerUploadVarLimits(t *testing.T) {
	s := start(t, emulator.Options{Workers: workers.Options{Limits: workers.FreePlanLimits}})
	c := newClient(s)
	vars := func(n int) []M {
		out := []M{{"type": "secret_text", "name": "S", "text": "secret"}}
		for i := 1; i < n; i++ {
			out = append(out, M{"type": "plain_text", "name": fmt.Sprintf("V%d", i), "text": "x"})
		}
		return out
	}
	mustUpload(t, c, "vars", meta(vars(64)...))
	_, err := upload(t, c, "vars", meta(vars(65)...))
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 10021)
	assert.Contains(t, apiErr.Errors[0].Message, "65 environment variables and secrets; the limit is 64")

	_, err = upload(t, c, "vars", meta(M{"type": "plain_text", "name": "BIG", "text": strings.Repeat("x", 5<<10+1)}))
	apiErr = requireAPIError(t, err, http.StatusBadRequest, 10021)
	assert.Contains(t, apiErr.Errors[0].Message, "environment variable BIG is larger than the limit of 5120 bytes")
	mustUpload(t, c, "vars", meta(M{"type": "plain_text", "name": "BIG", "text": strings.Repeat("x", 5<<10)}))

	paid := newClient(start(t, emulator.Options{}))
	mustUpload(t, paid, "vars", meta(vars(128)...))
	_, err = upload(t, paid, "vars", meta(vars(129)...))
	requireAPIError(t, err, http.StatusBadRequest, 10021)
}

// TestWorkerUploadRequiresExportedClasses: a migration creating a class the
// main module does not export fails with 10070, a binding to such a class
// with 10061; exports reached through `export * from` another part count.
func TestWorkerUploadRequiresExportedClasses(t *testing.T) {
	c := newClient(start(t, emulator.Options{}))
	session := M{"type": "durable_object_namespace", "name": "SESSION", "class_name": "SessionDO"}
	migration := func(m M) M {
		m["migrations"] = M{"new_tag": "v1", "new_sqlite_classes": []string{"SessionDO"}}
		return m
	}
	plain := mod{"index.js", "application/javascript+module", "class SessionDO {}\nexport default {};"}

	_, err := upload(t, c, "do", migration(meta(session)), plain)
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 10070)
	assert.Equal(t, "Cannot apply new-class migration to class 'SessionDO' that is not exported by script", apiErr.Errors[0].Message)

	// Exported through a re-export of another uploaded module.
	reexport := mod{"index.js", "application/javascript+module", "export * from './do.js';\nexport default {};"}
	doModule := mod{"do.js", "application/javascript+module", "export class SessionDO {}"}
	mustUpload(t, c, "do", migration(meta(session)), reexport, doModule)

	// The class is declared now; a later upload that stops exporting it
	// cannot keep its binding.
	_, err = upload(t, c, "do", meta(session), plain)
	apiErr = requireAPIError(t, err, http.StatusBadRequest, 10061)
	assert.Equal(t, "Cannot create binding for class 'SessionDO' that is not exported by the script", apiErr.Errors[0].Message)

	// A re-export of a module the upload does not carry: the runtime cannot
	// start the script, and the upload is refused with its message.
	_, err = upload(t, c, "do", meta(session), mod{"index.js", "application/javascript+module", "export * from './elsewhere.js';\nexport default {};"})
	apiErr = requireAPIError(t, err, http.StatusBadRequest, 10021)
	assert.Equal(t, "Uncaught Error: No such module \"elsewhere.js\".\n  imported from \"index.js\"", apiErr.Errors[0].Message)
}
