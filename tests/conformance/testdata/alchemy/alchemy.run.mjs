// Deploys (PHASE=up) or destroys (PHASE=destroy) one Worker with static
// assets through Alchemy with its default settings (esbuild bundle with a
// source map). Run by conformance_test.go in a copy of this directory, with
// CLOUDFLARE_BASE_URL pointing at the emulator; prints one JSON line.
import alchemy from "alchemy";
import { Assets, Worker } from "alchemy/cloudflare";

const app = await alchemy("openinspect-conformance", {
  phase: process.env.PHASE,
  // Alchemy encrypts secrets in its local state with this; there are none.
  password: "conformance-suite-has-no-secrets",
});
const assets = await Assets({ path: "./public" });
const worker = await Worker("web", {
  name: "alchemy-web",
  entrypoint: "./src/index.js",
  compatibilityDate: "2025-01-01",
  bindings: { ASSETS: assets, WHO: "alchemy" },
  url: false,
});
await app.finalize();
console.log(JSON.stringify({ worker: worker.name }));
