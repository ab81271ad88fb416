package tenant

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/big"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// GeneratedSecret is a random secret created once and kept in state, for the
// keys an installation needs but nobody supplies (service auth secrets,
// encryption keys, peppers). It never changes on later runs unless its
// length, alphabet or keepers change.
type GeneratedSecret struct{}

const GeneratedSecretToken = "openinspect:index:GeneratedSecret"

// GeneratedSecretArgs are the inputs of a GeneratedSecret.
type GeneratedSecretArgs struct {
	Length       int               `pulumi:"length,optional" provider:"replaceOnChanges"`
	Alphabet     string            `pulumi:"alphabet,optional" provider:"replaceOnChanges"`
	Keepers      map[string]string `pulumi:"keepers,optional" provider:"replaceOnChanges"`
	InitialValue string            `pulumi:"initialValue,optional" provider:"secret"`
}

// GeneratedSecretState holds the value.
type GeneratedSecretState struct {
	GeneratedSecretArgs
	Value string `pulumi:"value" provider:"secret"`
}

var (
	_ infer.CustomCheck[GeneratedSecretArgs]                                = (*GeneratedSecret)(nil)
	_ infer.CustomUpdate[GeneratedSecretArgs, GeneratedSecretState]         = (*GeneratedSecret)(nil)
	_ infer.ExplicitDependencies[GeneratedSecretArgs, GeneratedSecretState] = (*GeneratedSecret)(nil)
)

// Annotate documents the resource.
func (r *GeneratedSecret) Annotate(a infer.Annotator) {
	a.Describe(r, "A random secret generated once with the operating system's CSPRNG and kept, as a "+
		"Pulumi secret, in state. Later runs never change it; changing `length`, `alphabet` or `keepers` makes a new one. "+
		"Set `initialValue` to carry over a value an existing installation already uses (keys such as "+
		"PROVIDER_ACCOUNTS_ENCRYPTION_KEY must never change once used).")
}

// Annotate documents the inputs.
func (a *GeneratedSecretArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Length, "Number of characters.")
	an.SetDefault(&a.Length, 64)
	an.Describe(&a.Alphabet, "hex (0-9a-f), alphanumeric (A-Z, a-z, 0-9), or base64: `length` random bytes, standard base64-encoded (upstream's encryption keys are 32 such bytes).")
	an.SetDefault(&a.Alphabet, "hex")
	an.Describe(&a.Keepers, "Arbitrary values that, when changed, make a new secret.")
	an.Describe(&a.InitialValue, "Use this value instead of generating one.")
}

// Annotate documents the outputs.
func (s *GeneratedSecretState) Annotate(a infer.Annotator) {
	a.Describe(&s.Value, "The secret.")
}

// WireDependencies marks the value secret whatever the inputs are.
func (*GeneratedSecret) WireDependencies(f infer.FieldSelector, _ *GeneratedSecretArgs, state *GeneratedSecretState) {
	f.OutputField(&state.Value).AlwaysSecret()
}

const alphanumeric = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// Check validates length and alphabet.
func (*GeneratedSecret) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[GeneratedSecretArgs], error) {
	args, failures, err := infer.DefaultCheck[GeneratedSecretArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[GeneratedSecretArgs]{Inputs: args, Failures: failures}, err
	}
	if args.Length < 16 || args.Length > 1024 {
		failures = append(failures, p.CheckFailure{Property: "length", Reason: fmt.Sprintf("%d is out of range 16-1024", args.Length)})
	}
	if args.Alphabet != "hex" && args.Alphabet != "alphanumeric" && args.Alphabet != "base64" {
		failures = append(failures, p.CheckFailure{Property: "alphabet", Reason: fmt.Sprintf("%q is not hex, alphanumeric or base64", args.Alphabet)})
	}
	// A length or alphabet computed at a preview decodes as the zero value.
	return infer.CheckResponse[GeneratedSecretArgs]{Inputs: args, Failures: family.KnownFailures(req.NewInputs, failures)}, nil
}

// Create generates the value (or takes initialValue).
func (*GeneratedSecret) Create(_ context.Context, req infer.CreateRequest[GeneratedSecretArgs]) (infer.CreateResponse[GeneratedSecretState], error) {
	state := GeneratedSecretState{GeneratedSecretArgs: req.Inputs}
	id, err := randomString(16, "hex")
	if err != nil {
		return infer.CreateResponse[GeneratedSecretState]{}, err
	}
	if req.DryRun {
		return infer.CreateResponse[GeneratedSecretState]{ID: id, Output: state}, nil
	}
	state.Value = req.Inputs.InitialValue
	if state.Value == "" {
		if state.Value, err = randomString(req.Inputs.Length, req.Inputs.Alphabet); err != nil {
			return infer.CreateResponse[GeneratedSecretState]{}, err
		}
	}
	return infer.CreateResponse[GeneratedSecretState]{ID: id, Output: state}, nil
}

// Update keeps the value: only initialValue can change in place, and it
// matters only at creation.
func (*GeneratedSecret) Update(_ context.Context, req infer.UpdateRequest[GeneratedSecretArgs, GeneratedSecretState]) (infer.UpdateResponse[GeneratedSecretState], error) {
	state := req.State
	state.GeneratedSecretArgs = req.Inputs
	return infer.UpdateResponse[GeneratedSecretState]{Output: state}, nil
}

func randomString(length int, alphabet string) (string, error) {
	if alphabet == "base64" {
		buf := make([]byte, length)
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("reading random bytes: %w", err)
		}
		return base64.StdEncoding.EncodeToString(buf), nil
	}
	if alphabet == "hex" {
		buf := make([]byte, (length+1)/2)
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("reading random bytes: %w", err)
		}
		return hex.EncodeToString(buf)[:length], nil
	}
	out := make([]byte, length)
	limit := big.NewInt(int64(len(alphanumeric)))
	for i := range out {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return "", fmt.Errorf("reading random bytes: %w", err)
		}
		out[i] = alphanumeric[n.Int64()]
	}
	return string(out), nil
}
