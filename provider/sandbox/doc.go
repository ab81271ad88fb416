// Package sandbox holds the sandbox providers' resources: ModalApp (named
// secrets, the app's deploy, endpoint discovery and health, teardown) and
// DaytonaSnapshot (digest-named base snapshots, deferred collection,
// owner-scoped cleanup).
//
// It may import config, the internal Modal and Daytona clients and
// internal/common; never another family.
package sandbox
