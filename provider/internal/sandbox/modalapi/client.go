// Package modalapi is the provider's Modal client: named secrets, the
// deployed app and its web endpoints, its sandboxes and images, in one
// environment of one workspace.
//
// It is a thin layer over modal-go v0.7.0. Where the SDK has no call (named
// secret upsert, app stop and listing, environment and workspace lookup) it
// uses the gRPC stubs modal-go ships. Modal calls those
// stubs non-public, so they are used here and nowhere else in the provider.
//
// Both go over one connection this package dials itself: modal-go can only be
// pointed at a server through ~/.modal.toml or process-wide environment
// variables, which a provider serving several stacks at once must not touch,
// so the connection is handed to modal-go as its ControlPlaneClient, with the
// headers, auth token and retries modal-go would otherwise add.
//
// Nothing talks to Modal before the first call: New only validates, because
// modal-go's client fetches an auth token as soon as it is built.
package modalapi

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	modal "github.com/modal-labs/libmodal/modal-go"
	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// DefaultServerURL is Modal's API.
const DefaultServerURL = "https://api.modal.com"

// Options say where and as whom to talk to Modal.
type Options struct {
	TokenID     string
	TokenSecret string
	// Environment is the Modal environment; "" means the workspace's default.
	Environment string
	// ServerURL is the API's URL; "" means DefaultServerURL. http:// means
	// plaintext HTTP/2 (the emulator).
	ServerURL string
}

// Client talks to one environment. It is safe for concurrent use; Close
// releases its connection.
type Client struct {
	opts   Options
	target string
	creds  credentials.TransportCredentials

	tokens tokenCache

	mu     sync.Mutex
	conn   *grpc.ClientConn
	raw    pb.ModalClientClient
	sdk    *modal.Client
	closed bool
}

// New validates opts; it makes no network call.
func New(opts Options) (*Client, error) {
	if opts.TokenID == "" || opts.TokenSecret == "" {
		return nil, errors.New("modal: a token ID and a token secret are required")
	}
	raw := opts.ServerURL
	if raw == "" {
		raw = DefaultServerURL
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("modal: server URL %q is not of the form http(s)://host[:port]", raw)
	}
	c := &Client{opts: opts}
	switch u.Scheme {
	case "https":
		c.creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
		c.target = hostPort(u, "443")
	case "http":
		c.creds = insecure.NewCredentials()
		c.target = hostPort(u, "80")
	default:
		return nil, fmt.Errorf("modal: server URL %q must start with https:// or http://", raw)
	}
	return c, nil
}

func hostPort(u *url.URL, defPort string) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), defPort)
}

// Close releases the connection. A closed Client answers every call with an
// error.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.sdk != nil {
		c.sdk.Close()
		c.sdk = nil
	}
	var err error
	if c.conn != nil {
		err = c.conn.Close()
		c.conn, c.raw = nil, nil
	}
	return err
}

// connect dials once and builds the modal-go client on first use. A failed
// build (bad credentials, Modal unreachable) is not remembered, so a later
// call tries again.
func (c *Client) connect(ctx context.Context) (pb.ModalClientClient, *modal.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nil, errors.New("modal: client is closed")
	}
	if c.sdk != nil {
		return c.raw, c.sdk, nil
	}
	if c.conn == nil {
		conn, err := grpc.NewClient(c.target,
			grpc.WithTransportCredentials(c.creds),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(100<<20), grpc.MaxCallSendMsgSize(100<<20)),
			grpc.WithChainUnaryInterceptor(c.headers, c.authToken, retry, defaultTimeout),
			grpc.WithChainStreamInterceptor(c.streamHeaders),
		)
		if err != nil {
			return nil, nil, fmt.Errorf("modal: connecting to %s: %w", c.target, err)
		}
		c.conn, c.raw = conn, pb.NewModalClientClient(conn)
	}
	// Checking the credentials first, under the caller's deadline, turns a
	// bad token into a prompt error.
	if _, err := c.tokens.get(ctx, c.raw); err != nil {
		return nil, nil, fmt.Errorf("modal: authenticating: %w", err)
	}
	// modal-go fetches its own token while it builds, with no deadline of
	// ours; wait for it only as long as ctx allows.
	type built struct {
		sdk *modal.Client
		err error
	}
	done := make(chan built, 1)
	go func() {
		sdk, err := modal.NewClientWithOptions(&modal.ClientParams{
			TokenID: c.opts.TokenID, TokenSecret: c.opts.TokenSecret, Environment: c.opts.Environment,
			ControlPlaneClient: c.raw, Logger: discardLogger,
		})
		done <- built{sdk, err}
	}()
	select {
	case b := <-done:
		if b.err != nil {
			return nil, nil, fmt.Errorf("modal: authenticating: %w", b.err)
		}
		c.sdk = b.sdk
		return c.raw, c.sdk, nil
	case <-ctx.Done():
		go func() {
			if b := <-done; b.sdk != nil {
				b.sdk.Close()
			}
		}()
		return nil, nil, fmt.Errorf("modal: authenticating: %w", ctx.Err())
	}
}

