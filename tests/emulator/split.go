package emulator

import (
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/assets"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/d1"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/kv"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/queues"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/r2"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/zones"
)

// legacyStateFile is the one file every Cloudflare API shared before each
// had its own.
const legacyStateFile = "state.json"

// legacyStateVersion is the only state.json version the split reads.
const legacyStateVersion = 1

// legacyKeys says which family's file each top-level key of state.json
// moves to.
var legacyKeys = map[string]string{
	"d1_databases":  d1.StateFileName,
	"kv_namespaces": kv.StateFileName,
	"r2_buckets":    r2.StateFileName,
	"queues":        queues.StateFileName,
	"zones":         zones.StateFileName, "worker_domains": zones.StateFileName, "worker_routes": zones.StateFileName,
	"workers": workers.StateFileName, "workers_subdomains": workers.StateFileName,
	"asset_blobs": assets.StateFileName,
}
