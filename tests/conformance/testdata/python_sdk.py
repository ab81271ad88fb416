"""Drives the emulator with Cloudflare's Python SDK (PyPI cloudflare, pinned
in .ci/python-tools.sh) as a user would: create, read, list, update and
delete of every object kind, and a Worker uploaded with a module, a source
map and static assets. Every answer is parsed by the SDK's pydantic models
with strict response validation on. Run by conformance_test.go: PHASE=create
prints what it made as one JSON line; PHASE=delete (STATE: that line)
deletes it. Exits non-zero on the first failed expectation."""

import base64
import hashlib
import json
import os
import sys

import cloudflare
from cloudflare import Cloudflare


def env(k):
    v = os.environ.get(k)
    if not v:
        raise SystemExit(f"{k} is not set")
    return v


account_id = env("CF_ACCOUNT_ID")
zone_id = env("CF_ZONE_ID")
prefix = env("PREFIX")
client = Cloudflare(
    api_token=env("CF_API_TOKEN"),
    base_url=env("CF_BASE_URL"),
    max_retries=0,
    _strict_response_validation=True,
)
# The versions routes' models in 5.9.0 declare resources.bindings as a plain
# class without fields (ResourcesBindings), for which pydantic can build no
# schema: strict validation of any version that has bindings fails inside
# the SDK, whatever the server answers. Those two calls read the raw JSON.
calls = 0


def call(what, fn):
    global calls
    calls += 1
    try:
        return fn()
    except Exception as e:  # name the call in the failure
        raise RuntimeError(f"{what}: {type(e).__name__}: {e}") from e


def expect(cond, what, got=None):
    if not cond:
        raise AssertionError(f"{what}: got {got!r}")


def refuses(what, code, fn):
    global calls
    calls += 1
    try:
        fn()
    except cloudflare.APIStatusError as e:
        body = e.body if isinstance(e.body, dict) else {}
        got = (body.get("errors") or [{}])[0].get("code")
        expect(400 <= e.status_code < 500 and got == code, f"{what} should fail with {code}", (e.status_code, body))
        return
    raise AssertionError(f"{what}: succeeded, want error {code}")


def d1():
    db = call("d1.database.create", lambda: client.d1.database.create(account_id=account_id, name=f"{prefix}-db"))
    got = call("d1.database.get", lambda: client.d1.database.get(db.uuid, account_id=account_id))
    expect(got.name == f"{prefix}-db", "d1 get name", got)
    listed = call("d1.database.list", lambda: list(client.d1.database.list(account_id=account_id)))
    expect(any(d.uuid == db.uuid for d in listed), "d1 list has the database", listed)
    res = call("d1.database.query", lambda: list(client.d1.database.query(
        db.uuid, account_id=account_id, sql="CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (7); SELECT n FROM t")))
    expect(res[-1].results and res[-1].results[0].get("n") == 7, "d1 query result", res)
    return db


def kv():
    ns = call("kv.namespaces.create", lambda: client.kv.namespaces.create(account_id=account_id, title=f"{prefix}-cache"))
    call("kv.namespaces.update", lambda: client.kv.namespaces.update(ns.id, account_id=account_id, title=f"{prefix}-cache-2"))
    got = call("kv.namespaces.get", lambda: client.kv.namespaces.get(ns.id, account_id=account_id))
    expect(got.title == f"{prefix}-cache-2", "kv renamed", got)
    listed = call("kv.namespaces.list", lambda: list(client.kv.namespaces.list(account_id=account_id)))
    expect(any(n.id == ns.id for n in listed), "kv list has the namespace", listed)
    call("kv.namespaces.values.update", lambda: client.kv.namespaces.values.update(
        "greeting", account_id=account_id, namespace_id=ns.id, value=b"hello"))
    value = call("kv.namespaces.values.get", lambda: client.kv.namespaces.values.get(
        "greeting", account_id=account_id, namespace_id=ns.id))
    expect(value.text() == "hello", "kv value", value.text())
    call("kv.namespaces.values.delete", lambda: client.kv.namespaces.values.delete(
        "greeting", account_id=account_id, namespace_id=ns.id))
    return ns