// tokenCache holds the short-lived token AuthTokenGet issues, refreshed on
// demand (no background goroutine) a few minutes before it expires.
type tokenCache struct {
	mu     sync.Mutex
	token  string
	expiry time.Time
}

// tokenRefreshWindow is how long before expiry a token is replaced, and
// tokenDefaultTTL what a token without an exp claim is assumed to last
// (both modal-go's).
const (
	tokenRefreshWindow = 5 * time.Minute
	tokenDefaultTTL    = 20 * time.Minute
)

func (t *tokenCache) get(ctx context.Context, raw pb.ModalClientClient) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && time.Until(t.expiry) > tokenRefreshWindow {
		return t.token, nil
	}
	resp, err := raw.AuthTokenGet(ctx, &pb.AuthTokenGetRequest{})
	if err != nil {
		return "", err
	}
	if resp.GetToken() == "" {
		return "", errors.New("modal: AuthTokenGet answered without a token")
	}
	t.token, t.expiry = resp.GetToken(), jwtExpiry(resp.GetToken())
	return t.token, nil
}

// jwtExpiry reads a JWT's exp claim without verifying it (the token is
// Modal's business; only its lifetime matters here).
func jwtExpiry(tok string) time.Time {
	parts := strings.Split(tok, ".")
	if len(parts) == 3 {
		if b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "=")); err == nil {
			var claims struct {
				Exp float64 `json:"exp"`
			}
			if json.Unmarshal(b, &claims) == nil && claims.Exp > 0 {
				return time.Unix(int64(claims.Exp), 0)
			}
		}
	}
	return time.Now().Add(tokenDefaultTTL)
}

// defaultTimeout bounds calls made without a deadline (modal-go makes some
// with context.Background), so a server that never answers cannot hang a
// deploy forever.
func defaultTimeout(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// discardLogger keeps modal-go quiet: a provider's stderr is the engine's
// log, and errors reach the caller anyway.
var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// clientVersion is the Python-client version modal-go reports as behaving
// like, sent with the same client type so Modal treats these calls alike.
const clientVersion = "1.0.0"

func (c *Client) withHeaders(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx,
		"x-modal-client-type", strconv.Itoa(int(pb.ClientType_CLIENT_TYPE_LIBMODAL_GO)),
		"x-modal-client-version", clientVersion,
		"x-modal-token-id", c.opts.TokenID,
		"x-modal-token-secret", c.opts.TokenSecret,
	)
}

func (c *Client) headers(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(c.withHeaders(ctx), method, req, reply, cc, opts...)
}

func (c *Client) streamHeaders(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return streamer(c.withHeaders(ctx), desc, cc, method, opts...)
}

// authToken adds the short-lived token from AuthTokenGet, as modal-go does
// on its own connections.
func (c *Client) authToken(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if method != pb.ModalClient_AuthTokenGet_FullMethodName {
		tok, err := c.tokens.get(ctx, pb.NewModalClientClient(cc))
		if err != nil {
			return fmt.Errorf("getting an auth token: %w", err)
		}
		ctx = metadata.AppendToOutgoingContext(ctx, "x-modal-auth-token", tok)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// Retry policy, modal-go's: up to 3 retries of transient failures, backing
// off from 100 ms to at most 1 s. Every call this package makes is
// idempotent; the idempotency key lets Modal spot a retried one anyway.
const (
	retries        = 3
	retryBaseDelay = 100 * time.Millisecond
	retryMaxDelay  = time.Second
)

func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.Internal, codes.Unknown, codes.DeadlineExceeded, codes.Canceled:
		return true
	}
	return false
}

func retry(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	key := newIdempotencyKey()
	delay := retryBaseDelay
	for attempt := 0; ; attempt++ {
		actx := metadata.AppendToOutgoingContext(ctx, "x-idempotency-key", key, "x-retry-attempt", strconv.Itoa(attempt))
		err := invoker(actx, method, req, reply, cc, opts...)
		if err == nil || attempt == retries || !retryable(err) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(delay*2, retryMaxDelay)
	}
}

// envLabel names the environment in errors.
func (c *Client) envLabel() string {
	if c.opts.Environment == "" {
		return "(default)"
	}
	return c.opts.Environment
}

// Unauthenticated reports whether err says Modal refused the credentials.
func Unauthenticated(err error) bool {
	return status.Code(err) == codes.Unauthenticated
}

// notFound reports whether err is Modal's "no such object", in either form
// (modal-go's NotFoundError or a NotFound status from a raw call).
func notFound(err error) bool {
	var nf modal.NotFoundError
	return errors.As(err, &nf) || status.Code(err) == codes.NotFound
}

func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
