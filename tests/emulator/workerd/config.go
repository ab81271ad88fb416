// Package workerd runs Workers scripts in workerd, Cloudflare's open-source
// Workers runtime, for the emulator: it renders a workerd configuration (Cap'n
// Proto text) from a set of workers and the services backing their bindings,
// starts workerd on it and stops it again. It knows nothing of the
// emulator's state: the emulator says which workers exist, with which
// modules and bindings, and serves the backends itself (D1, KV, queues,
// assets) at the address the configuration points the bindings to.
//
// Every configuration has one socket, served by a gateway worker written
// here (gateway.js): a request names the worker it is for in a header and the
// gateway hands it to that worker's fetch, queue or scheduled handler through
// a service binding. Service bindings are how workerd dispatches those
// events, so this is the same path Cloudflare's own local tools take.
package workerd

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Config is everything one workerd process runs.
type Config struct {
	Workers []Worker
	// Backends are external HTTP services the bindings point to (the
	// emulator's own stores), by service name.
	Backends []Backend
	// Stubs are services standing in for what is not there (a service
	// binding to a script that does not exist, a binding kind the emulator
	// does not run): each answers every request with Status and Message.
	Stubs []Stub
	// StorageDir holds the Durable Objects' SQLite files; "" means no
	// Durable Objects persist (a startup check).
	StorageDir string
	// TailSink, when set, is where the tail worker posts the trace events
	// of every worker with TailProps: POST / with the JSON
	// {"props": <the worker's TailProps>, "events": [<trace item>...]}, one
	// request per invocation. Nil: no worker is tailed.
	TailSink *TailSink
}

// TailSink is the HTTP service outside workerd the tail worker posts to,
// as a Backend is reached: every request carries Header: Value.
type TailSink struct {
	Address string // host:port
	Header  string
	Value   string
}

// Worker is one script.
type Worker struct {
	Service string // the workerd service name; unique in the config
	// Modules in upload order; the first is the main module. A worker in
	// the service-worker format has exactly one, of kind ServiceWorker.
	Modules            []Module
	CompatibilityDate  string
	CompatibilityFlags []string
	Bindings           []Binding
	// DurableObjectClasses are the classes this script exports as Durable
	// Objects (SQLite-backed), keyed in storage by UniqueKeyPrefix+class.
	DurableObjectClasses []string
	UniqueKeyPrefix      string
	// GlobalOutbound names the service the worker's fetch() to any URL
	// goes to; "" is workerd's default, the service named "internet",
	// which every configuration defines as a refusal (Render).
	GlobalOutbound string
	// TailProps, when set and the configuration has a TailSink, attaches
	// the tail worker to this one: its trace events reach the sink with
	// these props, which say whose events they are.
	TailProps map[string]string
}

// ModuleKind is how workerd loads a module.
type ModuleKind string

const (
	ESModule       ModuleKind = "esModule"
	CommonJSModule ModuleKind = "commonJsModule"
	TextModule     ModuleKind = "text"
	DataModule     ModuleKind = "data"
	WasmModule     ModuleKind = "wasm"
	JSONModule     ModuleKind = "json"
	PythonModule   ModuleKind = "pythonModule"
	ServiceWorker  ModuleKind = "serviceWorkerScript"
)

// Module is one module file, embedded from Path.
type Module struct {
	Name string
	Kind ModuleKind
	Path string // absolute path of the file holding its bytes
}

// Binding is one name in a worker's env. Exactly one of the value fields is
// set.
type Binding struct {
	Name string

	Text *string // plain_text, secret_text
	JSON *string // json: the JSON text

	Service    string // service binding: the target service
	Entrypoint string // its named entrypoint, if any

	D1    string // D1 database: the backend service speaking D1's protocol
	KV    string // KV namespace: the backend service
	R2    string // R2 bucket: the backend service
	Queue string // queue producer: the backend service

	DurableObjectClass   string // Durable Object namespace: the class...
	DurableObjectService string // ...and the service exporting it, "" for this one
}

