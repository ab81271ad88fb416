// The gateway of every workerd configuration the emulator renders (written
// for this project). The emulator sends each event for a worker here, naming
// the worker's service in x-emulator-worker; the gateway hands it to that
// worker through a service binding, which is how workerd dispatches fetch,
// queue and scheduled events to another worker
// (service_binding_extra_handlers). A request naming no worker is the
// emulator's readiness probe.
const WORKER = "x-emulator-worker";
const EVENT = "x-emulator-event";
const URL_HEADER = "x-emulator-url";

function fromBase64(s) {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// queueMessage turns the emulator's JSON of a stored message into what
// Fetcher.queue takes: v8-serialised bodies go as serializedBody, so the
// consumer sees the value the producer sent.
function queueMessage(m) {
  const out = { id: m.id, timestamp: new Date(m.timestamp), attempts: m.attempts };
  switch (m.contentType) {
    case "v8":
      out.serializedBody = fromBase64(m.body);
      break;
    case "bytes":
      out.body = fromBase64(m.body);
      break;
    case "json":
      out.body = JSON.parse(m.body);
      break;
    default:
      out.body = m.body;
  }
  return out;
}

export default {
  async fetch(request, env) {
    const target = request.headers.get(WORKER);
    if (target === null) return new Response("ready");
    const alias = env.TARGETS[target];
    if (alias === undefined) {
      return Response.json({ error: `worker ${target} is not running` }, { status: 404 });
    }
    const worker = env[alias];
    switch (request.headers.get(EVENT) || "fetch") {
      case "fetch": {
        const headers = new Headers(request.headers);
        const url = headers.get(URL_HEADER);
        for (const h of [WORKER, EVENT, URL_HEADER]) headers.delete(h);
        return worker.fetch(
          new Request(url, { method: request.method, headers, body: request.body, redirect: "manual" }),
        );
      }
      case "scheduled": {
        const { cron, scheduledTime } = await request.json();
        return Response.json(await worker.scheduled({ cron, scheduledTime: new Date(scheduledTime) }));
      }
      case "queue": {
        const { queue, messages } = await request.json();
        return Response.json(await worker.queue(queue, messages.map(queueMessage)));
      }
    }
    return Response.json({ error: "unknown event" }, { status: 400 });
  },
};
