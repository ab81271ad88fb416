// The layout, one package per family (what each may import is in its doc.go):
//
//	provider.go    New(): every family's resources and the component
//	config/        the provider configuration, env fallbacks, client factories
//	cloudflare/    D1Database, D1Migrations, KvNamespace, R2Bucket, Queue, Worker, WorkerUrls
//	tenant/        AppSecrets, GeneratedSecret, NameLock: the installation's own
//	sandbox/       ModalApp, DaytonaSnapshot, E2bTemplate, OpenComputerSnapshot,
//	               VercelSnapshot
//	installation/  the OpenInspect component; web/ its web UI on Kubernetes
//	esm/           the exports of an ES module, read without running it (a
//	               leaf the emulator shares, so both refuse by one rule)
//	pyfind/        the Python 3.12+ the Modal CLI runs with (a leaf the
//	               tests share, so provider, demo and tests find the same one)
//	internal/      by family: cloudflare/ (cfapi, the Cloudflare client,
//	               cfapitest, zonecheck), sandbox/ (each backend's API client and
//	               upstream's builders), web/kube; shared by all: family
//	               (names, digests, unknowns), controlplane (the signed API),
//	               upstream (the contract), artefacts, cron, logredact, restjson
//
// Families never reach into each other's internals: the component registers
// children by token and calls the exported, named rules it shares with them
// (a cron expression, an app-secret key).

package provider
