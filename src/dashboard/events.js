// The daemon's live feed (GET /dashboard/events, server-sent events): one
// stream per page, shared by whichever views listen. Events: `snapshot` (every
// sandbox shown), `sandbox` (one created or changed), `ended` ({sandboxID}),
// `metrics` ({id: newest sample}). The browser reconnects by itself.
const names = ["snapshot", "sandbox", "ended", "metrics"];
const listeners = new Set();
let source = null;

function start() {
  if (source) return;
  source = new EventSource("/dashboard/events");
  for (const name of names) {
    source.addEventListener(name, (event) => {
      const data = JSON.parse(event.data);
      for (const handlers of listeners) if (handlers[name]) handlers[name](data);
    });
  }
}

// handlers: {snapshot(list), sandbox(row), ended({sandboxID}), metrics(map)};
// returns what stops them.
export function subscribe(handlers) {
  listeners.add(handlers);
  start();
  return () => listeners.delete(handlers);
}

export function stopEvents() {
  if (source) source.close();
  source = null;
}
