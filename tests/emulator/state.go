package emulator

import (
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/d1"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/kv"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/queues"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/r2"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/zones"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/github"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/opencomputer"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
)

// Inventory lists everything that exists, across all accounts. Tests use it
// to prove a destroy left nothing behind.
type Inventory struct {
	D1      []D1Entry     `json:"d1_databases"`
	KV      []KVEntry     `json:"kv_namespaces"`
	R2      []R2Entry     `json:"r2_buckets"`
	Workers []WorkerEntry `json:"workers"`
	Queues  []QueueEntry  `json:"queues"`
	// AssetFiles counts the static asset files held, all accounts (assets.go).
	AssetFiles int `json:"asset_files"`
	// Domains and Routes are the Workers custom domains and zone routes
	// (zones.go); the zones themselves are seeded, not deployed, and are
	// not listed.
	Domains []DomainEntry `json:"worker_domains"`
	Routes  []RouteEntry  `json:"worker_routes"`

	// Modal is the Modal side (package modal).
	Modal   modal.Inventory   `json:"modal"`
	Daytona daytona.Inventory `json:"daytona"` // package daytona
	E2B     e2b.Inventory     `json:"e2b"`     // package e2b
	// OpenComputer is the OpenComputer side (package opencomputer).
	OpenComputer opencomputer.Inventory `json:"opencomputer"`
	// Vercel is the Vercel Sandbox side (package vercel).
	Vercel vercel.Inventory `json:"vercel"`
	// GitHub is the stand-in's configuration and sign-ins; Empty ignores it.
	GitHub github.Inventory `json:"github"`
}

// D1Entry is one D1 database in an Inventory.
type D1Entry = d1.Entry

// KVEntry is one KV namespace in an Inventory.
type KVEntry = kv.Entry

// R2Entry is one R2 bucket in an Inventory.
type R2Entry = r2.Entry

// WorkerEntry is one Worker script in an Inventory.
type WorkerEntry = workers.Entry

// DomainEntry is one custom domain in an Inventory.
type DomainEntry = zones.DomainEntry

// RouteEntry is one zone route in an Inventory.
type RouteEntry = zones.RouteEntry

// QueueEntry is one queue in an Inventory.
type QueueEntry = queues.Entry

// Empty reports whether nothing exists in any account.
func (i Inventory) Empty() bool {
	return len(i.D1) == 0 && len(i.KV) == 0 && len(i.R2) == 0 && len(i.Workers) == 0 && len(i.Queues) == 0 && i.AssetFiles == 0 &&
		len(i.Domains) == 0 && len(i.Routes) == 0 &&
		i.Modal.Empty() && i.Daytona.Empty() && i.E2B.Empty() && i.OpenComputer.Empty() && i.Vercel.Empty()
}

// Inventory returns a snapshot, each family's part sorted by account, then
// name. Each family takes its own lock; none is held across families.
func (s *Server) Inventory() Inventory {
	inv := Inventory{D1: s.d1.Inventory(), KV: s.kv.Inventory(), R2: s.r2.Inventory(), Workers: s.workers.Inventory(),
		Queues: s.queues.Inventory(), AssetFiles: s.assets.Files(), Modal: s.modal.Inventory()}
	inv.Domains, inv.Routes = s.zones.Inventory()
	inv.Daytona = s.daytona.Inventory()
	inv.E2B = s.e2b.Inventory()
	inv.OpenComputer = s.opencomputer.Inventory()
	inv.Vercel, inv.GitHub = s.vercel.Inventory(), s.github.Inventory()
	return inv
}
