package logredact

import (
	"context"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// Provider wraps a provider so that the secrets its own operations produce
// (a generated value, a digest kept secret) are registered with the filter
// before the server marshals, and so logs, the response.
func Provider(inner p.Provider) p.Provider {
	if create := inner.Create; create != nil {
		inner.Create = func(ctx context.Context, req p.CreateRequest) (p.CreateResponse, error) {
			resp, err := create(ctx, req)
			registerMap(resp.Properties)
			return resp, err
		}
	}
	if update := inner.Update; update != nil {
		inner.Update = func(ctx context.Context, req p.UpdateRequest) (p.UpdateResponse, error) {
			resp, err := update(ctx, req)
			registerMap(resp.Properties)
			return resp, err
		}
	}
	if read := inner.Read; read != nil {
		inner.Read = func(ctx context.Context, req p.ReadRequest) (p.ReadResponse, error) {
			resp, err := read(ctx, req)
			registerMap(resp.Properties)
			registerMap(resp.Inputs)
			return resp, err
		}
	}
	if check := inner.Check; check != nil {
		inner.Check = func(ctx context.Context, req p.CheckRequest) (p.CheckResponse, error) {
			resp, err := check(ctx, req)
			registerMap(resp.Inputs)
			return resp, err
		}
	}
	return inner
}

func registerMap(m property.Map) {
	if !verbose() {
		return
	}
	var secrets []string
	for _, v := range m.All {
		collectValue(v, false, &secrets)
	}
	registerWith(secrets)
}

func collectValue(v property.Value, inSecret bool, into *[]string) {
	inSecret = inSecret || v.Secret()
	switch {
	case v.IsString():
		if inSecret {
			*into = append(*into, v.AsString())
		}
	case v.IsArray():
		for _, e := range v.AsArray().All {
			collectValue(e, inSecret, into)
		}
	case v.IsMap():
		for _, e := range v.AsMap().All {
			collectValue(e, inSecret, into)
		}
	}
}
