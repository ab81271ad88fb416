// Package web places an installation's web UI on Kubernetes through
// pulumi-kubernetes children: namespace (managed or shared), pull-secret
// copies, the service-auth Secret, the Deployment, Service and
// NetworkPolicies, each checked for a foreign owner before it is upserted.
//
// It may import internal/web/kube and internal/family only.
package web
