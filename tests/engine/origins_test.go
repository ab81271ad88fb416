package engine

import (
	"net/url"
	"strings"
)

// The emulator serves each Worker on its own origin, as workers.dev does:
// http://<script>.workers.localhost:PORT (tests/emulator/hosts.go). Go's
// resolver does not send *.localhost to loopback; the tests dial worker
// URLs through internal/loopback.

// workerOrigin is script's URL on the emulator at emuURL (its
// http://127.0.0.1:PORT).
func workerOrigin(emuURL, script string) string {
	u, err := url.Parse(emuURL)
	if err != nil {
		panic("emulator URL " + emuURL + ": " + err.Error())
	}
	return "http://" + script + ".workers.localhost:" + u.Port()
}

// workerWebSocket is the ws:// URL of script's origin.
func workerWebSocket(emuURL, script string) string {
	return "ws://" + strings.TrimPrefix(workerOrigin(emuURL, script), "http://")
}

// workersDevBase is the provider's workersDevBaseUrl for this emulator.
func (e *emulatorProcess) workersDevBase() string { return workerOrigin(e.url, "*") }

// workerURL is where the emulator serves script.
func (e *emulatorProcess) workerURL(script string) string { return workerOrigin(e.url, script) }
