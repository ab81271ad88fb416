// Package providertest serves the whole provider in-process against a fresh
// in-process cloud emulator, for the families' lifecycle tests. It imports
// the root provider package, so the tests that use it are external test
// packages (package cloudflare_test, platform_test, ...); unit tests of a
// family's internals stay in the family's own package.
//
// Only tests import it.
package providertest
