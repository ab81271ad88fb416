// Package cron is the one validator of Cloudflare cron trigger expressions:
// the Worker resource, the component and the upstream contract loader all
// check schedules with it, so an expression is never accepted by one and
// refused by another.
//
// It imports only the standard library.
package cron
