// Fixture worker for the wrangler conformance suite: one of every binding
// kind the emulator models, a Durable Object class and a queue consumer.
export class Counter {
  constructor(state, env) {
    this.state = state;
  }
  async fetch(request) {
    const n = ((await this.state.storage.get("n")) || 0) + 1;
    await this.state.storage.put("n", n);
    return new Response(String(n));
  }
}

export default {
  async fetch(request, env) {
    const id = env.COUNTER.idFromName("fixture");
    const hits = await env.COUNTER.get(id).fetch(request);
    await env.JOBS.send({ url: request.url });
    await env.CACHE.put("last", request.url);
    await env.FILES.put("last.txt", request.url);
    const row = await env.DB.prepare("SELECT 1 AS one").first();
    return new Response(`${env.GREETING} ${await hits.text()} ${row.one}`);
  },
  async queue(batch, env) {
    for (const msg of batch.messages) {
      msg.ack();
    }
  },
};
