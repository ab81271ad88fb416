// Drives the emulator with Cloudflare's TypeScript SDK (npm cloudflare,
// pinned in .ci/node-tools.sh) as a user would: create, read, list, update
// and delete of every object kind, and a Worker uploaded with a module, a
// source map and static assets. Run by conformance_test.go with the
// emulator's address in CF_BASE_URL; prints one JSON line of what it made
// for the Go side to check (serving), and exits non-zero on the first
// failed expectation.
"use strict";
const crypto = require("node:crypto");
const Cloudflare = require("cloudflare").default ?? require("cloudflare");

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const account_id = env("CF_ACCOUNT_ID");
const zone_id = env("CF_ZONE_ID");
const prefix = env("PREFIX");
const client = new Cloudflare({ apiToken: env("CF_API_TOKEN"), baseURL: env("CF_BASE_URL"), maxRetries: 0 });

let calls = 0;
async function call(what, fn) {
  calls++;
  try {
    return await fn();
  } catch (e) {
    throw new Error(`${what}: ${e.message}`);
  }
}
function expect(cond, what, got) {
  if (!cond) throw new Error(`${what}: got ${JSON.stringify(got)}`);
}
// The SDK does not validate answers at run time: check the declared types
// of the fields its .d.ts files mark required.
function types(obj, spec, what) {
  for (const [k, t] of Object.entries(spec)) {
    const v = obj?.[k];
    const ok = t === "array" ? Array.isArray(v) : typeof v === t;
    expect(ok, `${what}.${k} should be ${t}`, v);
  }
}
async function all(page) {
  const out = [];
  for await (const item of page) out.push(item);
  return out;
}
// refuses runs fn and expects the API's 4xx with that code.
async function refuses(what, code, fn) {
  calls++;
  try {
    await fn();
  } catch (e) {
    const got = e?.errors?.[0]?.code ?? e?.error?.errors?.[0]?.code;
    expect(e.status >= 400 && e.status < 500 && got === code, `${what} should fail with ${code}`, { status: e.status, errors: e.errors ?? e.error });
    return e;
  }
  throw new Error(`${what}: succeeded, want error ${code}`);
}

async function d1() {
  const db = await call("d1.database.create", () => client.d1.database.create({ account_id, name: `${prefix}-db` }));
  types(db, { uuid: "string", name: "string", created_at: "string" }, "D1");
  const got = await call("d1.database.get", () => client.d1.database.get(db.uuid, { account_id }));
  expect(got.name === `${prefix}-db`, "d1 get name", got);
  const list = await call("d1.database.list", () => all(client.d1.database.list({ account_id })));
  expect(list.some((d) => d.uuid === db.uuid), "d1 list has the database", list);
  const res = await call("d1.database.query", () => all(client.d1.database.query(db.uuid, { account_id, sql: "CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (7); SELECT n FROM t" })));
  expect(res.at(-1)?.results?.[0]?.n === 7, "d1 query result", res);
  return db;
}

async function kv() {
  const ns = await call("kv.namespaces.create", () => client.kv.namespaces.create({ account_id, title: `${prefix}-cache` }));
  types(ns, { id: "string", title: "string" }, "Namespace");
  await call("kv.namespaces.update", () => client.kv.namespaces.update(ns.id, { account_id, title: `${prefix}-cache-2` }));
  const got = await call("kv.namespaces.get", () => client.kv.namespaces.get(ns.id, { account_id }));
  expect(got.title === `${prefix}-cache-2`, "kv renamed", got);
  const list = await call("kv.namespaces.list", () => all(client.kv.namespaces.list({ account_id })));
  expect(list.some((n) => n.id === ns.id), "kv list has the namespace", list);
  await call("kv.namespaces.values.update", () => client.kv.namespaces.values.update("greeting", { account_id, namespace_id: ns.id, value: "hello" }));
  const value = await call("kv.namespaces.values.get", () => client.kv.namespaces.values.get("greeting", { account_id, namespace_id: ns.id }));
  expect((await value.text()) === "hello", "kv value", null);
  await call("kv.namespaces.values.delete", () => client.kv.namespaces.values.delete("greeting", { account_id, namespace_id: ns.id }));
  return ns;
}

async function r2() {
  const b = await call("r2.buckets.create", () => client.r2.buckets.create({ account_id, name: `${prefix}-media`, locationHint: "weur" }));
  types(b, { name: "string", creation_date: "string" }, "Bucket");
  const got = await call("r2.buckets.get", () => client.r2.buckets.get(b.name, { account_id }));
  expect(["apac", "eeur", "enam", "weur", "wnam", "oc"].includes(got.location), "r2 location one of the declared", got.location);
  const list = await call("r2.buckets.list", () => client.r2.buckets.list({ account_id }));
  expect(list.buckets?.some((x) => x.name === b.name), "r2 list has the bucket", list);
  return b;
}

