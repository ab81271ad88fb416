// Package sandbox holds the sandbox providers' resources, one file per
// backend: ModalApp (named secrets, the app's deploy, endpoint discovery and
// health, teardown), and the four image resources built with upstream's own
// builders — DaytonaSnapshot, E2bTemplate, OpenComputerSnapshot and
// VercelSnapshot (digest-named images, deferred collection, owner-scoped
// cleanup).
//
// It may import config, the sandbox clients and builders under
// internal/sandbox/ and internal/family; never another family.
package sandbox
