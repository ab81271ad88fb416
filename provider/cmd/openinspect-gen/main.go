// Command openinspect-gen writes the openinspect provider's schema.json and
// generates its Go, Node.js and Python SDKs without the Pulumi CLI or its
// language plugins.
//
//	openinspect-gen schema [-out schema.json]
//	openinspect-gen sdks   [-schema schema.json] [-gomod go.mod] [-out sdk] [-version X.Y.Z]
//	openinspect-gen all    [-schema schema.json] [-gomod go.mod] [-out sdk]   (version: the VERSION file beside go.mod)
//
// Paths are relative to the working directory; run it from the repository
// root. -gomod is the provider module's go.mod, from which the Go SDK's own
// go.mod takes its go line and the versions of what it imports. The logic
// lives in package sdkgen, which tests/drift also uses.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/openinspect/pulumi-openinspect/provider/cmd/openinspect-gen/sdkgen"
)

const usage = `usage:
  openinspect-gen schema [-out schema.json]
  openinspect-gen sdks   [-schema schema.json] [-gomod go.mod] [-out sdk] [-version X.Y.Z]
  openinspect-gen all    [-schema schema.json] [-gomod go.mod] [-out sdk]
`

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "openinspect-gen: %v\n", err)
		}
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("missing subcommand")
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("openinspect-gen "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch cmd {
	case "schema":
		out := fs.String("out", "schema.json", "file to write the schema to")
		if err := parse(fs, args); err != nil {
			return err
		}
		return sdkgen.WriteSchema(ctx, *out)
	case "sdks":
		schemaPath := fs.String("schema", "schema.json", "schema to generate from")
		goMod := fs.String("gomod", "go.mod", "the provider module's go.mod")
		out := fs.String("out", "sdk", "directory to write sdk/<language> into")
		version := fs.String("version", "", "plugin version to stamp into the SDKs (make passes the VERSION file's; default: none, leaving the codegen placeholders)")
		if err := parse(fs, args); err != nil {
			return err
		}
		return sdkgen.GenerateSDKsFromFile(*schemaPath, *goMod, *out, *version)
	case "all":
		schemaPath := fs.String("schema", "schema.json", "file to write the schema to")
		goMod := fs.String("gomod", "go.mod", "the provider module's go.mod")
		out := fs.String("out", "sdk", "directory to write sdk/<language> into")
		if err := parse(fs, args); err != nil {
			return err
		}
		return sdkgen.All(ctx, *schemaPath, *goMod, *out)
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown subcommand %q", cmd)
	}
}

// parse parses args and rejects positional leftovers, which are always a
// mistake (for example a flag placed after a path).
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return nil
}
