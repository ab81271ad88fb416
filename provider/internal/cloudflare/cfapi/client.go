package cfapi

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	cf "github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/option"
)

// DefaultBaseURL is the public Cloudflare v4 API.
const DefaultBaseURL = "https://api.cloudflare.com/client/v4/"

// Options configures a Client.
type Options struct {
	APIToken  string
	AccountID string
	// BaseURL points the client at another v4 endpoint (a gateway or the local
	// emulator). Empty means the public API.
	BaseURL string
	// HTTPClient replaces the transport, for tests that count or fault calls.
	HTTPClient *http.Client
}

// Client talks to one Cloudflare account with one token.
type Client struct {
	api       *cf.Client
	accountID string
}

// New builds a client. It makes no network call.
func New(opts Options) (*Client, error) {
	if opts.APIToken == "" {
		return nil, errors.New("cloudflare: API token is empty")
	}
	if opts.AccountID == "" {
		return nil, errors.New("cloudflare: account ID is empty")
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	reqOpts := []option.RequestOption{
		option.WithAPIToken(opts.APIToken),
		option.WithBaseURL(base),
	}
	if opts.HTTPClient != nil {
		reqOpts = append(reqOpts, option.WithHTTPClient(opts.HTTPClient))
	}
	return &Client{api: cf.NewClient(reqOpts...), accountID: opts.AccountID}, nil
}

// AccountID is the account every call is scoped to.
func (c *Client) AccountID() string { return c.accountID }

// APIError is a Cloudflare error envelope reduced to what callers branch on.
// It never carries request headers, so the token cannot leak through it.
type APIError struct {
	Op         string
	StatusCode int
	Codes      []int
	Messages   []string
}

func (e *APIError) Error() string {
	parts := make([]string, 0, len(e.Codes))
	for i, code := range e.Codes {
		parts = append(parts, fmt.Sprintf("[%d] %s", code, e.Messages[i]))
	}
	if len(parts) == 0 {
		parts = append(parts, http.StatusText(e.StatusCode))
	}
	return fmt.Sprintf("%s: HTTP %d: %s", e.Op, e.StatusCode, strings.Join(parts, "; "))
}

// HasCode reports whether err is a Cloudflare API error carrying code.
func HasCode(err error, code int) bool {
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return slices.Contains(apiErr.Codes, code)
}

// IsNotFound reports whether err says the addressed object does not exist.
func IsNotFound(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound
}

// wrap converts SDK errors into APIError and names the operation.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if sdkErr, ok := errors.AsType[*cf.Error](err); ok {
		apiErr := &APIError{Op: op, StatusCode: sdkErr.StatusCode}
		for _, e := range sdkErr.Errors {
			apiErr.Codes = append(apiErr.Codes, int(e.Code))
			apiErr.Messages = append(apiErr.Messages, e.Message)
		}
		return apiErr
	}
	return fmt.Errorf("%s: %w", op, err)
}

// autoPager is what the SDK's auto-paging lists offer: their items one at a
// time, across pages.
type autoPager[T any] interface {
	Next() bool
	Current() T
	Err() error
}

// findListed reads a list until match accepts an item and returns that
// item, or ok=false when none does; listing names the list in an error.
func findListed[T any](pager autoPager[T], match func(T) bool, listing string) (item T, ok bool, err error) {
	for pager.Next() {
		if item = pager.Current(); match(item) {
			return item, true, nil
		}
	}
	var none T
	return none, false, wrap(listing, pager.Err())
}
