// The tail worker of every workerd configuration the emulator renders (written
// for this project). workerd hands it the trace events of each worker that
// lists it among its tails, once per invocation: the console.* calls, the
// uncaught exceptions, the outcome and the event (request, cron, queue
// batch...). The emulator cannot tell whose events these are from the events
// themselves (workerd leaves scriptName empty), so each worker names itself
// in the props its tail is attached with; the events go to the emulator with
// those props through SINK.
export default {
  async tail(events, env, ctx) {
    try {
      await env.SINK.fetch("http://tail-sink/", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ props: ctx.props, events }),
      });
    } catch {
      // The emulator is stopping: these events are lost, as a tail
      // consumer's are when it cannot be reached.
    }
  },
};
