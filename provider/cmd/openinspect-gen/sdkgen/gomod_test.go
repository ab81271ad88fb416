package sdkgen

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

const rootGoMod = `module github.com/openinspect/pulumi-openinspect

go 1.26.6

require (
	github.com/blang/semver v3.5.1+incompatible
	github.com/cloudflare/cloudflare-go/v4 v4.6.0
	github.com/pulumi/pulumi/pkg/v3 v3.276.0
	github.com/pulumi/pulumi/sdk/v3 v3.276.0
)

require google.golang.org/grpc v1.85.0 // indirect

replace github.com/openinspect/pulumi-openinspect/sdk/go => ./sdk/go
`

func goSpec(t *testing.T) schema.PackageSpec {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"importBasePath": "github.com/openinspect/pulumi-openinspect/sdk/go/openinspect"})
	if err != nil {
		t.Fatal(err)
	}
	return schema.PackageSpec{Language: map[string]schema.RawMessage{"go": raw}}
}

// TestGoSDKModule: the Go SDK's go.mod requires, at the provider's versions,
// only the modules whose packages the generated code imports.
func TestGoSDKModule(t *testing.T) {
	files := Files{
		"go/openinspect/init.go": []byte("package openinspect\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/blang/semver\"\n" +
			"\t\"github.com/openinspect/pulumi-openinspect/sdk/go/openinspect/internal\"\n\t\"github.com/pulumi/pulumi/sdk/v3/go/pulumi\"\n)\n"),
		"go/openinspect/internal/x.go": []byte("package internal\n\nimport \"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals\"\n"),
		"nodejs/index.ts":              []byte("import * as pulumi from \"@pulumi/pulumi\";\n"),
	}
	got, err := goSDKModule(goSpec(t), files, []byte(rootGoMod))
	if err != nil {
		t.Fatal(err)
	}
	want := `module github.com/openinspect/pulumi-openinspect/sdk/go

go 1.26.6

require (
	github.com/blang/semver v3.5.1+incompatible
	github.com/pulumi/pulumi/sdk/v3 v3.276.0
)
`
	if string(got) != want {
		t.Errorf("go.mod:\n%s\nwant:\n%s", got, want)
	}

	files["go/openinspect/extra.go"] = []byte("package openinspect\n\nimport \"example.com/unknown/pkg\"\n")
	if _, err := goSDKModule(goSpec(t), files, []byte(rootGoMod)); err == nil || !strings.Contains(err.Error(), "example.com/unknown/pkg") {
		t.Errorf("an import no requirement provides: err = %v", err)
	}
	delete(files, "go/openinspect/extra.go")

	replaced := rootGoMod + "\nreplace github.com/blang/semver => ../semver\n"
	if _, err := goSDKModule(goSpec(t), files, []byte(replaced)); err == nil || !strings.Contains(err.Error(), "replaces github.com/blang/semver") {
		t.Errorf("a replaced requirement: err = %v", err)
	}
}