// Backend is an HTTP service outside workerd. Every request to it carries
// the header Header: Value, so one listener can tell the backends apart.
type Backend struct {
	Service string
	Address string // host:port
	Header  string
	Value   string
	// Proxy sends requests in proxy form, the full URL on the request line
	// (a worker's outbound fetches keep their scheme and host so); else
	// the path only, the host in the Host header.
	Proxy bool
}

// Stub answers everything with one status and message.
type Stub struct {
	Service string
	Status  int
	Message string
}

// GatewayService is the name of the gateway worker in every configuration.
const GatewayService = "openinspect-gateway"

// TailService is the name of the tail worker in a configuration with a
// TailSink; TailSinkService the name of the sink's service.
const (
	TailService     = "openinspect-tail"
	TailSinkService = "openinspect-tail-sink"
)

// InternetService is workerd's default outbound service, which every
// configuration defines as a refusal: nothing a worker fetches leaves the
// machine unless its GlobalOutbound sends it somewhere.
const InternetService = "internet"

// internetRefusal is what a fetch through InternetService answers.
const internetRefusal = "the local cloud sends no request off this machine, and this worker has no outbound gateway"

// gatewayTargets is the gateway's JSON binding: worker service -> the name of
// the gateway's service binding to it.
const gatewayTargets = "TARGETS"

// OwnModules are the paths of the module files of the workers every
// configuration adds: the gateway (gateway.js) and the tail worker (tail.js).
type OwnModules struct {
	Gateway string
	Tail    string
}

