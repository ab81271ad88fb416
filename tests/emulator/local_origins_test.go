package emulator_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
)

// A local origin serves its script at the root of a loopback port of its
// own, whatever the Host, with the path and query exactly as sent and its
// assets first; the admin API lists it; an address that is not loopback is
// refused.
func TestLocalOriginServesItsScriptAtTheRoot(t *testing.T) {
	s := start(t, emulator.Options{Logf: t.Logf, Workers: workers.Options{LocalOrigins: map[string]string{"web": "127.0.0.1:0"}}})
	c := newClient(s)
	uploadWithAssets(t, s, c, "web", map[string]assetFile{
		"/_next/static/x.css": {"text/css", "body{color:red}"},
	}, echoJS("web"))
	mustUpload(t, c, "other", M{"main_module": "index.js", "compatibility_date": "2025-01-01", "bindings": []M{}}, echoJS("other"))

	origin := s.Workers().LocalOrigins()["web"]
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, origin)
	assert.NotEqual(t, s.URL(), origin, "a port of its own")

	e := echoOf(t, origin+"/login?next=%2Fsession", "")
	assert.Equal(t, echoed{Script: "web", Host: strings.TrimPrefix(origin, "http://"), Path: "/login?next=%2Fsession"}, e)
	e = echoOf(t, origin+"/", "localhost:"+origin[strings.LastIndex(origin, ":")+1:])
	assert.Equal(t, "web", e.Script, "any Host reaches the script")
	status, header, body := hostGet(t, origin+"/_next/static/x.css", "")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "body{color:red}", body, "assets first, as on its other URLs")
	assert.Contains(t, header.Get("Content-Type"), "text/css")

	status, _, body = hostGet(t, s.URL()+"/__emulator/local-origins", "")
	require.Equal(t, http.StatusOK, status, body)
	var listed map[string]string
	require.NoError(t, json.Unmarshal([]byte(body), &listed))
	assert.Equal(t, map[string]string{"web": origin}, listed)

	_, _, err := workers.ParseLocalOrigin("web=192.0.2.1:8788")
	assert.ErrorContains(t, err, "not a loopback address")
	_, _, err = workers.ParseLocalOrigin("127.0.0.1:8788")
	assert.ErrorContains(t, err, "want SCRIPT=HOST:PORT")
}
