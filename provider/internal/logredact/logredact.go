package logredact

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// verbose reports whether the RPC layer's property logging (level 9) is on.
func verbose() bool { return logging.V(9).Enabled() }

// Register adds every secret string inside the given property structs to
// Pulumi's global log filter: a secret's own value and, for a secret map or
// list, every string within it. Output values flagged secret count too.
func Register(props ...*structpb.Struct) {
	registerWith(nil, props...)
}

// registerWith registers known secret strings together with those found in
// props.
func registerWith(secrets []string, props ...*structpb.Struct) {
	if !verbose() {
		return
	}
	for _, p := range props {
		for _, v := range p.GetFields() {
			collect(v, false, &secrets)
		}
	}
	if len(secrets) > 0 {
		logging.AddGlobalSecretFilter(secrets, "[secret]")
	}
}

func collect(v *structpb.Value, inSecret bool, into *[]string) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		if inSecret {
			*into = append(*into, k.StringValue)
		}
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			collect(e, inSecret, into)
		}
	case *structpb.Value_StructValue:
		fields := k.StructValue.GetFields()
		switch fields[sig.Key].GetStringValue() {
		case sig.Secret:
			inSecret = true
		case sig.OutputValue:
			inSecret = inSecret || fields["secret"].GetBoolValue()
		}
		for _, e := range fields {
			collect(e, inSecret, into)
		}
	}
}

// InstallHandler puts a handler in front of the process's slog default that
// formats each record's message with its arguments and then applies Pulumi's
// secret filter to the result. Call it after Pulumi's logging is initialised
// (the provider factory runs after that).
func InstallHandler() {
	slog.SetDefault(slog.New(formatFirst{inner: slog.Default().Handler()}))
}

// formatFirst formats pulumi.log.argN arguments into the message so that the
// filter sees the final text. Values that know how to redact themselves (the
// property types) are redacted first, as Pulumi's own formatter does.
type formatFirst struct{ inner slog.Handler }

const argPrefix = "pulumi.log.arg"

func (f formatFirst) Enabled(ctx context.Context, level slog.Level) bool {
	return f.inner.Enabled(ctx, level)
}

func (f formatFirst) Handle(ctx context.Context, r slog.Record) error {
	if !verbose() {
		return f.inner.Handle(ctx, r)
	}
	var args []any
	var other []slog.Attr
	r.Attrs(func(a slog.Attr) bool {
		if !strings.HasPrefix(a.Key, argPrefix) {
			other = append(other, a)
			return true
		}
		value := a.Value.Any()
		if redactable, ok := value.(interface{ RedactedLogValue() slog.Value }); ok {
			value = redactable.RedactedLogValue().Any()
		}
		args = append(args, value)
		return true
	})
	if len(args) == 0 {
		return f.inner.Handle(ctx, r)
	}
	formatted := slog.NewRecord(r.Time, r.Level, logging.FilterString(fmt.Sprintf(r.Message, args...)), r.PC)
	formatted.AddAttrs(other...)
	return f.inner.Handle(ctx, formatted)
}

func (f formatFirst) WithAttrs(attrs []slog.Attr) slog.Handler {
	return formatFirst{inner: f.inner.WithAttrs(attrs)}
}

func (f formatFirst) WithGroup(name string) slog.Handler {
	return formatFirst{inner: f.inner.WithGroup(name)}
}

// Server wraps a provider server so that each request's secrets are
// registered with the filter before the wrapped server unmarshals them.
func Server(inner pulumirpc.ResourceProviderServer) pulumirpc.ResourceProviderServer {
	return server{inner}
}

type server struct {
	pulumirpc.ResourceProviderServer
}

// registered registers the request's secret-bearing properties, then hands
// the request to the wrapped server's method next: the order every
// forwarded call needs, so no secret is unmarshalled before it is known.
func registered[Req, Resp any](ctx context.Context, r Req, next func(context.Context, Req) (Resp, error), props ...*structpb.Struct) (Resp, error) {
	Register(props...)
	return next(ctx, r)
}

func (s server) CheckConfig(ctx context.Context, r *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return registered(ctx, r, s.ResourceProviderServer.CheckConfig, r.GetOlds(), r.GetNews())
}

func (s server) DiffConfig(ctx context.Context, r *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	return registered(ctx, r, s.ResourceProviderServer.DiffConfig, r.GetOlds(), r.GetNews(), r.GetOldInputs())
}

func (s server) Configure(ctx context.Context, r *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	return registered(ctx, r, s.ResourceProviderServer.Configure, r.GetArgs())
}

func (s server) Check(ctx context.Context, r *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return registered(ctx, r, s.ResourceProviderServer.Check, r.GetOlds(), r.GetNews())
}

func (s server) Diff(ctx context.Context, r *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	return registered(ctx, r, s.ResourceProviderServer.Diff, r.GetOlds(), r.GetNews(), r.GetOldInputs())
}

func (s server) Create(ctx context.Context, r *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	return registered(ctx, r, s.ResourceProviderServer.Create, r.GetProperties())
}

func (s server) Read(ctx context.Context, r *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	return registered(ctx, r, s.ResourceProviderServer.Read, r.GetProperties(), r.GetInputs())
}

func (s server) Update(ctx context.Context, r *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
	return registered(ctx, r, s.ResourceProviderServer.Update, r.GetOlds(), r.GetNews(), r.GetOldInputs())
}

func (s server) Delete(ctx context.Context, r *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	return registered(ctx, r, s.ResourceProviderServer.Delete, r.GetProperties(), r.GetOldInputs())
}

func (s server) Construct(ctx context.Context, r *pulumirpc.ConstructRequest) (*pulumirpc.ConstructResponse, error) {
	var configSecrets []string
	for _, key := range r.GetConfigSecretKeys() {
		configSecrets = append(configSecrets, r.GetConfig()[key])
	}
	registerWith(configSecrets, r.GetInputs())
	return s.ResourceProviderServer.Construct(ctx, r)
}

func (s server) Call(ctx context.Context, r *pulumirpc.CallRequest) (*pulumirpc.CallResponse, error) {
	return registered(ctx, r, s.ResourceProviderServer.Call, r.GetArgs())
}
