// Line charts drawn as SVG by hand: four series of at most an hour's
// samples need no chart library (the smallest pinned ones weigh 40-50 KB;
// this is about 3), and SVG follows the theme's colours through CSS.
const svgNs = "http://www.w3.org/2000/svg";
const kWidth = 320;
const kHeight = 90;
const kMaxPoints = 720; // the daemon keeps an hour at one sample per 5 s

function svg(tag, attributes = {}) {
  const node = document.createElementNS(svgNs, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

// A chart of `value(sample)` against time, its scale from 0 to max(ceiling,
// the largest value); `label(sample)` says the newest value in words.
export function lineChart({ id, title, value, ceiling, label }) {
  const samples = [];
  const line = svg("polyline", { class: "chart-line", fill: "none" });
  const area = svg("polygon", { class: "chart-area" });
  const frame = svg("svg", { viewBox: `0 0 ${kWidth} ${kHeight}`, preserveAspectRatio: "none",
    class: "chart-svg", role: "img", "aria-label": title });
  frame.append(area, line);
  const now = document.createElement("span");
  now.className = "chart-now";
  const head = document.createElement("div");
  head.className = "chart-head";
  head.append(title, now);
  const figure = document.createElement("figure");
  figure.className = "chart";
  figure.id = id;
  figure.append(head, frame);

  const draw = () => {
    figure.dataset.points = String(samples.length);
    if (!samples.length) {
      now.textContent = "no samples yet";
      return;
    }
    const first = samples[0].timestampUnix;
    const span = Math.max(1, samples[samples.length - 1].timestampUnix - first);
    const top = Math.max(ceiling(samples[samples.length - 1]) || 0, ...samples.map(value), 1e-9);
    const points = samples.map((s) => {
      const x = samples.length === 1 ? kWidth : ((s.timestampUnix - first) / span) * kWidth;
      const y = kHeight - (Math.min(value(s), top) / top) * (kHeight - 4) - 2;
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    });
    line.setAttribute("points", points.join(" "));
    area.setAttribute("points", `0,${kHeight} ${points.join(" ")} ${kWidth},${kHeight}`);
    now.textContent = label(samples[samples.length - 1]);
  };

  return {
    element: figure,
    // Samples oldest first; one no newer than the last is skipped.
    add(list) {
      for (const sample of list) {
        const last = samples[samples.length - 1];
        if (last && sample.timestampUnix <= last.timestampUnix) continue;
        samples.push(sample);
      }
      samples.splice(0, Math.max(0, samples.length - kMaxPoints));
      draw();
    },
  };
}
