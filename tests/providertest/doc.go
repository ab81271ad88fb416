// Package providertest serves the whole provider in-process against a fresh
// in-process cloud emulator, for the families' lifecycle tests. It imports
// the root provider package, so the tests that use it are external test
// packages (package cloudflare_test, tenant_test, ...); unit tests of a
// family's internals stay in the family's own package.
//
// It lives under tests/ because it starts the emulator: no package the
// plugin is built from may import the tests' tree. The provider's own
// Cloudflare client for tests is provider/internal/cloudflare/cfapitest,
// given the harness (Harness.Cloudflare). Only tests import it.
package providertest
