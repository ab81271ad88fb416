// Fixture control plane for the engine tests: answers /health and owns a
// SQLite-backed Durable Object class.
export class SessionDO {
  constructor(state) {
    this.state = state;
  }
  async fetch() {
    return new Response("session");
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/health") {
      return Response.json({ status: "healthy", service: "fixture-control-plane", greeting: env.GREETING });
    }
    return new Response("not found", { status: 404 });
  },
  async scheduled() {},
};
