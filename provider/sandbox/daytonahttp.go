package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// plainHTTPSitecustomize lets the Daytona Python SDK upload build contexts
// to object storage over plain HTTP. The SDK (0.161.0) makes its
// obstore S3Store inside a cleared environment and passes no client
// options, and obstore refuses an http:// endpoint unless told
// allow_http, so no setting of ours can reach it. Against a plain-HTTP
// Daytona API (a local stand-in such as the emulator; Daytona itself is
// HTTPS and never gets this) the builder runs with this module on
// PYTHONPATH: it adds allow_http for http:// endpoints only and changes
// nothing else the SDK or the builder does.
const plainHTTPSitecustomize = `# Written by pulumi-openinspect for builds against a plain-HTTP Daytona API.
try:
    import obstore.store as _obstore_store
except ImportError:
    _obstore_store = None

if _obstore_store is not None:
    _S3Store = _obstore_store.S3Store

    def _s3_store_allowing_http(*args, **kwargs):
        if str(kwargs.get("endpoint") or "").startswith("http://"):
            options = dict(kwargs.pop("client_options", None) or {})
            options.setdefault("allow_http", True)
            kwargs["client_options"] = options
        return _S3Store(*args, **kwargs)

    _obstore_store.S3Store = _s3_store_allowing_http
`

// plainHTTPStorage writes plainHTTPSitecustomize under cacheDir and
// returns the directory to put on PYTHONPATH.
func plainHTTPStorage(cacheDir string) (string, error) {
	dir := filepath.Join(cacheDir, "plain-http-object-storage")
	file := filepath.Join(dir, "sitecustomize.py")
	if b, err := os.ReadFile(file); err == nil && bytes.Equal(b, []byte(plainHTTPSitecustomize)) {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("daytona: cache: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".sitecustomize-*.py")
	if err != nil {
		return "", fmt.Errorf("daytona: cache: %w", err)
	}
	_, werr := tmp.WriteString(plainHTTPSitecustomize)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("daytona: cache: %w", errors.Join(werr, cerr))
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("daytona: cache: %w", err)
	}
	return dir, nil
}
