package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// engineFlags are the flags the Pulumi engine passes a plugin it starts
// with --logflow (the CLI's buildPluginArguments): glog's verbosity and
// stderr switches, which Pulumi's logging package reads back from
// flag.CommandLine. The engine's third, -tracing, Pulumi's MainContext
// defines itself.
var engineFlags = []string{"v", "logtostderr"}

// pluginFlags are the plugin's own flags: the ones its -h lists.
type pluginFlags struct {
	set     *flag.FlagSet
	version bool
}

func newPluginFlags() *pluginFlags {
	f := &pluginFlags{set: flag.NewFlagSet("pulumi-resource-openinspect", flag.ContinueOnError)}
	f.set.BoolVar(&f.version, "version", false, "print the plugin's version and exit")
	return f
}

// usage says what the plugin is and lists its own flags.
func (f *pluginFlags) usage(w io.Writer) {
	fmt.Fprintf(w, `Usage: pulumi-resource-openinspect [flags] [engine address]

The openinspect provider plugin. The Pulumi engine starts it with its address
(and, when asked to, its own logging and tracing settings); run by hand it
answers the flags below.

Flags:
`)
	f.set.SetOutput(w)
	f.set.PrintDefaults()
}

// takeCommandLine replaces flag.CommandLine with a set holding the plugin's
// own flags and the engine's, and parses args with it (plus -tracing, which
// MainContext will define). Importing Pulumi's SDK registers every glog
// flag (-log_dir, -alsologtostderr, -vmodule, ...) on the process's global
// set, which MainContext parses, so its -h listed them all beside the
// plugin's own, though none does anything a user should set. The engine's
// flags keep glog's values, so the logging reads them as before. It returns
// flag.ErrHelp after printing the usage for -h.
func (f *pluginFlags) takeCommandLine(args []string, stderr io.Writer) error {
	global := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	f.set.VisitAll(func(fl *flag.Flag) { global.Var(fl.Value, fl.Name, fl.Usage) })
	for _, name := range engineFlags {
		if fl := flag.CommandLine.Lookup(name); fl != nil {
			global.Var(fl.Value, fl.Name, fl.Usage)
		}
	}
	global.Usage = func() { f.usage(global.Output()) }
	global.SetOutput(stderr)

	// Parse now, so -h and -version answer before the provider is built and
	// a mistyped flag is named; MainContext parses the same arguments again
	// once it has defined -tracing, so a throwaway one stands in for it here.
	early := flag.NewFlagSet(global.Name(), flag.ContinueOnError)
	global.VisitAll(func(fl *flag.Flag) { early.Var(fl.Value, fl.Name, fl.Usage) })
	early.String("tracing", "", "")
	early.SetOutput(io.Discard)
	if err := early.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.usage(stderr)
			return err
		}
		fmt.Fprintf(stderr, "pulumi-resource-openinspect: %v\n\n", err)
		f.usage(stderr)
		return err
	}
	flag.CommandLine = global
	return nil
}
