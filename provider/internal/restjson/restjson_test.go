package restjson

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDoDecodesExpectedAnswersAndQuotesThePlatformOnOthers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "k" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"message":"invalid key"}`))
			return
		}
		switch r.URL.Path {
		case "/thing":
			_, _ = w.Write([]byte(`{"name":"a"}`))
		case "/gone":
			w.WriteHeader(http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusTeapot)
			_, _ = w.Write([]byte(`not json`))
		}
	}))
	defer srv.Close()
	message := func(body []byte) string {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &e)
		return e.Message
	}
	c := New("demo", srv.URL, http.Header{"X-Api-Key": {"k"}}, message)
	ctx := context.Background()

	var got struct{ Name string }
	status, err := c.Do(ctx, http.MethodGet, "/thing", &got, http.StatusOK)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "a", got.Name)

	status, err = c.Do(ctx, http.MethodDelete, "/gone", nil, http.StatusNoContent, http.StatusNotFound)
	require.NoError(t, err, "an expected status with no body")
	assert.Equal(t, http.StatusNotFound, status)

	_, err = c.Do(ctx, http.MethodGet, "/other", nil, http.StatusOK)
	var apiErr *Error
	require.True(t, errors.As(err, &apiErr))
	assert.Equal(t, "demo: GET /other: 418 I'm a teapot", err.Error(), "no platform message: the status text")

	bad := New("demo", srv.URL, http.Header{"X-Api-Key": {"wrong"}}, message)
	_, err = bad.Do(ctx, http.MethodGet, "/thing", nil, http.StatusOK)
	assert.EqualError(t, err, "demo: GET /thing: 401 invalid key")
}

func TestMessageAtTakesTheFirstNonEmptyStringAtAPath(t *testing.T) {
	read := MessageAt("error.message", "error", "message")
	for body, want := range map[string]string{
		`{"error":{"code":"x","message":"nested"}}`: "nested",
		`{"error":"flat","message":"later"}`:        "flat",
		`{"error":{"code":"x"},"message":"last"}`:   "last",
		`{"error":42}`: "",
		`not json`:     "",
		`["message"]`:  "",
	} {
		if got := read([]byte(body)); got != want {
			t.Errorf("%s: got %q, want %q", body, got, want)
		}
	}
}

func TestCheckURLAcceptsOnlyAbsoluteHTTP(t *testing.T) {
	for raw, ok := range map[string]bool{"https://api.e2b.app": true, "http://127.0.0.1:8080/api": true,
		"ftp://host": false, "/relative": false, "https://": false, "::": false} {
		if err := CheckURL(raw); (err == nil) != ok {
			t.Errorf("%q: err %v, want ok=%v", raw, err, ok)
		}
	}
}

func TestDeleteTakesAThingAlreadyGoneAsDeleted(t *testing.T) {
	var deleted []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodDelete {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		deleted = append(deleted, r.URL.Path)
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusOK)
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/gone":
			w.WriteHeader(http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"message":"in use"}`))
		}
	}))
	defer srv.Close()
	c := New("demo", srv.URL, nil, MessageAt("message"))
	for _, path := range []string{"/ok", "/empty", "/gone"} {
		assert.NoError(t, c.Delete(t.Context(), path), path)
	}
	assert.EqualError(t, c.Delete(t.Context(), "/used"), "demo: DELETE /used: 400 in use")
	assert.Equal(t, []string{"/ok", "/empty", "/gone", "/used"}, deleted)
}

func TestWithQueryAddsTheParameterEveryCallCarries(t *testing.T) {
	q := url.Values{"project": {"p 1"}}
	assert.Equal(t, "/x?project=p+1&teamId=team_1", WithQuery("/x", q, "teamId", "team_1"))
	assert.Equal(t, url.Values{"project": {"p 1"}}, q, "the caller's query is left as it was")
	assert.Equal(t, "/x?project=p+1", WithQuery("/x", q, "teamId", ""), "no value: no parameter")
	assert.Equal(t, "/x?teamId=team_1", WithQuery("/x", nil, "teamId", "team_1"))
	assert.Equal(t, "/x", WithQuery("/x", nil, "teamId", ""))
	assert.Equal(t, "/x", WithQuery("/x", url.Values{}, "teamId", ""))
}

func TestBaseURLFallsBackChecksAndTrims(t *testing.T) {
	base, err := BaseURL("", "https://api.example.com/")
	require.NoError(t, err)
	assert.Equal(t, "https://api.example.com", base, "empty: the fallback, trimmed")
	base, err = BaseURL("http://127.0.0.1:8080/v1//", "https://api.example.com")
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:8080/v1", base)
	_, err = BaseURL("ftp://example.com", "https://api.example.com")
	assert.EqualError(t, err, `"ftp://example.com" is not an http(s) URL`)
}
