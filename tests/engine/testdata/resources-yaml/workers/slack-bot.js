// Fixture bot for the engine tests: consumes its queue and calls the control
// plane through its service binding.
export default {
  async fetch(request, env) {
    return env.CONTROL_PLANE.fetch(request);
  },
  async queue(batch) {
    for (const message of batch.messages) message.ack();
  },
};
