// A terminal into a sandbox: xterm.js over envd's PTY RPCs. Start is a
// Connect server stream (JSON messages in 5-byte envelopes) read from fetch's
// body; keystrokes go back by SendInput and size changes by Update.
import { ApiError, request, rpc } from "./api.js";
import { el, showError } from "./dom.js";

const encoder = new TextEncoder();
let current = null; // { term, abort, id, pid }: the one terminal shown

function toBase64(bytes) {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text);
}

function fromBase64(text) {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

// One Connect envelope: flags byte, big-endian length, the JSON message.
function envelope(message) {
  const payload = encoder.encode(JSON.stringify(message));
  const out = new Uint8Array(5 + payload.length);
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, 5);
  return out;
}

// Calls `onMessage` with each envelope's JSON as the stream delivers it.
async function readEnvelopes(body, onMessage) {
  const reader = body.getReader();
  let buffer = new Uint8Array(0);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    const joined = new Uint8Array(buffer.length + value.length);
    joined.set(buffer);
    joined.set(value, buffer.length);
    buffer = joined;
    while (buffer.length >= 5) {
      const length = new DataView(buffer.buffer, buffer.byteOffset).getUint32(1);
      if (buffer.length < 5 + length) break;
      const flags = buffer[0];
      const message = JSON.parse(new TextDecoder().decode(buffer.subarray(5, 5 + length)));
      buffer = buffer.slice(5 + length);
      onMessage(message, (flags & 2) !== 0);
    }
  }
}

function theme() {
  const style = getComputedStyle(document.documentElement);
  return { background: style.getPropertyValue("--term-bg").trim(),
    foreground: style.getPropertyValue("--term-fg").trim(),
    cursor: style.getPropertyValue("--accent").trim() };
}

async function start(term, id, box, abort) {
  let pid = 0;
  // Keystrokes go one SendInput at a time, those typed meanwhile together:
  // parallel fetches could arrive out of order.
  let queued = "";
  let sending = false;
  const flush = async () => {
    if (sending || !pid || !queued) return;
    sending = true;
    const data = queued;
    queued = "";
    const input = { process: { pid }, input: { pty: toBase64(encoder.encode(data)) } };
    await rpc(id, "process.Process/SendInput", input).catch(showError);
    sending = false;
    flush();
  };
  term.onData((data) => {
    queued += data;
    flush();
  });
  term.onResize(({ cols, rows }) => {
    if (pid) rpc(id, "process.Process/Update", { process: { pid }, pty: { size: { cols, rows } } }).catch(() => {});
  });
  const message = {
    process: { cmd: "/bin/bash", args: ["-i", "-l"], envs: { TERM: "xterm-256color" } },
    pty: { size: { cols: term.cols, rows: term.rows } },
  };
  const response = await request("POST", "/process.Process/Start", { sandbox: id, body: envelope(message),
    signal: abort.signal,
    headers: { "Content-Type": "application/connect+json", "Connect-Protocol-Version": "1" } });
  await readEnvelopes(response.body, (event, last) => {
    if (last) {
      if (event.error) showError(new Error(event.error.message));
      return;
    }
    const e = event.event || {};
    if (e.start) {
      pid = e.start.pid;
      box.dataset.pid = pid;
      if (current) current.pid = pid;
      flush();
    }
    if (e.data && e.data.pty) term.write(fromBase64(e.data.pty));
    if (e.end) term.write("\r\n[the shell ended]\r\n");
  });
}

export async function terminalSection(id) {
  const box = el("div", { id: "terminal", class: "terminal" });
  const section = el("section", { class: "card wide" }, el("h2", {}, "Terminal"), box);
  let Terminal;
  try {
    ({ Terminal } = await import("./xterm.mjs"));
  } catch {
    box.replaceWith(el("p", { class: "muted" }, "This abx was built without xterm.js: run ",
      el("code", {}, "make deps build"), " to have a terminal here."));
    return section;
  }
  const term = new Terminal({ cols: 100, rows: 20, fontSize: 13, theme: theme(), cursorBlink: true,
    fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, monospace' });
  closeTerminal();
  const abort = new AbortController();
  current = { term, abort, id, pid: 0 };
  requestAnimationFrame(() => {
    term.open(box);
    start(term, id, box, abort).catch((error) => {
      if (error.name !== "AbortError") showError(error);
    });
  });
  return section;
}

// SIGKILL to the shell, tried again when the request is lost on the way (a
// host whose network interfaces change, as sandboxes come and go, makes
// Chromium drop or stall requests in flight); the daemon's answer, even an
// error, is final.
async function killShell(id, pid) {
  const message = { process: { pid }, signal: "SIGNAL_SIGKILL" };
  for (let attempt = 0; attempt < 8; attempt += 1) {
    try {
      await request("POST", "/process.Process/SendSignal",
        { sandbox: id, json: message, signal: AbortSignal.timeout(2500) });
      return;
    } catch (error) {
      if (error instanceof ApiError) return;
    }
  }
}

// Leaving the page ends its shell: the stream is cut and the shell killed,
// so no login shell is left behind in the sandbox.
export function closeTerminal() {
  if (!current) return;
  const { term, abort, id, pid } = current;
  current = null;
  abort.abort();
  if (pid) killShell(id, pid);
  try {
    term.dispose();
  } catch {
    // a terminal torn down mid-render may throw; its shell is ended already
  }
}
