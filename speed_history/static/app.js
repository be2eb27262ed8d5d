// The speed history's pages: draws window.SPEED_HISTORY (written by
// speed_history/site.py into data.js) as SVG plots and tables, with no
// library and nothing loaded from anywhere else.
"use strict";
(function () {
  const data = window.SPEED_HISTORY;
  const SVG_NS = "http://www.w3.org/2000/svg";
  const WIDTH = 560, HEIGHT = 230;
  const PAD = { left: 62, right: 44, top: 12, bottom: 46 };

  // An element of `ns` (HTML when null) with attributes, appended to parent.
  function make(ns, name, attrs, parent) {
    const node = ns ? document.createElementNS(ns, name) : document.createElement(name);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    if (parent) parent.appendChild(node);
    return node;
  }
  const html = (name, attrs, parent) => make(null, name, attrs, parent);
  const svg = (name, attrs, parent) => make(SVG_NS, name, attrs, parent);

  function short(value) {
    if (value === null || value === undefined) return "-";
    const a = Math.abs(value);
    if (a !== 0 && (a < 1e-3 || a >= 1e5)) return value.toExponential(2);
    return Number(value.toPrecision(3)).toString();
  }

  // The y scale of a plot: linear, or logarithmic where the figures span
  // more than a factor of 30 (times of 64 B and 64 MiB cases on one plot).
  function yScale(values, limit) {
    let lo = Math.min(...values), hi = Math.max(...values);
    if (limit !== null) { lo = Math.min(lo, limit); hi = Math.max(hi, limit); }
    const log = lo > 0 && hi / lo > 30;
    const f = log ? Math.log10 : (v) => v;
    let a = f(lo), b = f(hi);
    if (!log) { a = Math.min(a, 0); }
    if (b - a === 0) { b = a + 1; }
    const span = HEIGHT - PAD.top - PAD.bottom;
    const map = (v) => PAD.top + span * (1 - (f(v) - a) / (b - a));
    return { map, log, ticks: log ? logTicks(a, b) : linearTicks(a, b) };
  }

  function linearTicks(a, b) {
    const step = Math.pow(10, Math.floor(Math.log10((b - a) / 4)));
    const nice = [1, 2, 5, 10].map((m) => m * step).find((s) => (b - a) / s <= 5);
    const ticks = [];
    for (let v = Math.ceil(a / nice) * nice; v <= b + 1e-12; v += nice) ticks.push(v);
    return ticks;
  }

  function logTicks(a, b) {
    const ticks = [];
    for (let e = Math.ceil(a); e <= Math.floor(b); e++) ticks.push(Math.pow(10, e));
    return ticks.length ? ticks : [Math.pow(10, a), Math.pow(10, b)];
  }

  function xOf(index, count) {
    const span = WIDTH - PAD.left - PAD.right;
    return PAD.left + (count > 1 ? (span * index) / (count - 1) : span / 2);
  }

  function drawAxes(plot, scale, commits) {
    for (const tick of scale.ticks) {
      const y = scale.map(tick);
      svg("line", { class: "grid", x1: PAD.left, x2: WIDTH - PAD.right, y1: y, y2: y }, plot);
      svg("text", { x: PAD.left - 4, y: y + 3, "text-anchor": "end", text: short(tick) }, plot);
    }
    const bottom = HEIGHT - PAD.bottom;
    svg("line", { class: "axis", x1: PAD.left, x2: WIDTH - PAD.right, y1: bottom, y2: bottom }, plot);
    svg("line", { class: "axis", x1: PAD.left, x2: PAD.left, y1: PAD.top, y2: bottom }, plot);
    const every = Math.max(1, Math.ceil(commits.length / 14));
    commits.forEach((commit, i) => {
      if (i % every !== 0 && i !== commits.length - 1) return;
      const x = xOf(i, commits.length);
      svg("text", { x, y: bottom + 8, transform: `rotate(45 ${x} ${bottom + 8})`,
                    text: commit.hash.slice(0, 7) }, plot);
    });
  }

  function drawLimit(plot, scale, limit) {
    const y = scale.map(limit);
    svg("line", { class: "limit", x1: PAD.left, x2: WIDTH - PAD.right, y1: y, y2: y }, plot);
    svg("text", { class: "limit-label", x: WIDTH - PAD.right - 2, y: y - 3, "text-anchor": "end",
                  text: `limit ${short(limit)}` }, plot);
  }

  // One series: a line through its present values, a point (with a tooltip)
  // for each commit that has one.
  function drawSeries(plot, scale, bench, series, color) {
    const group = svg("g", { class: "series", "data-label": series.label }, plot);
    let path = "";
    let pen = "M";
    series.values.forEach((value, i) => {
      if (value === null || (scale.log && value <= 0)) { pen = "M"; return; }
      path += `${pen}${xOf(i, data.commits.length).toFixed(1)},${scale.map(value).toFixed(1)} `;
      pen = "L";
    });
    svg("path", { class: "line", d: path, stroke: color }, group);
    series.values.forEach((value, i) => {
      if (value === null || (scale.log && value <= 0)) return;
      const commit = data.commits[i];
      const point = svg("circle", { cx: xOf(i, data.commits.length).toFixed(1),
                                    cy: scale.map(value).toFixed(1), r: 2.5, fill: color,
                                    "data-commit": commit.hash }, group);
      svg("title", { text: `${series.label || bench.name}\n${commit.hash.slice(0, 8)} ` +
                           `${commit.subject}\n${short(value)} ${bench.unit}` }, point);
    });
  }

  function drawPlot(bench, parent) {
    const values = bench.series.flatMap((s) => s.values).filter((v) => v !== null);
    const plot = svg("svg", { class: "plot", width: WIDTH, height: HEIGHT,
                              "data-benchmark": bench.name }, parent);
    if (!values.length) {
      svg("text", { x: WIDTH / 2, y: HEIGHT / 2, "text-anchor": "middle", text: "no results" }, plot);
      return plot;
    }
    const scale = yScale(values, bench.limit);
    drawAxes(plot, scale, data.commits);
    if (bench.limit !== null) drawLimit(plot, scale, bench.limit);
    bench.series.forEach((series, i) => {
      const hue = Math.round((i * 137.5) % 360);
      drawSeries(plot, scale, bench, series, `hsl(${hue},65%,42%)`);
    });
    return plot;
  }

  function summary() {
    const header = document.getElementById("summary");
    const commits = data.commits;
    html("h1", { text: "fastblock speed history" }, header);
    const first = commits.length ? commits[0].hash.slice(0, 8) : "-";
    const last = commits.length ? commits[commits.length - 1].hash.slice(0, 8) : "-";
    html("p", { text: `machine ${data.machine}: ${commits.length} commits, ${first} to ${last}; ` +
                      `${data.benchmarks.length} benchmarks. Lower is better except for rates ` +
                      `and speed-ups (GB/s, calls/s, x NumPy, x num_threads=1).` }, header);
  }

  function historyPage() {
    const contents = document.getElementById("contents");
    const plots = document.getElementById("plots");
    const sections = [];
    for (const bench of data.benchmarks) {
      const id = "b-" + bench.name;
      html("a", { href: "#" + id, text: bench.name }, contents);
      const section = html("section", { class: "bench", id }, plots);
      const title = html("h3", { text: bench.name + " " }, section);
      html("span", { class: "unit", text: `(${bench.unit}, ${bench.series.length} series)` }, title);
      drawPlot(bench, section);
      sections.push([bench.name, section]);
    }
    document.getElementById("filter").addEventListener("input", (event) => {
      const wanted = event.target.value.toLowerCase();
      for (const [name, section] of sections) {
        section.style.display = name.toLowerCase().includes(wanted) ? "" : "none";
      }
    });
  }

  function table(parent, headings, rows) {
    const t = html("table", {}, parent);
    const head = html("tr", {}, t);
    for (const h of headings) html("th", { text: h }, head);
    for (const row of rows) {
      const tr = html("tr", {}, t);
      for (const [text, cls] of row) html("td", { text, class: cls || "" }, tr);
    }
    return t;
  }

  function alarmSection() {
    const section = document.getElementById("alarm");
    const alarm = data.alarm;
    html("h2", { text: "CI regression check (this commit against its parent)" }, section);
    if (!alarm) {
      html("p", { text: "No check report was given to this build of the site." }, section);
      return;
    }
    html("p", { text: alarm.summary }, section);
    if (!alarm.figures.length) return;      // not measured: the package was the parent's
    table(section, ["figure", "parent", "this commit", "change", "verdict"],
          alarm.figures.map((f) => [[f.name], [short(f.parent), "num"], [short(f.head), "num"],
                                    [`${((f.change - 1) * 100).toFixed(1)} %`, "num"],
                                    [f.verdict, f.verdict === "regression" ? "worse" : ""]]));
  }

  function regressionsPage() {
    alarmSection();
    const section = document.getElementById("moves");
    html("h2", { text: "Stored history: the newest commit's moves" }, section);
    html("p", { text: `Every figure of the newest commit ${data.threshold * 100} % or more away ` +
                      `from the median of the ${data.window} commits before it. The history ` +
                      `holds quick runs (one call a figure), so a move is marked worse only ` +
                      `when it is outside every one of those commits' values (three at ` +
                      `least); the CI check ` +
                      `above is the one that fails a submission.` }, section);
    const rows = data.moves.map((m) => [
      [m.benchmark], [m.label], [short(m.before), "num"], [short(m.now), "num"],
      [`x ${m.change.toFixed(2)}`, "num"], [m.worse ? "worse" : "within the range", m.worse ? "worse" : ""]]);
    const t = table(section, ["benchmark", "parameters", "before (median)", "now", "change", "verdict"], rows);
    t.id = "moves-table";
  }

  document.addEventListener("DOMContentLoaded", () => {
    summary();
    if (document.body.dataset.page === "regressions") regressionsPage();
    else historyPage();
  });
})();
