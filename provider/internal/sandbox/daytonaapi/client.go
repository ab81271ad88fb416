// Package daytonaapi is the provider's thin client for Daytona: making a
// snapshot name ready for upstream's builder (which builds the snapshot
// itself, with Daytona's Python SDK), reading and deleting snapshots, and
// finding and deleting the sandboxes an installation owns. It wraps the official Go
// SDK (github.com/daytonaio/daytona/libs/sdk-go) and, where the SDK does not
// expose what is needed (sandbox labels, reactivating a snapshot), the
// SDK's own generated API client (libs/api-client-go) at the same version.
//
// Errors say what failed ("daytona: building snapshot \"x\": ...") and never
// contain the API key.
package daytonaapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	apiclient "github.com/daytonaio/daytona/libs/api-client-go"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	dterrors "github.com/daytonaio/daytona/libs/sdk-go/pkg/errors"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"
)

// DefaultAPIURL is Daytona's public API, used when Options.APIURL is empty.
const DefaultAPIURL = "https://app.daytona.io/api"

// Options configures a Client.
type Options struct {
	// APIKey is a Daytona API key with snapshot read, write and delete and
	// sandbox read and delete permissions. Required.
	APIKey string
	// APIURL is the API root, e.g. "https://app.daytona.io/api". Empty
	// means DefaultAPIURL (DAYTONA_API_URL is not consulted: the provider
	// resolves its configuration itself).
	APIURL string
	// Target is the Daytona region sandboxes are created in. Empty lets the
	// SDK fall back to DAYTONA_TARGET; snapshots ignore it.
	Target string
}

// Client talks to one Daytona organization. It is safe for concurrent use.
type Client struct {
	sdk    *daytona.Client
	api    *apiclient.APIClient
	apiKey string

	// pollEvery is how often build and removal progress is polled (the
	// SDK's own build polling uses one second too).
	pollEvery time.Duration
	// retries and retryBase govern retrying idempotent calls on 429, 5xx
	// and transport errors; the SDK itself never retries.
	retries   int
	retryBase time.Duration
}

// New validates opts and builds a client. It makes no network call.
func New(opts Options) (*Client, error) {
	if strings.TrimSpace(opts.APIKey) == "" {
		return nil, errors.New("daytona: an API key is required")
	}
	apiURL := strings.TrimRight(opts.APIURL, "/")
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("daytona: API URL %q is not an http(s) URL", opts.APIURL)
	}
	sdk, err := daytona.NewClientWithConfig(&types.DaytonaConfig{APIKey: opts.APIKey, APIUrl: apiURL, Target: opts.Target})
	if err != nil {
		return nil, redact(fmt.Errorf("daytona: configuring the SDK: %w", err), opts.APIKey)
	}
	cfg := apiclient.NewConfiguration()
	cfg.Servers = apiclient.ServerConfigurations{{URL: apiURL}}
	cfg.HTTPClient = &http.Client{Timeout: 60 * time.Second}
	cfg.UserAgent = "pulumi-openinspect (daytona api-client-go " + daytona.Version + ")"
	return &Client{sdk: sdk, api: apiclient.NewAPIClient(cfg), apiKey: opts.APIKey,
		pollEvery: time.Second, retries: 3, retryBase: time.Second}, nil
}

// authCtx carries the key the way the generated client expects it.
func (c *Client) authCtx(ctx context.Context) context.Context {
	return context.WithValue(ctx, apiclient.ContextAccessToken, c.apiKey)
}

// apiStatus is the HTTP status behind an error from the SDK or the
// generated client: 0 for transport errors.
func apiStatus(err error) int {
	var nf *dterrors.DaytonaNotFoundError
	var rl *dterrors.DaytonaRateLimitError
	var de *dterrors.DaytonaError
	var se *statusError
	switch {
	case errors.As(err, &nf):
		return http.StatusNotFound
	case errors.As(err, &rl):
		return http.StatusTooManyRequests
	case errors.As(err, &de):
		return de.StatusCode
	case errors.As(err, &se):
		return se.status
	}
	return 0
}

// Refused reports whether err is Daytona refusing the API key: 401 for a
// key it does not know, 403 for one without the permission the call needs.
func Refused(err error) bool {
	status := apiStatus(err)
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

func isNotFound(err error) bool { return apiStatus(err) == http.StatusNotFound }

// statusError is a failed call made through the generated client, with the
// message from Daytona's error body.
type statusError struct {
	status  int
	message string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("Daytona error (status %d): %s", e.status, e.message)
}

// apiError turns the generated client's outcome into an error with the
// status and Daytona's message.
func apiError(err error, resp *http.Response) error {
	if err == nil {
		return nil
	}
	if resp == nil {
		return err
	}
	msg := err.Error()
	var ge *apiclient.GenericOpenAPIError
	if errors.As(err, &ge) && len(ge.Body()) > 0 {
		var body struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(ge.Body(), &body) == nil && body.Message != "" {
			msg = body.Message
		}
	}
	return &statusError{status: resp.StatusCode, message: msg}
}

// retryable reports whether a failed idempotent call is worth repeating.
func retryable(err error) bool {
	st := apiStatus(err)
	return st == 0 || st == http.StatusTooManyRequests || st >= 500
}

// retry runs an idempotent call, repeating it with exponential back-off on
// 429, 5xx and transport errors. A cancelled or expired ctx ends it with
// ctx's error: the SDK flattens context errors into plain messages, so they
// are recovered here for errors.Is.
func (c *Client) retry(ctx context.Context, call func() error) error {
	delay := c.retryBase
	for attempt := 0; ; attempt++ {
		err := call()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if attempt >= c.retries || !retryable(err) {
			return err
		}
		if err := sleep(ctx, delay); err != nil {
			return err
		}
		delay *= 2
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fail wraps err as "daytona: <op>: err" with the key scrubbed from the
// message, whatever produced it.
func (c *Client) fail(op string, err error) error {
	return redact(fmt.Errorf("daytona: %s: %w", op, err), c.apiKey)
}

// redactedError keeps the chain for errors.Is/As but says nothing secret.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redact(err error, key string) error {
	if err == nil || key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), key, "[redacted]"), err: err}
}
