// Command pulumi-resource-openinspect is the openinspect provider plugin.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	pulumiprovider "github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/openinspect/pulumi-openinspect/provider"
	"github.com/openinspect/pulumi-openinspect/provider/esm"
	"github.com/openinspect/pulumi-openinspect/provider/internal/enginewatch"
	"github.com/openinspect/pulumi-openinspect/provider/internal/logredact"
)

func main() {
	// The plugin started as its own syntax checker (see esm.ParseInChildProcess).
	if os.Getenv(esm.ChildEnv) == "1" {
		if err := esm.ServeChild(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "syntax check: %v\n", err)
			os.Exit(1)
		}
		return
	}
	// A malformed version would only surface as an engine error later.
	if _, err := semver.ParseTolerant(provider.Version); err != nil {
		fmt.Fprintf(os.Stderr, "invalid provider version %q: %v\n", provider.Version, err)
		os.Exit(1)
	}
	flags := newPluginFlags()
	if err := flags.takeCommandLine(os.Args[1:], os.Stderr); errors.Is(err, flag.ErrHelp) {
		return
	} else if err != nil {
		os.Exit(2)
	}
	if flags.version {
		fmt.Println(provider.Version)
		return
	}
	prov, err := provider.New()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building provider: %v\n", err)
		os.Exit(1)
	}
	if exe, err := os.Executable(); err == nil {
		esm.ParseInChildProcess(exe)
	}
	serve := p.RawServer(provider.Name, provider.Version, logredact.Provider(prov))
	// A CLI killed outright never tells its plugins to stop; the watch ends
	// this one within seconds instead of at Pulumi's five-minute health check.
	ctx, watch := enginewatch.Start(context.Background(), enginewatch.Options{})
	err = pulumiprovider.MainContext(ctx, provider.Name,
		func(host *pulumiprovider.HostClient) (pulumirpc.ResourceProviderServer, error) {
			// MainContext has parsed the flags by now: the one argument
			// left is the engine's address (none when attached for
			// debugging).
			if args := flag.Args(); len(args) == 1 {
				if err := watch.Engine(ctx, args[0]); err != nil {
					return nil, err
				}
			}
			// Pulumi's logging is initialised by now; see logredact for why
			// the plugin's verbose log needs both of these.
			logredact.InstallHandler()
			server, err := serve(host)
			if err != nil {
				return nil, err
			}
			return logredact.Server(server), nil
		})
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
}
