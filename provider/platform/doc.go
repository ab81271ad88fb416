// Package platform holds the resources of the installation itself rather than
// of a cloud: AppSecrets (the control plane's global secrets, seeded through
// its signed API), GeneratedSecret (random secrets created once) and NameLock
// (refuses renames that would replace data).
//
// It may import config, internal/controlplane and internal/common; never
// another family. AppSecretKeyProblem and MaxAppSecrets are the rules the
// component checks before registering anything.
package platform
