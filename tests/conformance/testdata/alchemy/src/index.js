// The Worker Alchemy bundles (with a source map, its default) and deploys.
export default {
  async fetch(request, env) {
    return new Response("alchemy worker " + env.WHO + " " + new URL(request.url).pathname);
  },
};