def r2():
    b = call("r2.buckets.create", lambda: client.r2.buckets.create(account_id=account_id, name=f"{prefix}-media", location_hint="weur"))
    got = call("r2.buckets.get", lambda: client.r2.buckets.get(b.name, account_id=account_id))
    expect(got.location == "weur", "r2 location", got.location)
    listed = call("r2.buckets.list", lambda: client.r2.buckets.list(account_id=account_id))
    expect(any(x.name == b.name for x in (listed.buckets or [])), "r2 list has the bucket", listed)
    return b


def queues(script):
    q = call("queues.create", lambda: client.queues.create(account_id=account_id, queue_name=f"{prefix}-jobs"))
    call("queues.update", lambda: client.queues.update(
        q.queue_id, account_id=account_id, queue_name=f"{prefix}-jobs", settings={"delivery_delay": 5}))
    got = call("queues.get", lambda: client.queues.get(q.queue_id, account_id=account_id))
    expect(got.settings and got.settings.delivery_delay == 5, "queue settings", got)
    listed = call("queues.list", lambda: list(client.queues.list(account_id=account_id)))
    expect(any(x.queue_id == q.queue_id for x in listed), "queue list", listed)
    c = call("queues.consumers.create", lambda: client.queues.consumers.create(
        q.queue_id, account_id=account_id, type="worker", script_name=script, settings={"batch_size": 5}))
    call("queues.consumers.update", lambda: client.queues.consumers.update(
        c.consumer_id, account_id=account_id, queue_id=q.queue_id, type="worker", script_name=script,
        settings={"batch_size": 7, "max_concurrency": 2}))
    gc = call("queues.consumers.get", lambda: client.queues.consumers.get(c.consumer_id, account_id=account_id, queue_id=q.queue_id))
    expect(gc.settings.batch_size == 7 and gc.settings.max_concurrency == 2, "consumer updated", gc)
    cl = call("queues.consumers.list", lambda: list(client.queues.consumers.list(q.queue_id, account_id=account_id)))
    expect(len(cl) == 1, "one consumer", cl)
    call("queues.consumers.delete", lambda: client.queues.consumers.delete(c.consumer_id, account_id=account_id, queue_id=q.queue_id))
    call("queues.delete", lambda: client.queues.delete(q.queue_id, account_id=account_id))


def upload_worker(name, db, ns, bucket):
    asset = f"hello from {prefix} assets\n".encode()
    digest = hashlib.sha256(asset).hexdigest()[:32]
    session = call("workers.scripts.assets.upload.create", lambda: client.workers.scripts.assets.upload.create(
        name, account_id=account_id, manifest={"/hello.txt": {"hash": digest, "size": len(asset)}}))
    completion = session.jwt
    if session.buckets:
        done = call("workers.assets.upload.create", lambda: client.workers.assets.upload.create(
            account_id=account_id, base64=True, body={digest: base64.b64encode(asset).decode()},
            extra_headers={"Authorization": f"Bearer {session.jwt}"}))
        completion = done.jwt
    expect(isinstance(completion, str) and completion, "assets completion token", completion)
    bindings = [
        {"type": "d1", "name": "DB", "database_id": db.uuid},
        {"type": "kv_namespace", "name": "CACHE", "namespace_id": ns.id},
        {"type": "r2_bucket", "name": "MEDIA", "bucket_name": bucket.name},
        {"type": "plain_text", "name": "WHO", "text": prefix},
    ]
    metadata = {
        "main_module": "index.js",
        "compatibility_date": "2025-01-01",
        "bindings": bindings + [{"type": "assets", "name": "ASSETS"}],
        "assets": {"jwt": completion, "config": {"not_found_handling": "none"}},
    }
    code = (b'export default { async fetch(req, env) { const n = await env.DB.prepare("SELECT n FROM t").first("n"); '
            b'return new Response("worker " + env.WHO + " " + n); } };\n//# sourceMappingURL=index.js.map\n')
    source_map = json.dumps({"version": 3, "sources": ["src/index.ts"], "names": [], "mappings": "AAAA"}).encode()
    files = [("index.js", code, "application/javascript+module"), ("index.js.map", source_map, "application/source-map")]

    up = call("workers.scripts.update", lambda: client.workers.scripts.update(name, account_id=account_id, metadata=metadata, files=files))
    expect(up.has_assets is True and up.has_modules is True, "upload flags", up)
    version = call("workers.scripts.versions.create", lambda: client.workers.scripts.versions.with_raw_response.create(
        name, account_id=account_id, metadata={"main_module": "index.js", "compatibility_date": "2025-01-01", "bindings": bindings},
        files=files).http_response.json()["result"])
    versions = call("workers.scripts.versions.list", lambda: list(client.workers.scripts.versions.list(name, account_id=account_id)))
    expect(len(versions) == 2, "two versions", versions)
    v = call("workers.scripts.versions.get", lambda: client.workers.scripts.versions.with_raw_response.get(
        version["id"], account_id=account_id, script_name=name).http_response.json()["result"])
    d1b = [b for b in v["resources"]["bindings"] if b["name"] == "DB"]
    expect(d1b and d1b[0]["database_id"] == db.uuid, "version D1 binding database_id", d1b)
    settings = call("workers.scripts.script_and_version_settings.get", lambda: client.workers.scripts.script_and_version_settings.get(
        name, account_id=account_id))
    sb = [b for b in settings.bindings if b.name == "DB"]
    expect(sb and sb[0].database_id == db.uuid, "settings D1 binding database_id", sb)
    content = call("workers.scripts.content.get", lambda: client.workers.scripts.content.get(name, account_id=account_id))
    body = content.text()
    expect("application/source-map" in body and "index.js.map" in body, "content keeps the source map", body[:200])
    scripts = call("workers.scripts.list", lambda: list(client.workers.scripts.list(account_id=account_id)))
    expect(any(s.id == name for s in scripts), "script list", [s.id for s in scripts])
    return name


