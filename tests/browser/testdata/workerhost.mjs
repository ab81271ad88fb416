// Runs a Worker module's fetch handler on loopback for tests/browser, as the
// Cloudflare runtime would call it: node workerhost.mjs <module>, with
// WORKER_HOST_CONFIG holding {"vars": {NAME: text}, "assets": origin,
// "services": {BINDING: origin}}. Each vars entry is in env as is; ASSETS and
// each service binding is an object whose fetch sends the request to that
// origin with the same path and query (a binding reaches its worker whatever
// the URL's host), the URL the worker asked for in x-workerhost-url. It
// prints "listening <port>" once it accepts requests.
import http from "node:http";
import { pathToFileURL } from "node:url";

const config = JSON.parse(process.env.WORKER_HOST_CONFIG);
const worker = (await import(pathToFileURL(process.argv[2]).href)).default;

function binding(origin) {
  return {
    fetch(input, init) {
      const request = new Request(input, init);
      const url = new URL(request.url);
      const headers = new Headers(request.headers);
      headers.set("x-workerhost-url", request.url);
      return fetch(origin + url.pathname + url.search, {
        method: request.method,
        headers,
        body: request.body,
        duplex: "half",
        redirect: "manual",
        signal: request.signal,
      });
    },
  };
}

const env = { ...config.vars };
if (config.assets) env.ASSETS = binding(config.assets);
for (const [name, origin] of Object.entries(config.services ?? {})) env[name] = binding(origin);

const hopByHop = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "host"]);

const server = http.createServer(async (req, res) => {
  try {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (!hopByHop.has(k)) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
    }
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method, headers, body: hasBody ? req : undefined, duplex: "half",
    });
    const response = await worker.fetch(request, env, { waitUntil() {}, passThroughOnException() {} });
    const out = {};
    response.headers.forEach((v, k) => { if (!hopByHop.has(k) && k !== "content-length" && k !== "content-encoding") out[k] = v; });
    res.writeHead(response.status, out);
    res.end(Buffer.from(await response.arrayBuffer()));
  } catch (err) {
    console.error(err);
    res.writeHead(500, { "content-type": "text/plain" });
    res.end("workerhost: " + (err && err.stack ? err.stack : String(err)));
  }
});
server.listen(0, "127.0.0.1", () => console.log("listening " + server.address().port));
