// The report's one script, inlined into every audit and reconciliation page and named by its
// hash in the page's Content Security Policy. Draws the charts whose numbers the JSON in
// #report-data holds (an audit page: throughput and rejections; a reconciliation page: match
// rate, breaks by reason and by age), each at its box's width (again when the window is
// resized), so that its text keeps its size; marks <body data-charts="drawn"> once done, so that a
// browser test can tell the script ran to its end. Writes nothing to the console.
(() => {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";
  const data = JSON.parse(document.getElementById("report-data").textContent);
  // Whole numbers, but a slow batch's 0.4 events/s must not read as 0.
  const fmt = (n, top = n) =>
    n.toLocaleString("en-US", { maximumFractionDigits: top < 10 ? 2 : top < 100 ? 1 : 0 });

  function node(name, attrs, parent, label) {
    const el = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
    if (label !== undefined) el.textContent = label;
    parent.appendChild(el);
    return el;
  }
  // A chart is drawn at the width its box has (at least 480 px), so that its text keeps its
  // size however wide the window: the script draws again when the window is resized.
  const widthOf = (box) => Math.max(480, Math.floor(box.clientWidth) || 760);
  function canvas(box, width, height, label) {
    box.textContent = "";
    const viewBox = `0 0 ${width} ${height}`;
    return node("svg", { viewBox, role: "img", "aria-label": label }, box);
  }
  function empty(box, message) {
    box.textContent = "";
    const p = document.createElement("p");
    p.className = "empty";
    p.textContent = message;
    box.appendChild(p);
  }
  function niceTop(value) {
    if (!(value > 0)) return 1;
    const power = Math.pow(10, Math.floor(Math.log10(value)));
    for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value) return step * power;
    return 10 * power;
  }
  // The points the throughput axis names: every one where their labels fit side by side;
  // else every k-th from the first, k the smallest round step (1, 2, 5, 10, 20, 50, ...)
  // that leaves a label's width between them; and always the last, for which the one before
  // it gives way when the two would touch. `step`: the room between two points.
  function labelled(points, step) {
    const room = 7 * Math.max(...points.map((p) => String(p.first).length)) + 8;
    let k = 1;
    for (let power = 1; k * step < room; power *= 10) {
      k = [1, 2, 5, 10].map((m) => m * power).find((s) => s * step >= room) || 10 * power;
    }
    const named = [];
    for (let i = 0; i < points.length; i += k) named.push(i);
    const last = points.length - 1;
    if (named[named.length - 1] !== last) {
      if (named.length > 1 && (last - named[named.length - 1]) * step < room) named.pop();
      named.push(last);
    }
    return named;
  }
  const span = (p) => (p.first === p.last ? `batch ${p.first}` : `batches ${p.first}-${p.last}`);

  function drawThroughput(box, points) {
    const shown = points.filter((p) => p.rate !== null);
    if (!shown.length) return empty(box, "No batch with a measured duration yet.");
    const W = widthOf(box), H = 260, L = 72, R = 18, T = 14, B = 40;
    const svg = canvas(box, W, H, "Throughput over batches, events per second");
    const top = niceTop(Math.max(...shown.map((p) => p.rate)));
    const step = shown.length === 1 ? 0 : (W - L - R) / (shown.length - 1);
    const x = (i) => (shown.length === 1 ? (L + W - R) / 2 : L + i * step);
    const y = (v) => T + (H - T - B) * (1 - v / top);
    for (let k = 0; k <= 4; k++) {
      const v = (top * k) / 4;
      node("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }, svg);
      const tick = { x: L - 8, y: y(v) + 4, "text-anchor": "end", class: "axis" };
      node("text", tick, svg, fmt(v, top));
    }
    for (const i of labelled(shown, step || W)) {
      node("text", { x: x(i), y: H - B + 18, "text-anchor": "middle", class: "axis" }, svg,
        String(shown[i].first));
    }
    node("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", class: "axis" }, svg,
      "batch");
    node("text", { x: 12, y: T + (H - T - B) / 2, "text-anchor": "middle", class: "axis",
      transform: `rotate(-90 12 ${T + (H - T - B) / 2})` }, svg, "events / s");
    const line = shown.map((p, i) => `${x(i)},${y(p.rate)}`).join(" ");
    node("polyline", { points: line, class: "line" }, svg);
    const radius = shown.length > 120 ? 1.5 : 4;
    shown.forEach((p, i) => {
      const dot = node("circle", { cx: x(i), cy: y(p.rate), r: radius, class: "point" }, svg);
      node("title", {}, dot, `${span(p)}: ${fmt(p.rate)} events/s`);
    });
  }

  // Horizontal bars, one a row: {label, value}. A row of 0 keeps its place with no bar.
  function drawBars(box, rows, title, unit, emptyText) {
    if (!rows.some((r) => r.value > 0)) return empty(box, emptyText);
    const W = widthOf(box), ROW = 30, L = 170, R = 90, T = 6;
    const svg = canvas(box, W, 2 * T + ROW * rows.length, title);
    const top = Math.max(...rows.map((r) => r.value));
    rows.forEach((r, i) => {
      const middle = T + i * ROW + ROW / 2;
      const label = { x: L - 10, y: middle + 4, "text-anchor": "end", class: "label" };
      node("text", label, svg, r.label);
      const width = r.value > 0 ? Math.max(2, ((W - L - R) * r.value) / top) : 0;
      if (width > 0) {
        const shape = { x: L, y: middle - 10, width, height: 20, rx: 3, class: "bar" };
        const bar = node("rect", shape, svg);
        node("title", {}, bar, `${r.label}: ${fmt(r.value)} ${unit}`);
      }
      node("text", { x: L + width + 8, y: middle + 4, class: "value" }, svg, fmt(r.value));
    });
  }

  // A bar of the whole per row: {label, matched, considered}; the matched share filled.
  function drawShares(box, rows, title) {
    const W = widthOf(box), ROW = 34, L = 170, R = 150, T = 6, inner = W - L - R;
    const svg = canvas(box, W, 2 * T + ROW * rows.length, title);
    rows.forEach((r, i) => {
      const middle = T + i * ROW + ROW / 2;
      const label = { x: L - 10, y: middle + 4, "text-anchor": "end", class: "label" };
      node("text", label, svg, r.label);
      const at = { x: L + inner + 8, y: middle + 4, class: "value" };
      if (!r.considered) return node("text", at, svg, "nothing to match");
      const whole = { x: L, y: middle - 10, width: inner, height: 20, rx: 3, class: "track" };
      node("title", {}, node("rect", whole, svg), `${r.label}: ${fmt(r.considered)} considered`);
      const width = (inner * r.matched) / r.considered;
      const shape = { x: L, y: middle - 10, width, height: 20, rx: 3, class: "bar matched" };
      node("title", {}, node("rect", shape, svg), `${r.label}: ${fmt(r.matched)} matched`);
      // As the table says (formats.share_text): to the nearest tenth, half a tenth up, but
      // 100.0 only when all of it and "< 0.1" for a part too small to show but not none.
      let tenths = Math.floor((2000 * r.matched + r.considered) / (2 * r.considered));
      if (r.matched < r.considered) tenths = Math.min(tenths, 999);
      const shown = tenths === 0 && r.matched > 0 ? "< 0.1" : (tenths / 10).toFixed(1);
      node("text", at, svg, `${shown}% of ${fmt(r.considered)}`);
    });
  }

  const charts = {
    throughput: (box, points) => drawThroughput(box, points),
    rejections: (box, reasons) =>
      drawBars(box, reasons.map((r) => ({ label: r.reason, value: r.events })),
        "Rejected events by reason", "events", "No event has been rejected."),
    match_rate: (box, sides) => drawShares(box, sides, "Match rate of each side"),
    reasons: (box, rows) =>
      drawBars(box, rows, "Open breaks by reason", "breaks", "No break is open."),
    ages: (box, rows) => drawBars(box, rows, "Open breaks by age", "breaks", "No break is open."),
  };
  // Each chart whose numbers the page holds, into its box `<key with - for _>-chart`.
  const drawAll = () => {
    for (const [key, draw] of Object.entries(charts)) {
      if (key in data) draw(document.getElementById(`${key.replace("_", "-")}-chart`), data[key]);
    }
  };
  drawAll();
  let pending = 0;
  window.addEventListener("resize", () => {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(drawAll);
  });
  document.body.dataset.charts = "drawn";
})();