// Render writes cfg as a workerd configuration in Cap'n Proto text form,
// with the gateway served on the socket named "http". own are the paths of
// the gateway's and the tail worker's module files; configDir is where the
// configuration will be written, since workerd reads an absolute embed path
// as relative to its import path, so every embed is written relative to
// configDir.
func Render(cfg Config, own OwnModules, configDir string) (string, error) {
	var b strings.Builder
	b.WriteString("using Workerd = import \"/workerd/workerd.capnp\";\n")
	b.WriteString("const config :Workerd.Config = (\n  services = [\n")
	seen := map[string]bool{}
	service := func(name string) error {
		if name == "" {
			return fmt.Errorf("workerd: a service has no name")
		}
		if seen[name] {
			return fmt.Errorf("workerd: service %q is defined twice", name)
		}
		seen[name] = true
		return nil
	}
	targets := map[string]string{}
	var gatewayBindings []Binding
	for i, w := range cfg.Workers {
		if err := service(w.Service); err != nil {
			return "", err
		}
		alias := fmt.Sprintf("W%d", i)
		targets[w.Service] = alias
		gatewayBindings = append(gatewayBindings, Binding{Name: alias, Service: w.Service})
		if cfg.TailSink == nil {
			w.TailProps = nil // nothing to post the events to
		}
		if err := renderWorker(&b, w, cfg.StorageDir != "", configDir); err != nil {
			return "", err
		}
	}
	backends := cfg.Backends
	if cfg.TailSink != nil {
		sink := cfg.TailSink
		backends = append(slices.Clone(backends), Backend{Service: TailSinkService, Address: sink.Address, Header: sink.Header, Value: sink.Value})
		tail := Worker{
			Service:           TailService,
			Modules:           []Module{{Name: "tail.js", Kind: ESModule, Path: own.Tail}},
			CompatibilityDate: "2025-01-01",
			Bindings:          []Binding{{Name: "SINK", Service: TailSinkService}},
		}
		if err := service(tail.Service); err != nil {
			return "", err
		}
		if err := renderWorker(&b, tail, false, configDir); err != nil {
			return "", err
		}
	}
	for _, be := range backends {
		if err := service(be.Service); err != nil {
			return "", err
		}
		style, host := "", ""
		if be.Proxy {
			// A request in proxy form carries no Host header, which an
			// HTTP/1.1 server (Go's) refuses; the URL's host still wins.
			style, host = "style = proxy, ", fmt.Sprintf(", (name = \"Host\", value = %s)", quote(be.Address))
		}
		fmt.Fprintf(&b, "    (name = %s, external = (address = %s, http = (%sinjectRequestHeaders = [(name = %s, value = %s)%s]))),\n",
			quote(be.Service), quote(be.Address), style, quote(be.Header), quote(be.Value), host)
	}
	for _, st := range append(cfg.Stubs, Stub{Service: InternetService, Status: 502, Message: internetRefusal}) {
		if err := service(st.Service); err != nil {
			return "", err
		}
		msg := fmt.Sprintf("{\"error\":%s}", jsonString(st.Message))
		fmt.Fprintf(&b, "    (name = %s, worker = (compatibilityDate = \"2024-01-01\", bindings = [(name = \"STATUS\", json = %s), (name = \"BODY\", text = %s)], modules = [(name = \"stub.js\", esModule = %s)])),\n",
			quote(st.Service), quote(fmt.Sprint(st.Status)), quote(msg), quote(stubModule))
	}
	if cfg.StorageDir != "" {
		fmt.Fprintf(&b, "    (name = \"do-storage\", disk = (path = %s, writable = true)),\n", quote(cfg.StorageDir))
	}
	targetsJSON := jsonObject(targets)
	gatewayBindings = append(gatewayBindings, Binding{Name: gatewayTargets, JSON: &targetsJSON})
	gw := Worker{
		Service:            GatewayService,
		Modules:            []Module{{Name: "gateway.js", Kind: ESModule, Path: own.Gateway}},
		CompatibilityDate:  "2025-01-01",
		CompatibilityFlags: []string{"service_binding_extra_handlers", "nodejs_compat"},
		Bindings:           gatewayBindings,
	}
	if err := service(gw.Service); err != nil {
		return "", err
	}
	if err := renderWorker(&b, gw, false, configDir); err != nil {
		return "", err
	}
	b.WriteString("  ],\n")
	fmt.Fprintf(&b, "  sockets = [(name = \"http\", address = \"127.0.0.1:0\", http = (), service = %s)]\n);\n", quote(GatewayService))
	return b.String(), nil
}

// stubModule is the stub services' code: the status and body come from its
// bindings.
const stubModule = `export default { fetch(_r, env) { return new Response(env.BODY, { status: env.STATUS, headers: { "content-type": "application/json" } }); } };`

