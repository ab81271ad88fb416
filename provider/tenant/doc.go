// Package tenant holds the resources of one installation itself (a tenant of
// the accounts it deploys to) rather than of a cloud: AppSecrets (the control plane's global secrets, seeded through
// its signed API), GeneratedSecret (random secrets created once) and NameLock
// (refuses renames that would replace data, and generates the installation
// identity: "oi" + 32 random hex digits, on its create, before any other
// child, since every child depends on the lock; kept in state, never changed.
// Every ownership marker — Worker tags, the D1 owner row, the Kubernetes
// openinspect.dev/installation label — is this identity).
//
// It may import config, internal/controlplane and internal/family; never
// another family. AppSecretKeyProblem and MaxAppSecrets are the rules the
// component checks before registering anything.
package tenant
