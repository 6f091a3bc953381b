// Building the page from data without innerHTML: every string a sandbox or a
// caller controls (metadata, file names, logs) lands as text, never markup.
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// One line saying what went wrong and what to do; cleared by the next success.
export function showError(error) {
  const line = document.getElementById("error");
  if (!error) {
    line.hidden = true;
    return;
  }
  line.textContent = error.message || String(error);
  line.hidden = false;
}

export function bytes(n) {
  if (!Number.isFinite(n) || n <= 0) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i += 1;
  }
  return `${n < 10 && i > 0 ? n.toFixed(1) : Math.round(n)} ${units[i]}`;
}

// One formatter for every cell: toLocaleTimeString with options builds a new
// Intl formatter per call, most of a 1000-row table's render time.
const clock = new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit", second: "2-digit",
  hourCycle: "h23" });

export function when(text) {
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) return "–";
  return clock.format(date);
}

// "in 4m 10s" / "3m ago": how far `text` is from now.
export function relative(text) {
  const ms = new Date(text).getTime() - Date.now();
  if (!Number.isFinite(ms)) return "";
  const s = Math.round(Math.abs(ms) / 1000);
  const span = s >= 3600 ? `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`
    : s >= 60 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${s}s`;
  return ms >= 0 ? `in ${span}` : `${span} ago`;
}
