// Command pulumi-resource-openinspect is the openinspect provider plugin.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/blang/semver"

	"github.com/openinspect/pulumi-openinspect/provider"
)

func main() {
	// A malformed version would only surface as an engine error later.
	if _, err := semver.ParseTolerant(provider.Version); err != nil {
		fmt.Fprintf(os.Stderr, "invalid provider version %q: %v\n", provider.Version, err)
		os.Exit(1)
	}
	if len(os.Args) == 2 && (os.Args[1] == "-version" || os.Args[1] == "--version") {
		fmt.Println(provider.Version)
		return
	}
	prov, err := provider.New()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building provider: %v\n", err)
		os.Exit(1)
	}
	if err := prov.Run(context.Background(), provider.Name, provider.Version); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
}
