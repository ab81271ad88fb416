// Package installation is the OpenInspect component: one spec expanded into
// every child of an installation. It reads in one direction, a file per
// stage: the arguments (args.go), the spec normalized with its defaults,
// validation of the spec, the plan from the upstream contract, artefacts
// resolved and verified, validation of the plan, and registration of the
// children (register.go); web/ places the web UI on Kubernetes.
//
// Children are registered by token with untyped inputs (the generated SDK is
// built from this provider, so using it here would be circular). It imports
// the families only for their exported tokens and shared rules, plus
// internal/upstream and internal/common, and internal/kube for the type of
// the web part's cluster reader (webConnect, which tests replace).
package installation
