// The daemon's live feed (GET /dashboard/events, server-sent events): one
// stream per page, shared by whichever views listen. Events: `snapshot` (every
// sandbox shown), `sandbox` (one created or changed), `ended` ({sandboxID}),
// `metrics` ({id: newest sample}). The browser reconnects by itself.
const names = ["snapshot", "sandbox", "ended", "metrics"];
const listeners = new Set();
let source = null;

function open(url) {
  source = new EventSource(url);
  for (const name of names) {
    source.addEventListener(name, (event) => {
      const data = JSON.parse(event.data);
      for (const handlers of listeners) if (handlers[name]) handlers[name](data);
    });
  }
}

// `have`: the digest of the snapshot the page holds (GET /dashboard/bootstrap);
// the feed leaves its snapshot out if that is still the one. Only the first
// connection may: after a break the page holds more than that snapshot, and
// the browser would reconnect to the same URL, so a break opens it anew
// without the digest.
function start(have) {
  if (source) return;
  if (!have) return open("/dashboard/events");
  open(`/dashboard/events?have=${encodeURIComponent(have)}`);
  const first = source;
  first.addEventListener("error", () => {
    if (source !== first) return;
    first.close();
    source = null;
    start();
  }, { once: true });
}

// handlers: {snapshot(list), sandbox(row), ended({sandboxID}), metrics(map)};
// returns what stops them. `have` as start's.
export function subscribe(handlers, have) {
  listeners.add(handlers);
  start(have);
  return () => listeners.delete(handlers);
}

export function stopEvents() {
  if (source) source.close();
  source = null;
}
