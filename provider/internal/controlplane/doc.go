// Package controlplane talks to a deployed Open-Inspect control-plane worker
// through its service-authenticated HTTP API: the "sig1" HMAC signature that
// upstream's bots use, and the global secrets store.
//
// It imports only the standard library; every family may import it.
package controlplane