async function queues(script) {
  const q = await call("queues.create", () => client.queues.create({ account_id, queue_name: `${prefix}-jobs` }));
  types(q, { queue_id: "string", queue_name: "string" }, "Queue");
  await call("queues.update", () => client.queues.update(q.queue_id, { account_id, queue_name: `${prefix}-jobs`, settings: { delivery_delay: 5 } }));
  const got = await call("queues.get", () => client.queues.get(q.queue_id, { account_id }));
  expect(got.settings?.delivery_delay === 5, "queue settings", got);
  const list = await call("queues.list", () => all(client.queues.list({ account_id })));
  expect(list.some((x) => x.queue_id === q.queue_id), "queue list", list);
  const c = await call("queues.consumers.create", () => client.queues.consumers.create(q.queue_id, { account_id, type: "worker", script_name: script, settings: { batch_size: 5 } }));
  expect(typeof c.consumer_id === "string", "consumer id", c);
  const mc = c.settings?.max_concurrency;
  expect(mc === undefined || typeof mc === "number", "max_concurrency a number or absent", c.settings);
  await call("queues.consumers.update", () => client.queues.consumers.update(c.consumer_id, { account_id, queue_id: q.queue_id, type: "worker", script_name: script, settings: { batch_size: 7, max_concurrency: 2 } }));
  const gc = await call("queues.consumers.get", () => client.queues.consumers.get(c.consumer_id, { account_id, queue_id: q.queue_id }));
  expect(gc.settings?.batch_size === 7 && gc.settings?.max_concurrency === 2, "consumer updated", gc);
  const cl = await call("queues.consumers.list", () => all(client.queues.consumers.list(q.queue_id, { account_id })));
  expect(cl.length === 1, "one consumer", cl);
  await call("queues.consumers.delete", () => client.queues.consumers.delete(c.consumer_id, { account_id, queue_id: q.queue_id }));
  await call("queues.delete", () => client.queues.delete(q.queue_id, { account_id }));
}

// The upload as the SDK's types describe it, with the two adjustments
// Cloudflare needs from 7.x (cloudflare-typescript issue 2799): metadata as
// one JSON file, and the SDK's Content-Type application/javascript cleared
// so fetch sends the form's multipart type.
function moduleFile(name, body, type) {
  return new File([body], name, { type });
}
async function uploadWorker(name, db, ns, bucket) {
  const asset = `hello from ${prefix} assets\n`;
  const hash = crypto.createHash("sha256").update(asset).digest("hex").slice(0, 32);
  const session = await call("workers.scripts.assets.upload.create", () => client.workers.scripts.assets.upload.create(name, { account_id, manifest: { "/hello.txt": { hash, size: asset.length } } }));
  expect(typeof session.jwt === "string", "assets session jwt", session);
  let completion = session.jwt;
  if ((session.buckets ?? []).length > 0) {
    const done = await call("workers.assets.upload.create", () => client.workers.assets.upload.create({ account_id, base64: true, body: { [hash]: Buffer.from(asset).toString("base64") } }, { headers: { Authorization: `Bearer ${session.jwt}` } }));
    completion = done.jwt;
  }
  expect(typeof completion === "string", "assets completion token", completion);
  const metadata = {
    main_module: "index.js",
    compatibility_date: "2025-01-01",
    bindings: [
      { type: "d1", name: "DB", database_id: db.uuid },
      { type: "kv_namespace", name: "CACHE", namespace_id: ns.id },
      { type: "r2_bucket", name: "MEDIA", bucket_name: bucket.name },
      { type: "plain_text", name: "WHO", text: prefix },
      { type: "assets", name: "ASSETS" },
    ],
    assets: { jwt: completion, config: { not_found_handling: "none" } },
  };
  const code = `export default { async fetch(req, env) { const n = await env.DB.prepare("SELECT n FROM t").first("n"); return new Response("worker " + env.WHO + " " + n); } };\n//# sourceMappingURL=index.js.map\n`;
  const map = JSON.stringify({ version: 3, sources: ["src/index.ts"], names: [], mappings: "AAAA" });
  const files = [moduleFile("index.js", code, "application/javascript+module"), moduleFile("index.js.map", map, "application/source-map")];
  const metaFile = moduleFile("metadata.json", JSON.stringify(metadata), "application/json");

  // As the SDK sends it by default, the form is run as a script and fails,
  // as on Cloudflare; so are metadata[...] fields.
  await refuses("workers.scripts.update (default Content-Type)", 10021, () => client.workers.scripts.update(name, { account_id, metadata, files }));
  await refuses("workers.scripts.update (metadata fields)", 10021, () => client.workers.scripts.update(name, { account_id, metadata, files }, { headers: { "Content-Type": null } }));

  const up = await call("workers.scripts.update", () => client.workers.scripts.update(name, { account_id, metadata: metaFile, files }, { headers: { "Content-Type": null } }));
  types(up, { id: "string", etag: "string", has_modules: "boolean", has_assets: "boolean", created_on: "string" }, "ScriptUpdateResponse");
  expect(up.has_assets === true, "has_assets", up);

  const version = await call("workers.scripts.versions.create", () => client.workers.scripts.versions.create(name, { account_id, metadata: moduleFile("metadata.json", JSON.stringify({ ...metadata, assets: undefined, bindings: metadata.bindings.filter((b) => b.type !== "assets") }), "application/json"), files }));
  expect(typeof version.id === "string", "version id", version);
  const versions = await call("workers.scripts.versions.list", () => all(client.workers.scripts.versions.list(name, { account_id })));
  expect(versions.length === 2, "two versions", versions.map((v) => v.id));
  const v = await call("workers.scripts.versions.get", () => client.workers.scripts.versions.get(version.id, { account_id, script_name: name }));
  const d1b = v.resources?.bindings?.find((b) => b.name === "DB");
  expect(d1b?.database_id === db.uuid, "version D1 binding database_id", d1b);

  const settings = await call("workers.scripts.scriptAndVersionSettings.get", () => client.workers.scripts.scriptAndVersionSettings.get(name, { account_id }));
  const sb = settings.bindings?.find((b) => b.name === "DB");
  expect(sb?.database_id === db.uuid, "settings D1 binding database_id", sb);
  const content = await call("workers.scripts.content.get", () => client.workers.scripts.content.get(name, { account_id }));
  const body = await content.text();
  expect(body.includes("application/source-map") && body.includes("index.js.map"), "content keeps the source map", body.slice(0, 200));
  const scripts = await call("workers.scripts.list", () => all(client.workers.scripts.list({ account_id })));
  expect(scripts.some((s) => s.id === name), "script list", scripts.map((s) => s.id));
  return name;
}

