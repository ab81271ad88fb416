// Package installation is the OpenInspect component: one spec expanded into
// every child of an installation. It reads in one direction, a file per
// stage: the arguments (args.go), the spec normalized with its defaults,
// validation of the spec, the plan from the upstream contract, artefacts
// resolved and verified, validation of the plan, and registration of the
// children (register.go); web/ places the web UI on Kubernetes, and
// web_cloudflare.go registers it as a Worker with static assets on Cloudflare, from
// the placeholder build webbuild/ makes right for the installation. Each
// sandbox provider enters the stages through one interface, sandboxBackend
// (backend.go), with one file per backend (backend_<provider>.go).
//
// Children are registered by token with untyped inputs (the generated SDK is
// built from this provider, so using it here would be circular). It imports
// the families only for their exported tokens and shared rules, plus
// internal/upstream and internal/family, and internal/web/kube for the type of
// the web part's cluster reader (webConnect, which tests replace).
package installation
