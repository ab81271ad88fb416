// Package kube is the provider's own small window onto a Kubernetes cluster,
// over k8s.io/client-go: it answers the questions the provider must settle
// before it registers objects through pulumi-kubernetes, which cannot answer
// them itself (its server-side apply creates are upserts: an existing object
// of the same name is silently taken over).
//
// It imports only client-go; the web part uses it.
package kube