func renderWorker(b *strings.Builder, w Worker, persist bool, configDir string) error {
	embed := func(path string) (string, error) {
		rel, err := filepath.Rel(configDir, path)
		if err != nil {
			return "", fmt.Errorf("workerd: module %s: %w", path, err)
		}
		return "embed " + quote(filepath.ToSlash(rel)), nil
	}
	if len(w.Modules) == 0 {
		return fmt.Errorf("workerd: worker %q has no modules", w.Service)
	}
	fmt.Fprintf(b, "    (name = %s, worker = (\n", quote(w.Service))
	if len(w.Modules) == 1 && w.Modules[0].Kind == ServiceWorker {
		e, err := embed(w.Modules[0].Path)
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "      serviceWorkerScript = %s,\n", e)
	} else {
		b.WriteString("      modules = [\n")
		for _, m := range w.Modules {
			if m.Kind == ServiceWorker {
				return fmt.Errorf("workerd: worker %q mixes a service-worker script with modules", w.Service)
			}
			e, err := embed(m.Path)
			if err != nil {
				return err
			}
			fmt.Fprintf(b, "        (name = %s, %s = %s),\n", quote(m.Name), m.Kind, e)
		}
		b.WriteString("      ],\n")
	}
	date := w.CompatibilityDate
	if date == "" {
		// Cloudflare runs a script uploaded without a date at the oldest one.
		date = "2021-11-03"
	}
	fmt.Fprintf(b, "      compatibilityDate = %s,\n", quote(date))
	if len(w.CompatibilityFlags) > 0 {
		flags := make([]string, len(w.CompatibilityFlags))
		for i, f := range w.CompatibilityFlags {
			flags[i] = quote(f)
		}
		fmt.Fprintf(b, "      compatibilityFlags = [%s],\n", strings.Join(flags, ", "))
	}
	b.WriteString("      bindings = [\n")
	for _, bd := range w.Bindings {
		v, err := bindingValue(bd)
		if err != nil {
			return fmt.Errorf("workerd: worker %q: %w", w.Service, err)
		}
		fmt.Fprintf(b, "        (name = %s, %s),\n", quote(bd.Name), v)
	}
	b.WriteString("      ],\n")
	if w.GlobalOutbound != "" {
		fmt.Fprintf(b, "      globalOutbound = %s,\n", quote(w.GlobalOutbound))
	}
	if len(w.TailProps) > 0 {
		// Props reach the tail worker as ctx.props: who it is tailing.
		fmt.Fprintf(b, "      tails = [(name = %s, props = (json = %s))],\n", quote(TailService), quote(jsonObject(w.TailProps)))
	}
	if len(w.DurableObjectClasses) > 0 {
		b.WriteString("      durableObjectNamespaces = [\n")
		for _, c := range w.DurableObjectClasses {
			fmt.Fprintf(b, "        (className = %s, uniqueKey = %s, enableSql = true),\n", quote(c), quote(w.UniqueKeyPrefix+c))
		}
		b.WriteString("      ],\n")
		if persist {
			b.WriteString("      durableObjectStorage = (localDisk = \"do-storage\"),\n")
		} else {
			b.WriteString("      durableObjectStorage = (inMemory = void),\n")
		}
	}
	b.WriteString("    )),\n")
	return nil
}

func bindingValue(bd Binding) (string, error) {
	switch {
	case bd.Text != nil:
		return "text = " + quote(*bd.Text), nil
	case bd.JSON != nil:
		return "json = " + quote(*bd.JSON), nil
	case bd.Service != "":
		if bd.Entrypoint != "" {
			return fmt.Sprintf("service = (name = %s, entrypoint = %s)", quote(bd.Service), quote(bd.Entrypoint)), nil
		}
		return "service = " + quote(bd.Service), nil
	case bd.D1 != "":
		return fmt.Sprintf("wrapped = (moduleName = \"cloudflare-internal:d1-api\", innerBindings = [(name = \"fetcher\", service = %s)])", quote(bd.D1)), nil
	case bd.KV != "":
		return "kvNamespace = " + quote(bd.KV), nil
	case bd.R2 != "":
		return "r2Bucket = " + quote(bd.R2), nil
	case bd.Queue != "":
		return "queue = " + quote(bd.Queue), nil
	case bd.DurableObjectClass != "":
		if bd.DurableObjectService != "" {
			return fmt.Sprintf("durableObjectNamespace = (className = %s, serviceName = %s)", quote(bd.DurableObjectClass), quote(bd.DurableObjectService)), nil
		}
		return fmt.Sprintf("durableObjectNamespace = (className = %s)", quote(bd.DurableObjectClass)), nil
	}
	return "", fmt.Errorf("binding %q has no value", bd.Name)
}

// quote renders s as a Cap'n Proto text string literal.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			b.WriteString(`\"`)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c) // UTF-8 passes through: capnp strings are UTF-8
		}
	}
	b.WriteByte('"')
	return b.String()
}

func jsonString(s string) string {
	out, _ := json.Marshal(s) // a string always marshals
	return string(out)
}

func jsonObject(m map[string]string) string {
	out, _ := json.Marshal(m) // keys sorted: the same config renders the same text
	return string(out)
}