def routing(script):
    zones = call("zones.list", lambda: list(client.zones.list()))
    expect(any(z.id == zone_id for z in zones), "zones.list has the zone", [z.id for z in zones])
    z = call("zones.get", lambda: client.zones.get(zone_id=zone_id))
    expect(isinstance(z.owner.id, str) and isinstance(z.owner.name, str), "zone owner", z.owner)
    host = f"{prefix}.{z.name}"
    route = call("workers.routes.create", lambda: client.workers.routes.create(zone_id=zone_id, pattern=f"{host}/api/*", script=script))
    call("workers.routes.update", lambda: client.workers.routes.update(route.id, zone_id=zone_id, pattern=f"{host}/v2/*", script=script))
    gr = call("workers.routes.get", lambda: client.workers.routes.get(route.id, zone_id=zone_id))
    expect(gr.pattern == f"{host}/v2/*", "route updated", gr)
    routes = call("workers.routes.list", lambda: list(client.workers.routes.list(zone_id=zone_id)))
    expect(any(r.id == route.id for r in routes), "route list", routes)
    scripts = call("workers.scripts.list", lambda: list(client.workers.scripts.list(account_id=account_id)))
    listed = [s for s in scripts if s.id == script]
    expect(listed and any(r.id == route.id for r in (listed[0].routes or [])), "script list shows the route", listed)
    domain = call("workers.domains.update", lambda: client.workers.domains.update(
        account_id=account_id, hostname=f"app-{host}", service=script, zone_id=zone_id))
    gd = call("workers.domains.get", lambda: client.workers.domains.get(domain.id, account_id=account_id))
    expect(gd.cert_id == domain.cert_id and gd.cert_id, "domain cert_id stable", gd)
    domains = call("workers.domains.list", lambda: list(client.workers.domains.list(account_id=account_id)))
    expect(any(d.id == domain.id for d in domains), "domain list", domains)
    return route, domain