async function routing(script) {
  const zones = await call("zones.list", () => all(client.zones.list({})));
  const zone = zones.find((z) => z.id === zone_id);
  expect(zone, "zones.list has the zone", zones.map((z) => z.id));
  const z = await call("zones.get", () => client.zones.get({ zone_id }));
  types(z.owner, { id: "string", name: "string" }, "Zone.owner");
  const host = `${prefix}.${z.name}`;

  const route = await call("workers.routes.create", () => client.workers.routes.create({ zone_id, pattern: `${host}/api/*`, script }));
  types(route, { id: "string", pattern: "string" }, "Route");
  await call("workers.routes.update", () => client.workers.routes.update(route.id, { zone_id, pattern: `${host}/v2/*`, script }));
  const gr = await call("workers.routes.get", () => client.workers.routes.get(route.id, { zone_id }));
  expect(gr.pattern === `${host}/v2/*`, "route updated", gr);
  const routes = await call("workers.routes.list", () => all(client.workers.routes.list({ zone_id })));
  expect(routes.some((r) => r.id === route.id), "route list", routes);
  const scripts = await call("workers.scripts.list", () => all(client.workers.scripts.list({ account_id })));
  const listed = scripts.find((s) => s.id === script);
  expect(listed?.routes?.some((r) => r.id === route.id), "script list shows the route", listed);

  const domain = await call("workers.domains.update", () => client.workers.domains.update({ account_id, hostname: `app-${host}`, service: script, zone_id, environment: "production" }));
  types(domain, { id: "string", cert_id: "string", hostname: "string", service: "string", zone_id: "string", zone_name: "string" }, "Domain");
  const gd = await call("workers.domains.get", () => client.workers.domains.get(domain.id, { account_id }));
  expect(gd.cert_id === domain.cert_id, "domain cert_id stable", gd);
  const domains = await call("workers.domains.list", () => all(client.workers.domains.list({ account_id })));
  expect(domains.some((d) => d.id === domain.id && typeof d.cert_id === "string"), "domain list with cert_id", domains);
  return { route, domain, host };
}

// PHASE=create makes everything and prints it; PHASE=delete (STATE: what
// create printed) deletes it, after the Go side has requested the worker.
async function create() {
  const db = await d1();
  const ns = await kv();
  const bucket = await r2();
  const worker = await uploadWorker(`${prefix}-web`, db, ns, bucket);
  await queues(worker);
  const { route, domain } = await routing(worker);
  return { calls, worker, db: db.uuid, ns: ns.id, bucket: bucket.name, route: route.id, domain: domain.id };
}

async function remove(st) {
  await call("workers.routes.delete", () => client.workers.routes.delete(st.route, { zone_id }));
  await call("workers.domains.delete", () => client.workers.domains.delete(st.domain, { account_id }));
  await call("workers.scripts.delete", () => client.workers.scripts.delete(st.worker, { account_id, force: true }));
  await refuses("workers.scripts.settings.get (deleted)", 10007, () => client.workers.scripts.scriptAndVersionSettings.get(st.worker, { account_id }));
  await call("kv.namespaces.delete", () => client.kv.namespaces.delete(st.ns, { account_id }));
  await call("r2.buckets.delete", () => client.r2.buckets.delete(st.bucket, { account_id }));
  await call("d1.database.delete", () => client.d1.database.delete(st.db, { account_id }));
  await refuses("d1.database.get (deleted)", 7404, () => client.d1.database.get(st.db, { account_id }));
  return { calls };
}

async function main() {
  const out = env("PHASE") === "create" ? await create() : await remove(JSON.parse(env("STATE")));
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e.stack ?? String(e));
  process.exit(1);
});
