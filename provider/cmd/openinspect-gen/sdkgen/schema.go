// Package sdkgen produces the committed Pulumi schema (schema.json) and the
// Go, Node.js and Python SDKs (sdk/) of the openinspect provider without any
// Pulumi CLI or language plugin: the schema comes from the provider in-process
// and the SDKs from the pulumi/pkg codegen packages.
//
// It lives beside the openinspect-gen command rather than under
// provider/internal so that tests/drift can import it.
//
// Nothing here names a resource: everything is derived from the schema the
// provider reports, so adding a resource only needs `make schema sdks`.
package sdkgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"

	"github.com/openinspect/pulumi-openinspect/provider"
)

// schemaServeVersion is the version the provider is served at while its schema
// is read. It never reaches schema.json: the top-level version is stripped so
// the committed file does not change with every release (see Schema).
const schemaServeVersion = "0.0.0"

// Schema asks the provider for its schema and returns it in its committed
// form: the top-level "version" removed, pretty-printed with two-space
// indentation, HTML characters unescaped, and a trailing newline. The output
// is a pure function of the provider's code.
func Schema(ctx context.Context) ([]byte, error) {
	raw, err := providerSchema(ctx)
	if err != nil {
		return nil, err
	}
	spec, err := parseSpec(raw)
	if err != nil {
		return nil, fmt.Errorf("provider schema: %w", err)
	}
	spec.Version = ""
	return formatSpec(spec)
}

// providerSchema serves the provider in-process and returns the schema JSON it
// reports.
func providerSchema(ctx context.Context) ([]byte, error) {
	prov, err := provider.New()
	if err != nil {
		return nil, fmt.Errorf("building provider: %w", err)
	}
	server, err := integration.NewServer(ctx, provider.Name,
		semver.MustParse(schemaServeVersion), integration.WithProvider(prov))
	if err != nil {
		return nil, fmt.Errorf("serving provider: %w", err)
	}
	resp, err := server.GetSchema(p.GetSchemaRequest{})
	if err != nil {
		return nil, fmt.Errorf("getting schema: %w", err)
	}
	return []byte(resp.Schema), nil
}

// parseSpec decodes schema JSON, rejecting fields PackageSpec does not know so
// that nothing the provider reports is silently dropped from schema.json.
func parseSpec(data []byte) (schema.PackageSpec, error) {
	var spec schema.PackageSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return schema.PackageSpec{}, fmt.Errorf("decoding schema: %w", err)
	}
	return spec, nil
}

// formatSpec renders spec the way schema.json is committed. Struct fields
// keep their declaration order and map keys are sorted by encoding/json, so
// the output is stable.
func formatSpec(spec schema.PackageSpec) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(spec); err != nil { // Encode appends the trailing newline.
		return nil, fmt.Errorf("encoding schema: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteSchema writes the committed form of the provider's schema to path.
func WriteSchema(ctx context.Context, path string) error {
	data, err := Schema(ctx)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing schema: %w", err)
	}
	return nil
}
