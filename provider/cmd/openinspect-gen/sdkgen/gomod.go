package sdkgen

import (
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// goSDKModule writes the Go SDK's go.mod. Its module path is the directory
// above the root package named by the importBasePath language setting (where
// go.mod sits); its go line and requirements are the provider module's,
// narrowed to the modules that provide a package the generated code imports,
// so a Go SDK user inherits none of the provider's own dependencies
// (cloudflare-go, client-go, pulumi/pkg, SQLite).
func goSDKModule(spec schema.PackageSpec, files Files, rootGoMod []byte) ([]byte, error) {
	var goInfo struct {
		ImportBasePath string `json:"importBasePath"`
	}
	if raw, ok := spec.Language["go"]; ok {
		if err := json.Unmarshal(raw, &goInfo); err != nil {
			return nil, fmt.Errorf("reading the schema's go language settings: %w", err)
		}
	}
	if goInfo.ImportBasePath == "" {
		return nil, fmt.Errorf("the schema sets no go importBasePath")
	}
	self := path.Dir(goInfo.ImportBasePath)
	root, err := modfile.Parse("go.mod", rootGoMod, nil)
	if err != nil {
		return nil, fmt.Errorf("reading the provider's go.mod: %w", err)
	}
	if root.Go == nil {
		return nil, fmt.Errorf("the provider's go.mod has no go line")
	}

	imports := map[string]bool{}
	for name, data := range files {
		if !strings.HasPrefix(name, "go/") || path.Ext(name) != ".go" {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, data, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return nil, err
			}
			imports[p] = true
		}
	}
	required := map[string]string{}
	for _, p := range slices.Sorted(maps.Keys(imports)) {
		if p == self || strings.HasPrefix(p, self+"/") || !strings.Contains(first(p), ".") {
			continue // the SDK itself, or the standard library
		}
		var best *modfile.Require
		for _, r := range root.Require {
			if (p == r.Mod.Path || strings.HasPrefix(p, r.Mod.Path+"/")) && (best == nil || len(r.Mod.Path) > len(best.Mod.Path)) {
				best = r
			}
		}
		if best == nil {
			return nil, fmt.Errorf("the generated Go SDK imports %s, which no requirement of the provider's go.mod provides", p)
		}
		for _, r := range root.Replace {
			if r.Old.Path == best.Mod.Path {
				return nil, fmt.Errorf("the provider's go.mod replaces %s, which the Go SDK imports; its users would not get the replacement", r.Old.Path)
			}
		}
		required[best.Mod.Path] = best.Mod.Version
	}

	var out modfile.File
	if err := out.AddModuleStmt(self); err != nil {
		return nil, err
	}
	if err := out.AddGoStmt(root.Go.Version); err != nil {
		return nil, err
	}
	for _, p := range slices.Sorted(maps.Keys(required)) {
		out.AddNewRequire(p, required[p], false)
	}
	out.Cleanup()
	for _, r := range out.Require {
		if err := module.Check(r.Mod.Path, r.Mod.Version); err != nil {
			return nil, err
		}
	}
	return out.Format()
}

// first is an import path's first element.
func first(importPath string) string {
	elem, _, _ := strings.Cut(importPath, "/")
	return elem
}