def more_routes(worker, ns, db):
    """The other routes the emulator serves that the SDK has methods for,
    each answer through the SDK's strict models."""
    accounts = call("accounts.list", lambda: list(client.accounts.list()))
    expect(any(a.id == account_id for a in accounts), "accounts.list", accounts)
    call("user.tokens.verify", lambda: client.user.tokens.verify())
    call("kv.namespaces.bulk_update", lambda: client.kv.namespaces.bulk_update(
        ns.id, account_id=account_id, body=[{"key": "a", "value": "1"}, {"key": "b", "value": "2"}]))
    keys = call("kv.namespaces.keys.list", lambda: list(client.kv.namespaces.keys.list(ns.id, account_id=account_id)))
    expect(sorted(k.name for k in keys) == ["a", "b"], "kv keys", keys)
    call("kv.namespaces.bulk_delete", lambda: client.kv.namespaces.bulk_delete(ns.id, account_id=account_id, body=["a", "b"]))
    raw = call("d1.database.raw", lambda: list(client.d1.database.raw(db.uuid, account_id=account_id, sql="SELECT n FROM t")))
    expect(raw and raw[0].results and raw[0].results.rows == [[7]], "d1 raw", raw)
    call("workers.scripts.secrets.update", lambda: client.workers.scripts.secrets.update(
        worker, account_id=account_id, name="TOKEN", text="not-shown", type="secret_text"))
    secrets = call("workers.scripts.secrets.list", lambda: list(client.workers.scripts.secrets.list(worker, account_id=account_id)))
    expect([x.name for x in secrets] == ["TOKEN"], "secret list", secrets)
    call("workers.scripts.secrets.get", lambda: client.workers.scripts.secrets.get("TOKEN", account_id=account_id, script_name=worker))
    call("workers.scripts.secrets.delete", lambda: client.workers.scripts.secrets.delete("TOKEN", account_id=account_id, script_name=worker))
    call("workers.scripts.schedules.update", lambda: client.workers.scripts.schedules.update(
        worker, account_id=account_id, body=[{"cron": "*/30 * * * *"}]))
    sched = call("workers.scripts.schedules.get", lambda: client.workers.scripts.schedules.get(worker, account_id=account_id))
    expect([x.cron for x in sched.schedules] == ["*/30 * * * *"], "schedules", sched)
    call("workers.scripts.subdomain.create", lambda: client.workers.scripts.subdomain.create(worker, account_id=account_id, enabled=True))
    sub = call("workers.scripts.subdomain.get", lambda: client.workers.scripts.subdomain.get(worker, account_id=account_id))
    expect(sub.enabled is True, "script subdomain", sub)
    call("workers.subdomains.get", lambda: client.workers.subdomains.get(account_id=account_id))
    call("workers.scripts.settings.get", lambda: client.workers.scripts.settings.get(worker, account_id=account_id))
    call("workers.scripts.settings.edit", lambda: client.workers.scripts.settings.edit(
        worker, account_id=account_id, observability={"enabled": True, "head_sampling_rate": 0.5}))
    # Both SDKs declare this list as pages of {items: [{deployments}]}, but
    # Cloudflare answers {deployments: [...]} (what wrangler reads, and the
    # emulator gives), so the SDK's pages are empty: read the raw JSON.
    deployments = call("workers.scripts.deployments.list", lambda: client.workers.scripts.deployments.with_raw_response.list(
        worker, account_id=account_id).http_response.json()["result"]["deployments"])
    expect(deployments and deployments[0]["versions"], "deployments", deployments)


def create():
    db = d1()
    ns = kv()
    bucket = r2()
    worker = upload_worker(f"{prefix}-web", db, ns, bucket)
    queues(worker)
    route, domain = routing(worker)
    more_routes(worker, ns, db)
    return {"calls": calls, "worker": worker, "db": db.uuid, "ns": ns.id, "bucket": bucket.name, "route": route.id, "domain": domain.id}


def remove(st):
    call("workers.routes.delete", lambda: client.workers.routes.delete(st["route"], zone_id=zone_id))
    call("workers.domains.delete", lambda: client.workers.domains.delete(st["domain"], account_id=account_id))
    call("workers.scripts.delete", lambda: client.workers.scripts.delete(st["worker"], account_id=account_id, force=True))
    refuses("workers.scripts.script_and_version_settings.get (deleted)", 10007,
            lambda: client.workers.scripts.script_and_version_settings.get(st["worker"], account_id=account_id))
    call("kv.namespaces.delete", lambda: client.kv.namespaces.delete(st["ns"], account_id=account_id))
    call("r2.buckets.delete", lambda: client.r2.buckets.delete(st["bucket"], account_id=account_id))
    call("d1.database.delete", lambda: client.d1.database.delete(st["db"], account_id=account_id))
    refuses("d1.database.get (deleted)", 7404, lambda: client.d1.database.get(st["db"], account_id=account_id))
    return {"calls": calls}


def main():
    out = create() if env("PHASE") == "create" else remove(json.loads(env("STATE")))
    print(json.dumps(out))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        raise
