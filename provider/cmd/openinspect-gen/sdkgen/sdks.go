package sdkgen

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/blang/semver"
	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	nodejsgen "github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	pythongen "github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// Tool is the generator name the codegen writes into every file header.
const Tool = "openinspect-gen"

// Languages are the SDK languages generated, each into sdk/<language>.
var Languages = []string{"go", "nodejs", "python"}

// Files maps slash-separated paths, relative to the output root, to contents.
type Files map[string][]byte

// Paths returns the paths of files in sorted order.
func (f Files) Paths() []string { return slices.Sorted(maps.Keys(f)) }

// GenerateSDKs generates every SDK from schemaJSON. Paths in the result are
// prefixed with the language directory ("go/...", "nodejs/...", "python/...").
//
// version stamps the SDKs with a plugin version: the VERSION file's for the
// committed SDKs, the release's for release builds. When it is empty the
// schema's own version is used, which for the committed schema.json is none,
// so the SDKs would carry the codegen placeholders (${VERSION}, 0.0.0).
//
// rootGoMod is the provider module's go.mod: the Go SDK is a module of its
// own (go/go.mod), requiring, at the versions the provider is built and tested
// with, only the modules its generated code imports.
func GenerateSDKs(schemaJSON []byte, version string, rootGoMod []byte) (Files, error) {
	spec, err := parseSpec(schemaJSON)
	if err != nil {
		return nil, err
	}
	if version != "" {
		v, err := semver.ParseTolerant(version)
		if err != nil {
			return nil, fmt.Errorf("invalid version %q: %w", version, err)
		}
		spec.Version = v.String()
	}

	out := Files{}
	for _, lang := range Languages {
		// Bind afresh per language: the generators import their language
		// options into the package they are given.
		pkg, err := bind(spec)
		if err != nil {
			return nil, err
		}
		files, err := generate(lang, pkg)
		if err != nil {
			return nil, fmt.Errorf("generating %s SDK: %w", lang, err)
		}
		for name, data := range files {
			name = path.Clean(filepath.ToSlash(name))
			out[lang+"/"+name] = data
		}
	}
	gomod, err := goSDKModule(spec, out, rootGoMod)
	if err != nil {
		return nil, fmt.Errorf("generating the Go SDK's go.mod: %w", err)
	}
	out["go/go.mod"] = gomod
	return out, nil
}

func generate(lang string, pkg *schema.Package) (map[string][]byte, error) {
	loader := noPluginLoader{}
	switch lang {
	case "go":
		return gogen.GeneratePackage(Tool, pkg, nil)
	case "nodejs":
		return nodejsgen.GeneratePackage(Tool, pkg, nil, nil, false, loader)
	case "python":
		return pythongen.GeneratePackage(Tool, pkg, nil, loader)
	default:
		return nil, fmt.Errorf("unknown language %q", lang)
	}
}

// bind validates spec and binds it. Any diagnostic error fails generation,
// including a reference to another package, which this provider never makes.
func bind(spec schema.PackageSpec) (*schema.Package, error) {
	pkg, diags, err := schema.BindSpec(spec, noPluginLoader{}, schema.ValidationOptions{})
	if err != nil {
		return nil, fmt.Errorf("binding schema: %w", err)
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("binding schema: %w", diags)
	}
	return pkg, nil
}

// noPluginLoader is the schema loader given to the binder and generators. The
// openinspect schema references no other package, so no load is expected;
// any attempt is an error rather than a plugin download.
type noPluginLoader struct{}

var _ schema.ReferenceLoader = noPluginLoader{}

func errNoLoad(name string) error {
	return fmt.Errorf("schema references package %q: %s loads no other packages", name, Tool)
}

func (noPluginLoader) LoadPackage(name string, _ *semver.Version) (*schema.Package, error) {
	return nil, errNoLoad(name)
}

func (noPluginLoader) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return nil, errNoLoad(d.Name)
}

func (noPluginLoader) LoadPackageReference(name string, _ *semver.Version) (schema.PackageReference, error) {
	return nil, errNoLoad(name)
}

func (noPluginLoader) LoadPackageReferenceV2(
	_ context.Context, d *schema.PackageDescriptor,
) (schema.PackageReference, error) {
	return nil, errNoLoad(d.Name)
}

// WriteSDKs replaces sdk/<language> under outDir with files: each language
// directory is removed first so files of deleted resources do not linger.
func WriteSDKs(outDir string, files Files) error {
	for _, lang := range Languages {
		if err := os.RemoveAll(filepath.Join(outDir, lang)); err != nil {
			return fmt.Errorf("cleaning %s SDK: %w", lang, err)
		}
	}
	for _, name := range files.Paths() {
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			return fmt.Errorf("generated file %q escapes the output directory", name)
		}
		dst := filepath.Join(outDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// GenerateSDKsFromFile reads the schema at schemaPath and the provider
// module's go.mod at goModPath, and writes every SDK under outDir.
func GenerateSDKsFromFile(schemaPath, goModPath, outDir, version string) error {
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		return fmt.Errorf("reading schema: %w", err)
	}
	gomod, err := os.ReadFile(goModPath)
	if err != nil {
		return fmt.Errorf("reading the provider's go.mod: %w", err)
	}
	files, err := GenerateSDKs(data, version, gomod)
	if err != nil {
		return err
	}
	return WriteSDKs(outDir, files)
}

// All regenerates schemaPath from the provider, then the SDKs under sdkDir
// from it (the Go SDK's go.mod from the provider's, at goModPath), stamped
// with the version in the VERSION file beside goModPath.
func All(ctx context.Context, schemaPath, goModPath, sdkDir string) error {
	if err := WriteSchema(ctx, schemaPath); err != nil {
		return err
	}
	version, err := ReadVersion(filepath.Join(filepath.Dir(goModPath), "VERSION"))
	if err != nil {
		return err
	}
	return GenerateSDKsFromFile(schemaPath, goModPath, sdkDir, version)
}

// ReadVersion reads the repository's VERSION file: the version the committed
// SDKs carry (so each installs as a real package) and dev builds report. A
// release regenerates the SDKs with its own version.
func ReadVersion(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the version: %w", err)
	}
	v := strings.TrimSpace(string(raw))
	if _, err := semver.Parse(v); err != nil {
		return "", fmt.Errorf("%s: %q is not a semantic version: %w", path, v, err)
	}
	return v, nil
}
