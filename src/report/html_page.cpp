#include "report/html_page.hpp"

#include <string>

namespace fw::report {

std::string_view dashboard_html() {
  static constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>flexwatt agent</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px system-ui,sans-serif;margin:16px 20px;color:#222;background:#f6f7f9}
header{display:flex;align-items:baseline;gap:16px;flex-wrap:wrap}
h1{font-size:20px;margin:0 0 10px}h2{font-size:15px;margin:18px 0 6px}
.muted{color:#777}.bad{color:#b00;font-weight:600}.good{color:#176b2c}#err{color:#b00;font-weight:600}
#spans button{font:13px system-ui,sans-serif;padding:3px 10px;border:1px solid #bbb;background:#fff;cursor:pointer}
#spans button.on{background:#234;color:#fff;border-color:#234}
#cards,.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(210px,1fr));gap:8px;margin-bottom:10px}
.card{background:#fff;border:1px solid #dde;border-radius:4px;padding:6px 10px}
.card .k{font-size:12px;color:#666}.card .v{font-size:15px;margin-top:2px}
canvas{display:block;width:100%;max-width:1100px;height:340px;background:#fff;border:1px solid #ccd}
.legend{max-width:1100px;font-size:12px;margin:4px 0 2px}.legend span{display:inline-flex;align-items:center;gap:4px;margin-right:14px;white-space:nowrap}
.legend svg{vertical-align:middle}
table{border-collapse:collapse;background:#fff;margin-bottom:6px}
td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #e6e6ea;vertical-align:top}
thead th{background:#eef0f4;font-weight:600;white-space:nowrap}td:first-child{white-space:nowrap}tbody th{font-weight:600;color:#444}
.num td:not(:first-child){text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
#rep-table{font-size:13px}#rep-table td,#rep-table th{padding:3px 7px}#rep-table td:first-child{white-space:normal;max-width:250px}
.note{font-size:12px;color:#555;max-width:1100px}
img.power{max-width:1100px;width:100%;background:#fff;border:1px solid #ccd}
</style></head><body>
<header><h1 id="title">flexwatt agent <span id="host"></span></h1><div id="spans" aria-label="span"></div></header>
<div id="err"></div>
<main id="dash">
<div id="cards"></div>
<p class="note" id="simnote" hidden></p>
<canvas id="plot"></canvas>
<div class="legend" id="legend"></div><div class="note" id="shown"></div>
<h2>Jobs</h2><table id="jobs" class="num"></table>
<section id="jobs-time-box" hidden><h2>Jobs over time</h2>
<canvas id="job-tokens"></canvas><div class="legend" id="job-tokens-legend"></div>
<canvas id="job-knobs"></canvas><div class="legend" id="job-knobs-legend"></div></section>
<h2>GPUs</h2><table id="gpus" class="num"></table>
<section id="fleet-box" hidden><h2>Fleet and grid</h2><table id="fleet"></table></section>
<h2>Safety</h2><table id="info"></table>
</main>
<main id="rep" hidden>
<table id="rep-info"></table>
<h2>Trade-off: tokens against budget violations</h2>
<canvas id="trade"></canvas><div class="legend" id="rep-legend"></div>
<p class="note">Each controller's mean over seeds; bars: 95 % confidence intervals. Up and to the left is better.</p>
<h2>Controllers</h2><table id="rep-table" class="num"></table>
<p class="note">The columns of <code>flexwatt eval</code>'s table. step tokens: completed-step tokens per episode;
viol win %: budget windows over budget, mean over window offsets; slide win %: time the trailing budget-window mean is over
budget; steps viol %: share of completed steps in a violating window; tok/ref, tpm/ref: completed-step tokens and
tokens/MWh against the reference; tok/look: against look-ahead; limiter: safety-limiter interventions; setup GPU-h: simulated GPU-hours the arm ran before deployment (calibration, training). ± is the 95 % CI over seeds.</p>
<h2>Violations by judging window</h2>
<canvas id="windows"></canvas><div class="legend" id="win-legend"></div>
<p class="note">Aligned tumbling windows from t = 0, pooled over seeds; a window longer than the episode has no verdict and is left out.</p>
<section id="power-box" hidden></section>
</main>
<main id="caps" hidden>
<table id="caps-info"></table>
<h2>Trade-off: energy saved against throughput lost</h2>
<canvas id="caps-trade"></canvas><div class="legend" id="caps-legend"></div>
<p class="note">Each arm's mean over seeds against the uncapped run of the same seed; bars: ±1 SD across seeds; dashed:
the uniform and per-GPU static frontiers (upper concave envelope of their points and the origin). Up and to the left is better.</p>
<h2>Arms</h2><table id="caps-table" class="num"></table>
<p class="note">The columns of <code>flexwatt caps</code>'s table. saved %: 1 − (E/tokens)/(E0/tokens0); lost %: 1 − tokens/tokens0;
EDP % of a fixed amount of work; same-time %: 1 − E/E0; vs unif pt, vs pgpu pt: saved minus the uniform or per-GPU static
frontier at the same loss (percentage points); * = on its family's frontier; cost: what the arm runs to be chosen or deployed.</p>
</main>
<main id="dr" hidden>
<table id="dr-info"></table>
<h2>Site power against the target</h2>
<canvas id="dr-power"></canvas><div class="legend" id="dr-legend"></div>
<p class="note">1-minute means of the replayed site power and of the target (simulated: the jobs' measured cap curves).</p>
<h2>Trade-off: each job's performance against its tier</h2>
<canvas id="dr-trade"></canvas><div class="legend" id="dr-trade-legend"></div>
<p class="note">Performance (share of the job's uncut throughput over the event) against the minimum its tier allows; a job
under the diagonal is below its tier.</p>
<h2>Jobs</h2><table id="dr-jobs" class="num"></table>
<h2>Steps</h2><table id="dr-steps" class="num"></table>
<p class="note">The columns of <code>flexwatt dr replay</code>'s table.</p>
</main>
<main id="site" hidden>
<div id="site-cards" class="cards"></div>
<h2>Nodes and their shares</h2>
<canvas id="site-shares"></canvas><div class="legend" id="site-legend"></div>
<table id="site-nodes" class="num"></table>
<p class="note">share: the node's GPU budget in the leader's last split; safe: the static share it falls back to;
reserve: what the split kept back for it. Held: departed nodes whose share stays reserved until they are known off.</p>
<h2>Grid target and events</h2>
<table id="site-events" class="num"></table>
</main>
<div id="status" hidden>loading</div>
<script>
"use strict";
// ---- One plotting module: axes with units and nice ticks, lines, markers, error bars, bands.
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
  "#bcbd22", "#7f7f7f", "#393b79", "#ad494a", "#637939", "#8c6d31", "#7b4173", "#3182bd", "#e6550d"];
const MARKERS = ["circle", "square", "triangle", "diamond", "triangle-down", "cross", "x", "star"];
const BUDGET_COLOR = "#d62728";
function niceStep(range, n) {
  const raw = range / Math.max(1, n), p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
}
function linTicks(lo, hi, n) {
  const s = niceStep(hi - lo || 1, n), out = [];
  for (let v = Math.ceil(lo / s - 1e-9) * s; v <= hi + 1e-9 * s; v += s) out.push(Number(v.toPrecision(12)));
  return out;
}
function niceHi(v, n) { const s = niceStep(v || 1, n); return Math.ceil(v / s - 1e-9) * s || s; }
function logTicks(lo, hi) {
  const out = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++)
    for (const m of [1, 2, 5]) { const v = m * Math.pow(10, e); if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v); }
  return out;
}
// Seconds before now as "−30 s", "−15 min", "−1 h"; 0 as "now".
function agoLabel(s) {
  if (Math.abs(s) < 1e-9) return "now";
  const a = Math.abs(s);
  if (a >= 3600 && a % 3600 === 0) return "−" + a / 3600 + " h";
  if (a >= 60 && a % 60 === 0) return "−" + a / 60 + " min";
  return "−" + Number(a.toPrecision(6)) + " s";
}
function timeTicks(span) {
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];
  const st = steps.find(s => span / s <= 7) || 3600, out = [];
  for (let v = 0; v <= span + 1e-9; v += st) out.push(-v);
  return out.reverse();
}
function drawMarker(x, kind, px, py, r, color) {
  x.beginPath(); x.fillStyle = color; x.strokeStyle = color; x.lineWidth = 1.5;
  const tri = (d) => { x.moveTo(px, py - d * r); x.lineTo(px + r * 0.95, py + d * r * 0.7); x.lineTo(px - r * 0.95, py + d * r * 0.7); x.closePath(); x.fill(); };
  switch (kind) {
    case "square": x.rect(px - r * 0.85, py - r * 0.85, r * 1.7, r * 1.7); x.fill(); break;
    case "triangle": tri(1.1); break;
    case "triangle-down": tri(-1.1); break;
    case "diamond": x.moveTo(px, py - r * 1.2); x.lineTo(px + r, py); x.lineTo(px, py + r * 1.2); x.lineTo(px - r, py); x.closePath(); x.fill(); break;
    case "cross": x.lineWidth = 2.5; x.moveTo(px - r, py); x.lineTo(px + r, py); x.moveTo(px, py - r); x.lineTo(px, py + r); x.stroke(); break;
    case "x": x.lineWidth = 2.5; x.moveTo(px - r, py - r); x.lineTo(px + r, py + r); x.moveTo(px + r, py - r); x.lineTo(px - r, py + r); x.stroke(); break;
    case "star": for (let i = 0; i < 10; i++) { const a = -Math.PI / 2 + i * Math.PI / 5, rr = i % 2 ? r * 0.5 : r * 1.3;
      if (i) x.lineTo(px + rr * Math.cos(a), py + rr * Math.sin(a)); else x.moveTo(px + rr * Math.cos(a), py + rr * Math.sin(a)); } x.closePath(); x.fill(); break;
    default: x.arc(px, py, r, 0, 2 * Math.PI); x.fill();
  }
  x.lineWidth = 1;
}
// A small inline SVG of a legend entry: a line (dash) and/or a marker.
function swatch(color, o) {
  o = o || {};
  let s = '<svg width="26" height="12" aria-hidden="true">';
  if (o.line !== false) s += '<line x1="1" y1="6" x2="25" y2="6" stroke="' + color + '" stroke-width="' + (o.width || 2) + '"' + (o.dash ? ' stroke-dasharray="' + o.dash.join(",") + '"' : "") + "/>";
  if (o.band) s = '<svg width="26" height="12" aria-hidden="true"><rect x="1" y="1" width="24" height="10" fill="' + o.band + '"/>';
  if (o.marker) {
    const c = 13, r = 4, m = o.marker;
    if (m === "square") s += '<rect x="' + (c - 3.4) + '" y="2.6" width="6.8" height="6.8" fill="' + color + '"/>';
    else if (m === "triangle") s += '<polygon points="13,1.6 16.8,9 9.2,9" fill="' + color + '"/>';
    else if (m === "triangle-down") s += '<polygon points="13,10.4 16.8,3 9.2,3" fill="' + color + '"/>';
    else if (m === "diamond") s += '<polygon points="13,1.2 17,6 13,10.8 9,6" fill="' + color + '"/>';
    else if (m === "cross") s += '<path d="M9 6H17M13 2V10" stroke="' + color + '" stroke-width="2.5"/>';
    else if (m === "x") s += '<path d="M9.5 2.5L16.5 9.5M16.5 2.5L9.5 9.5" stroke="' + color + '" stroke-width="2.5"/>';
    else if (m === "star") s += '<polygon points="13,0.8 14.3,4.3 18,4.4 15.1,6.7 16.1,10.3 13,8.2 9.9,10.3 10.9,6.7 8,4.4 11.7,4.3" fill="' + color + '"/>';
    else s += '<circle cx="' + c + '" cy="6" r="' + r + '" fill="' + color + '"/>';
  }
  return s + "</svg>";
}
// plot(canvas, {x: {lo, hi, log, ticks, fmt, title}, y: {...}, bands: [[x0, x1, color]],
//   marks: [x], series: [{pts: [[x, y, xerr, yerr]], color, dash, width, marker, line}]})
function plot(c, o) {
  const dpr = window.devicePixelRatio || 1, cssW = c.clientWidth || 800, cssH = c.clientHeight || 340;
  c.width = Math.round(cssW * dpr); c.height = Math.round(cssH * dpr);
  const x = c.getContext("2d"); x.setTransform(dpr, 0, 0, dpr, 0, 0);
  c.setAttribute("aria-label", o.y.title + " against " + o.x.title);
  const W = cssW, H = cssH, L = 70, B = 46, T = 14, R = 18;
  x.clearRect(0, 0, W, H); x.fillStyle = "#fff"; x.fillRect(0, 0, W, H);
  const ax = o.x, ay = o.y;
  const fx = ax.log ? v => Math.log(v / ax.lo) / Math.log(ax.hi / ax.lo) : v => (v - ax.lo) / (ax.hi - ax.lo);
  const fy = ay.log ? v => Math.log(v / ay.lo) / Math.log(ay.hi / ay.lo) : v => (v - ay.lo) / (ay.hi - ay.lo);
  const X = v => L + (W - L - R) * fx(v), Y = v => T + (H - T - B) * (1 - fy(v));
  x.save(); x.beginPath(); x.rect(L, T, W - L - R, H - T - B); x.clip();
  for (const b of o.bands || []) { x.fillStyle = b[2] || "rgba(214,39,40,0.13)"; x.fillRect(X(b[0]), T, Math.max(1, X(b[1]) - X(b[0])), H - T - B); }
  x.restore();
  x.font = "12px system-ui, sans-serif"; x.fillStyle = "#444"; x.strokeStyle = "#e4e4e4";
  x.textAlign = "right"; x.textBaseline = "middle";
  for (const v of ay.ticks) { x.beginPath(); x.moveTo(L, Y(v)); x.lineTo(W - R, Y(v)); x.stroke(); x.fillText(ay.fmt(v), L - 6, Y(v)); }
  x.textAlign = "center"; x.textBaseline = "top";
  for (const v of ax.ticks) { x.beginPath(); x.moveTo(X(v), T); x.lineTo(X(v), H - B); x.stroke(); x.fillText(ax.fmt(v), X(v), H - B + 5); }
  x.strokeStyle = "#888"; x.beginPath(); x.moveTo(L, T); x.lineTo(L, H - B); x.lineTo(W - R, H - B); x.stroke();
  x.fillStyle = "#222"; x.font = "13px system-ui, sans-serif"; x.fillText(ax.title, L + (W - L - R) / 2, H - 19);
  x.save(); x.translate(15, T + (H - T - B) / 2); x.rotate(-Math.PI / 2); x.textBaseline = "middle"; x.fillText(ay.title, 0, 0); x.restore();
  x.save(); x.beginPath(); x.rect(L - 8, T - 8, W - L - R + 16, H - T - B + 16); x.clip();
  for (const m of o.marks || []) { x.strokeStyle = BUDGET_COLOR; x.lineWidth = 2; x.beginPath(); x.moveTo(X(m), T); x.lineTo(X(m), T + 9); x.stroke(); x.lineWidth = 1; }
  let n = 0;
  for (const s of o.series) {
    const ok = p => isFinite(p[0]) && isFinite(p[1]) && (!ax.log || p[0] > 0);
    if (s.line !== false) {
      x.strokeStyle = s.color; x.setLineDash(s.dash || []); x.lineWidth = s.width || 1.5; x.beginPath();
      let on = false;
      for (const p of s.pts) { if (!ok(p)) { on = false; continue; } if (on) x.lineTo(X(p[0]), Y(p[1])); else x.moveTo(X(p[0]), Y(p[1])); on = true; }
      x.stroke(); x.setLineDash([]); x.lineWidth = 1;
    }
    for (const p of s.pts) {
      if (!ok(p)) continue; n++;
      x.strokeStyle = s.color; x.lineWidth = 1.2;
      if (isFinite(p[2]) && p[2] > 0) { x.beginPath(); x.moveTo(X(p[0] - p[2]), Y(p[1])); x.lineTo(X(p[0] + p[2]), Y(p[1]));
        x.moveTo(X(p[0] - p[2]), Y(p[1]) - 4); x.lineTo(X(p[0] - p[2]), Y(p[1]) + 4); x.moveTo(X(p[0] + p[2]), Y(p[1]) - 4); x.lineTo(X(p[0] + p[2]), Y(p[1]) + 4); x.stroke(); }
      if (isFinite(p[3]) && p[3] > 0) { x.beginPath(); x.moveTo(X(p[0]), Y(p[1] - p[3])); x.lineTo(X(p[0]), Y(p[1] + p[3]));
        x.moveTo(X(p[0]) - 4, Y(p[1] - p[3])); x.lineTo(X(p[0]) + 4, Y(p[1] - p[3])); x.moveTo(X(p[0]) - 4, Y(p[1] + p[3])); x.lineTo(X(p[0]) + 4, Y(p[1] + p[3])); x.stroke(); }
      if (s.marker) drawMarker(x, s.marker, X(p[0]), Y(p[1]), s.size || 5, s.color);
    }
  }
  x.restore();
  return n;
}
function esc(v) { return String(v).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c])); }
// Thousands grouped with a thin space: 12 345 678.
function group(s) { return s.replace(/^(-?\d+)/, d => d.replace(/\B(?=(\d{3})+(?!\d))/g, "\u2009")); }
function fixed(v, d) { return v == null || !isFinite(v) ? "–" : group(Number(v).toFixed(d)); }
function watts(v) { return v == null || !isFinite(v) ? "–" : group(Number(v).toFixed(v >= 100 ? 0 : 1)) + " W"; }
function $(id) { return document.getElementById(id); }
function rows(t, rs) { $(t).innerHTML = rs.map(r => "<tr><th>" + r[0] + "</th><td>" + r[1] + "</td></tr>").join(""); }
function table(t, head, body, empty) {
  $(t).innerHTML = "<thead><tr>" + head.map(h => "<th>" + h + "</th>").join("") + "</tr></thead><tbody>" +
    (body.length ? body.map(r => "<tr>" + r.map(v => "<td>" + v + "</td>").join("") + "</tr>").join("")
                 : '<tr><td colspan="' + head.length + '" class="muted">' + empty + "</td></tr>") + "</tbody>";
}
function setStatus(text) { $("status").textContent = text; }

// ---- The live dashboard.
const q = new URLSearchParams(location.search);
const token = q.get("token");
const hdr = token ? {Authorization: "Bearer " + token} : {};
const SPANS = [[60, "1 min"], [900, "15 min"], [3600, "1 h"]];
let span = Number(q.get("span_s") || 900);
if (!(span >= 1 && span <= 3600)) span = 900;
let pts = [];  // {t, node, budget, mean, viol, fb, gpus: [{index, p, cap}], jobs: [{id, tok, knobs}]}
let last = null;  // the latest /v1/status
let jobPoints = 0;  // points the jobs-over-time plots drew (the status line)
function gpuColor(i) { return PALETTE[i % PALETTE.length]; }
function keep(p) {
  if (pts.length && p.t - pts[pts.length - 1].t < span / 1200) return;
  pts.push(p);
  while (pts.length && pts[0].t < p.t - span) pts.shift();
}
function fromStatus(s) {
  const w = (s.windows && s.windows[0]) || {}, n = (s.gpus || []).length;
  let budget = s.budget && s.budget.watts != null ? s.budget.watts : NaN;
  if (s.budget && s.budget.scope === "gpu") budget *= n;
  return {t: s.time_unix_s, node: s.node_power_w == null ? NaN : s.node_power_w, budget,
          mean: w.mean_w == null ? NaN : w.mean_w, viol: w.violations_total || 0, fb: s.fallback_reason || "",
          gpus: (s.gpus || []).map(g => ({index: g.index, p: g.power_w == null ? NaN : g.power_w, cap: g.cap_w == null ? NaN : g.cap_w})),
          jobs: (s.jobs || []).map(j => ({id: j.id, tok: j.tokens_total == null ? NaN : j.tokens_total, knobs: j.knobs || {}}))};
}
function fromHistory(h) {
  const out = [], nul = v => v == null ? NaN : v;
  (h.t_unix_s || []).forEach((t, i) => out.push({t, node: nul(h.node_power_w[i]), budget: nul(h.budget_w[i]),
    mean: nul(h.mean_w[i]), viol: h.violations_total[i] || 0, fb: h.fallback_reason[i] || "",
    gpus: (h.gpus || []).map(g => ({index: g.index, p: nul(g.power_w[i]), cap: nul(g.cap_w[i])})),
    jobs: (h.jobs || []).filter(j => j.tokens_total[i] != null).map(j => ({id: j.id, tok: nul(j.tokens_total[i]),
      knobs: Object.fromEntries(Object.entries(j.knobs || {}).filter(e => e[1][i] != null).map(e => [e[0], e[1][i]]))}))}));
  return out;
}
// A count in readable units for an axis: 3 significant digits with k, M, G.
function siAxis(v) {
  for (const [sc, pr] of [[1e9, " G"], [1e6, " M"], [1e3, " k"]]) if (Math.abs(v) >= sc) return Number((v / sc).toPrecision(3)) + pr;
  return String(Number(v.toPrecision(3)));
}
// Each registered job's progress (tokens, completed or not) and the knobs in force over the
// same span as the power plot; hidden while no job was registered. Returns the points drawn.
function drawJobs(t1, ext, ticks) {
  const ids = [];
  for (const p of pts) for (const j of p.jobs || []) if (!ids.includes(j.id)) ids.push(j.id);
  $("jobs-time-box").hidden = !ids.length;
  if (!ids.length) return 0;
  const at = (p, id) => (p.jobs || []).find(j => j.id === id) || {knobs: {}};
  let thi = 0, khi = 0;
  const kseries = [], knames = [];
  ids.forEach(id => {
    for (const p of pts) { const j = at(p, id); if (isFinite(j.tok)) thi = Math.max(thi, j.tok);
      for (const [k, v] of Object.entries(j.knobs)) { khi = Math.max(khi, v); if (!knames.some(e => e[0] === id && e[1] === k)) knames.push([id, k]); } }
  });
  const x = {lo: -ext, hi: 0, ticks, fmt: agoLabel, title: "time before now"};
  thi = niceHi(Math.max(thi * 1.05, 1), 5);
  let n = plot($("job-tokens"), {x, y: {lo: 0, hi: thi, ticks: linTicks(0, thi, 5), fmt: siAxis, title: "tokens (completed or not)"},
    series: ids.map((id, k) => ({pts: pts.map(p => [p.t - t1, at(p, id).tok]), color: gpuColor(k), width: 2}))});
  $("job-tokens-legend").innerHTML = ids.map((id, k) => "<span>" + swatch(gpuColor(k), {width: 2}) + esc(id) + " tokens</span>").join("");
  khi = niceHi(Math.max(khi * 1.1, 1), 5);
  knames.forEach(([id, k], i) => kseries.push({pts: pts.map(p => [p.t - t1, at(p, id).knobs[k] == null ? NaN : at(p, id).knobs[k]]),
    color: gpuColor(ids.indexOf(id)), dash: i % 2 ? [5, 3] : [], width: 2}));
  $("job-knobs").hidden = !knames.length; $("job-knobs-legend").hidden = !knames.length;
  if (knames.length) {
    n += plot($("job-knobs"), {x, y: {lo: 0, hi: khi, ticks: linTicks(0, khi, 5), fmt: v => String(v), title: "knob setting in force"}, series: kseries});
    $("job-knobs-legend").innerHTML = knames.map(([id, k], i) => "<span>" + swatch(gpuColor(ids.indexOf(id)), {dash: i % 2 ? [5, 3] : [], width: 2}) + esc(id) + " " + esc(k) + "</span>").join("");
  }
  return n;
}
function draw() {
  if (!pts.length) return 0;
  const t1 = pts[pts.length - 1].t, ext = Math.max(1, Math.min(span, t1 - pts[0].t));
  let hi = 0;
  for (const p of pts) { hi = Math.max(hi, p.node || 0, isFinite(p.budget) ? p.budget : 0); for (const g of p.gpus) hi = Math.max(hi, g.p || 0, isFinite(g.cap) ? g.cap : 0); }
  const yhi = niceHi(hi * 1.05, 5);
  const gidx = pts[pts.length - 1].gpus.map(g => g.index);
  const series = [];
  gidx.forEach((gi, k) => {
    const col = gpuColor(k), at = p => p.gpus.find(g => g.index === gi) || {};
    series.push({pts: pts.map(p => [p.t - t1, at(p).p]), color: col, width: 1.3});
    series.push({pts: pts.map(p => [p.t - t1, at(p).cap]), color: col, dash: [3, 3], width: 1.3});
  });
  series.push({pts: pts.map(p => [p.t - t1, p.node]), color: "#111", width: 2.2});
  series.push({pts: pts.map(p => [p.t - t1, p.mean]), color: "#666", dash: [2, 3], width: 2.2});
  series.push({pts: pts.map(p => [p.t - t1, p.budget]), color: BUDGET_COLOR, dash: [9, 5], width: 2.2});
  // Trailing mean over budget: shaded; a window judged over budget (violations_total grew): a tick on top.
  const bands = [], marks = [];
  let from = null;
  pts.forEach((p, i) => {
    const over = isFinite(p.mean) && isFinite(p.budget) && p.mean > p.budget;
    if (over && from === null) from = p.t - t1;
    if (!over && from !== null) { bands.push([from, p.t - t1]); from = null; }
    if (i && p.viol > pts[i - 1].viol) marks.push(p.t - t1);
  });
  if (from !== null) bands.push([from, 0]);
  const ticks = timeTicks(ext);
  plot($("plot"), {x: {lo: -ext, hi: 0, ticks, fmt: agoLabel, title: "time before now (latest sample " + new Date(t1 * 1000).toLocaleTimeString() + ")"},
    y: {lo: 0, hi: yhi, ticks: linTicks(0, yhi, 5), fmt: v => group(String(v)) + " W", title: "power (W)"}, series, bands, marks});
  let lg = '<span>' + swatch("#111", {width: 2.2}) + "node</span>" +
    '<span>' + swatch("#666", {dash: [2, 3], width: 2.2}) + "trailing " + ((last && last.windows && last.windows[0]) ? last.windows[0].window_s + " s" : "window") + " mean</span>" +
    '<span>' + swatch(BUDGET_COLOR, {dash: [9, 5], width: 2.2}) + "budget</span>" +
    '<span>' + swatch("", {band: "rgba(214,39,40,0.2)"}) + "mean over budget</span>" +
    '<span>' + swatch(BUDGET_COLOR, {width: 3}) + "window judged over budget (tick on top)</span>";
  gidx.forEach((gi, k) => { lg += "<span>" + swatch(gpuColor(k), {width: 1.3}) + "GPU " + gi + " power</span><span>" +
    swatch(gpuColor(k), {dash: [3, 3], width: 1.3}) + "GPU " + gi + " cap</span>"; });
  $("legend").innerHTML = lg;
  $("shown").textContent = ext < span - 1 ? "showing the last " + Math.ceil(ext) + " s: the agent has no older samples" : "";
  jobPoints = drawJobs(t1, ext, ticks);
  return pts.length;
}
const FALLBACK_WORDS = {
  no_actuator: s => "the controller " + s.controller + " turns job knobs, but no registered job exposes one of them, so it cannot act; " +
    "the safe caps are in force until such a job registers (POST /v1/jobs with its knobs)",
  stale_telemetry: () => "telemetry reads are failing or stale, so the controller cannot see current power; the safe caps are in force until fresh readings return",
  controller_error: () => "the controller raised an error; the safe caps and each job's default knobs are in force until it runs cleanly again",
  job_channel_silent: () => "a registered job stopped reporting progress; the safe caps and its default knobs are in force until it reports again or is removed",
};
function fallbackText(s) {
  const r = s.fallback_reason;
  if (!r) return s.read_only ? "none (read-only agent: it writes no cap or knob)" : "none: the controller's commands are in force";
  return (FALLBACK_WORDS[r] ? FALLBACK_WORDS[r](s) : "safe setting in force") + " [" + r + "]";
}
function knobText(k) {
  const e = Object.entries(k || {});
  return e.length ? e.map(([n, v]) => esc(n) + " = " + (typeof v === "number" ? Math.round(v) : esc(v))).join(", ") : '<span class="muted">none</span>';
}
function side(s) {
  last = s;
  $("host").textContent = s.hostname ? "— " + s.hostname : "";
  const w = (s.windows && s.windows[0]) || {}, b = s.budget || {}, n = (s.gpus || []).length;
  const perNode = b.watts != null && b.scope === "gpu" ? " (" + watts(b.watts * n) + " for the node)" : "";
  const budget = b.watts == null ? '<span class="muted">no budget</span>' :
    watts(b.watts) + " per " + esc(b.scope || "node") + perNode + " over " + fixed(b.window_s, 0) + " s windows, set by <b>" + esc(b.source || "?") + "</b>";
  const over = w.mean_w != null && b.watts != null && w.mean_w > (b.scope === "gpu" ? b.watts * n : b.watts);
  $("cards").innerHTML = [["node power", watts(s.node_power_w)], ["budget", budget],
    ["trailing " + fixed(w.window_s, 0) + " s mean", '<span class="' + (over ? "bad" : "good") + '">' + watts(w.mean_w) + (over ? " — over budget" : "") + "</span>"],
    ["windows over budget", fixed(w.violations_total, 0)], ["controller", esc(s.controller || "") + (s.read_only ? " (read-only)" : "")],
    ["fallback", '<span class="' + (s.fallback_reason ? "bad" : "good") + '">' + esc(fallbackText(s)) + "</span>"]]
    .map(c => '<div class="card"><div class="k">' + c[0] + '</div><div class="v">' + c[1] + "</div></div>").join("");
  const sim = (s.backend || "").startsWith("sim:");
  const simJobs = (s.plant_jobs || []).map(j => esc(j.name) + " (" + fixed(j.tokens_total, 0) + " tokens, " + fixed(j.steps_total, 0) + " steps)").join(", ");
  $("simnote").hidden = !sim;
  $("simnote").innerHTML = sim ? "<b>SIMULATED node</b> (" + esc(s.backend) + "): the GPUs and the job " + simJobs +
    " are the simulator's. A job that registers stands for the simulated job in its position: the controller's knobs reach the simulated job only through it, " +
    "and the tokens and steps shown for it are the simulated job's, not the ones its client reports." : "";
  table("jobs", ["job", "name", "kind", "phase", "tokens", "steps", "knobs", "PFI", "last report"],
    (s.jobs || []).map(j => [esc(j.id), esc(j.name || ""), esc(j.kind || ""), esc(j.phase), fixed(j.tokens_total, 0), fixed(j.steps_total, 0),
      knobText(j.knobs), j.pfi == null ? "–" : fixed(j.pfi, 2), j.last_report_age_s == null ? "–" : fixed(j.last_report_age_s, 1) + " s ago"]),
    sim ? "no jobs registered: the simulated job runs, and its knobs are out of the controller's reach until a job registers" :
    "no jobs registered: the node is controlled as one job without knobs");
  table("gpus", ["GPU", "model", "power", "cap", "cap range", "SM clock", "temp"],
    (s.gpus || []).map(g => [String(g.index), esc(g.name || ""), watts(g.power_w), watts(g.cap_w),
      watts(g.cap_min_w) + " – " + watts(g.cap_max_w), g.sm_clock_mhz == null ? "–" : fixed(g.sm_clock_mhz, 0) + " MHz", g.temp_c == null ? "–" : fixed(g.temp_c, 0) + " °C"]), "no GPUs");
  const fl = [];
  if (b.source === "coordinator") fl.push(["node share", watts(b.watts) + " per " + esc(b.scope) + ", from the fleet coordinator"]);
  const f = s.fleet || {};
  for (const [k, v] of Object.entries(f)) if (v != null && typeof v !== "object") fl.push([esc(k.replace(/_/g, " ")), esc(typeof v === "number" ? Number(v.toPrecision(6)) : v)]);
  const ge = f.grid_event || ((b.schedule || []).length > 1 ? b.schedule : null);
  if (ge && typeof ge === "object") {
    const list = Array.isArray(ge) ? ge : [ge];
    const at = e => e.after_s == null ? "" : b.set_unix_s ? " from " + new Date((b.set_unix_s + e.after_s) * 1000).toLocaleTimeString() : " from +" + fixed(e.after_s, 0) + " s";
    fl.push(["grid event (budget schedule, set by " + esc(b.source || "?") + ")", list.map(e => e.watts != null ? watts(e.watts) + at(e) : esc(JSON.stringify(e))).join(" → ")]);
  }
  $("fleet-box").hidden = !fl.length;
  rows("fleet", fl);
  rows("info", [["fallbacks so far", esc(Object.entries(s.fallbacks_total || {}).map(e => e[0].replace(/_/g, " ") + " " + e[1]).join(", ") || "none")],
    ["limiter actions", esc(Object.entries(s.limiter_actions_total || {}).map(e => e[0].replace(/_/g, " ") + " " + e[1]).join(", ") || "none")],
    ["control loop", fixed((s.loop || {}).period_s, 2) + " s period, " + fixed((s.loop || {}).ticks_total, 0) + " ticks, " + fixed((s.loop || {}).late_ticks_total, 0) + " late"]]);
}
function update(s) { keep(fromStatus(s)); side(s); const n = draw(); setStatus("ok points=" + n + " span_s=" + span + " job_points=" + jobPoints + (s.fallback_reason ? " fallback=" + s.fallback_reason : "")); }
async function get(path) { const r = await fetch(path, {headers: hdr}); if (!r.ok) throw new Error(path + ": HTTP " + r.status); return r.json(); }
async function loadHistory() {
  try { pts = fromHistory(await get("/v1/history?span_s=" + span + "&max_points=1200")); }
  catch (e) { pts = []; $("shown").textContent = "no history (" + e.message + ")"; }
}
function spanButtons() {
  $("spans").innerHTML = SPANS.map(([s, l]) => '<button type="button" data-span="' + s + '"' + (s === span ? ' class="on"' : "") + ">" + l + "</button>").join("");
  for (const el of $("spans").querySelectorAll("button")) el.onclick = async () => {
    span = Number(el.dataset.span); spanButtons(); await loadHistory(); if (last) update(last);
  };
}
async function dashboard() {
  spanButtons();
  await loadHistory();
  update(await get("/v1/status"));
  if (q.get("static")) {  // headless tests: a few polls, no open stream
    for (let i = 1; i < Number(q.get("samples") || 3); i++) { await new Promise(r => setTimeout(r, 200)); update(await get("/v1/status")); }
    return;
  }
  const r = await fetch("/v1/stream", {headers: hdr});
  const rd = r.body.getReader(), dec = new TextDecoder(); let buf = "";
  for (;;) { const {value, done} = await rd.read(); if (done) break; buf += dec.decode(value, {stream: true});
    let i; while ((i = buf.indexOf("\n\n")) >= 0) { const ev = buf.slice(0, i); buf = buf.slice(i + 2);
      for (const l of ev.split("\n")) if (l.startsWith("data:")) update(JSON.parse(l.slice(5))); } }
}

// ---- The report (eval --html, demo's report.html): the report JSON embedded in the page.
function statCell(s, scale, d) {
  if (!s || s.mean == null) return "–";
  return fixed(s.mean * scale, d) + (s.ci95 == null ? "" : " ±" + fixed(s.ci95 * scale, d));
}
// A count in the CLI's readable units (core/format.hpp format_si_pm): 3 significant digits
// with the mean's prefix (k, M, G, T), the CI in the same prefix and decimals: "1.11G ±0.47G".
function siPm(s) {
  if (!s || s.mean == null || !isFinite(s.mean)) return "–";
  const a = Math.abs(s.mean), sig = 3;
  let scale = 1, pre = "", dec = 0;
  for (const [sc, pr] of [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"], [1, ""]]) {
    if (a >= sc * (1 - 0.5 * Math.pow(10, 1 - sig)) || sc === 1) {
      const x = a / sc;
      let d = x >= 1 ? Math.floor(Math.log10(x)) + 1 : 1;
      if (Math.pow(10, d) - x <= 0.5 * Math.pow(10, d - sig)) d++;
      dec = sc === 1 && Math.floor(s.mean) === s.mean ? 0 : Math.max(0, sig - d); scale = sc; pre = pr; break;
    }
  }
  return (s.mean / scale).toFixed(dec) + pre + (s.ci95 == null || !isFinite(s.ci95) ? "" : " ±" + (s.ci95 / scale).toFixed(dec) + pre);
}
function ratio(o, k) { return o == null || o[k] == null ? "–" : Number(o[k]).toFixed(3); }
function report(r) {
  document.title = "flexwatt report — " + (r.scenario || "");
  $("title").firstChild.textContent = "flexwatt report ";
  $("host").textContent = "— " + (r.scenario || "") + (r.simulated ? " (SIMULATED)" : "");
  $("spans").hidden = true; $("dash").hidden = true; $("rep").hidden = false;
  const ks = r.controllers || [];
  const name = k => k.name || k.controller || "?";
  // Legend names a reader can parse: the spec stays in the table and in the entry's title.
  const nice = spec => {
    const [kind, opts = ""] = spec.split(/:(.*)/s);
    if (kind === "ppo") return "PPO " + opts.replace(/^.*\//, "").replace(/\.json$/, "");
    const knob = (opts.match(/(?:^|,)knob=([^,]*)/) || [])[1];
    const rest = opts.split(",").filter(o => o && !o.startsWith("knob=")).join(", ");
    const what = [knob ? knob.replace(/\+/g, " + ") : "", rest].filter(Boolean).join("; ");
    const label = {static: "fixed", lookahead: "look-ahead reference", uncontrolled: "uncontrolled"}[kind] || kind;
    return what ? label + " (" + what + ")" : (kind === "static" ? "fixed (joint search)" : label);
  };
  // Trade-off: completed-step tokens against the offset-averaged budget-window violation rate.
  const tp = ks.map(k => { const v = (k.violation_rate_offsets || {}).rate || {}, t = (k.progress || {}).completed_step_tokens || {};
    return [v.mean == null ? NaN : 100 * v.mean, t.mean == null ? NaN : t.mean, v.ci95 == null ? 0 : 100 * v.ci95, t.ci95 || 0]; });
  // Rows with the same figures (two specs of one setting) are drawn once, named together.
  const first = ks.map((k, i) => { const key = JSON.stringify([tp[i], k.energy_j, k.windows_curve]); return ks.findIndex((q, j) => JSON.stringify([tp[j], q.energy_j, q.windows_curve]) === key); });
  const legendName = i => ks.map((k, j) => first[j] === i ? nice(name(k)) : null).filter(Boolean).join(" = ");
  const shown = i => first[i] === i;
  // Colours and markers by the order of the rows drawn, so no two drawn rows share them.
  const rank = i => first.slice(0, i).filter((f, j) => f === j).length;
  const style = i => ({color: PALETTE[rank(i) % PALETTE.length], marker: MARKERS[rank(i) % MARKERS.length]});
  const bw = ((ks[0] || {}).violation_rate_offsets || {}).window_s || 30;
  let xhi = 0, ylo = Infinity, yhi = 0;
  for (const p of tp) if (isFinite(p[0]) && isFinite(p[1])) { xhi = Math.max(xhi, p[0] + p[2]); ylo = Math.min(ylo, p[1] - p[3]); yhi = Math.max(yhi, p[1] + p[3]); }
  xhi = niceHi(Math.max(xhi * 1.08, 1), 5);
  const yst = niceStep((yhi - ylo) * 1.2 || Math.max(1, yhi * 0.1), 5);
  const y0 = Math.max(0, Math.floor((ylo - 0.1 * (yhi - ylo)) / yst) * yst), y1 = Math.ceil((yhi + 0.1 * (yhi - ylo)) / yst) * yst || 1;
  const tokFmt = v => v >= 1e9 ? Number((v / 1e9).toPrecision(4)) + " G" : v >= 1e6 ? Number((v / 1e6).toPrecision(4)) + " M" : v >= 1e3 ? Number((v / 1e3).toPrecision(4)) + " k" : String(v);
  let n = plot($("trade"), {x: {lo: -0.03 * xhi, hi: xhi, ticks: linTicks(0, xhi, 6), fmt: v => v + " %", title: bw + " s budget-window violations, mean over window offsets (% of windows; bars: 95 % CI)"},
    y: {lo: y0 - 0.03 * (y1 - y0), hi: y1, ticks: linTicks(y0, y1, 5), fmt: tokFmt, title: "completed-step tokens per episode"},
    series: ks.map((k, i) => ({pts: shown(i) ? [tp[i]] : [], line: false, size: 6, ...style(i)}))});
  // The windows curve: aligned violation rate against window length.
  let wlo = Infinity, whi = 0, vhi = 0;
  for (const k of ks) { const cv = k.windows_curve || {};
    (cv.windows_s || []).forEach((w, j) => { const v = ((cv.violation_rate || [])[j] || {}).mean; if (v == null) return; wlo = Math.min(wlo, w); whi = Math.max(whi, w); vhi = Math.max(vhi, 100 * v); }); }
  if (!(whi > wlo)) { wlo = 1; whi = 300; }
  vhi = niceHi(Math.max(vhi * 1.05, 1), 5);
  n += plot($("windows"), {x: {lo: wlo, hi: whi, log: true, ticks: logTicks(wlo, whi), fmt: v => (v >= 60 && v % 60 === 0 ? v / 60 + " min" : v + " s"), title: "judging window length (log scale)"},
    y: {lo: 0, hi: vhi, ticks: linTicks(0, vhi, 5), fmt: v => v + " %", title: "windows over budget (%)"},
    series: ks.map((k, i) => { const cv = k.windows_curve || {};
      return {pts: !shown(i) ? [] : (cv.windows_s || []).map((w, j) => { const v = (cv.violation_rate || [])[j]; return [w, v && v.mean != null ? 100 * v.mean : NaN, 0, v && v.ci95 != null ? 100 * v.ci95 : 0]; }), width: 1.8, size: 4.5, ...style(i)}; })});
  const tag = i => '<span data-color="' + style(i).color + '" data-marker="' + style(i).marker + '">';
  const tagT = (k, i) => tag(i).replace("<span ", '<span title="' + esc(ks.filter((q, j) => first[j] === i).map(name).join(" = ")) + '" ');
  $("rep-legend").innerHTML = ks.map((k, i) => shown(i) ? tagT(k, i) + swatch(style(i).color, {marker: style(i).marker, line: false}) + esc(legendName(i)) + "</span>" : "").join("");
  $("win-legend").innerHTML = ks.map((k, i) => shown(i) ? tagT(k, i) + swatch(style(i).color, {marker: style(i).marker, width: 1.8}) + esc(legendName(i)) + "</span>" : "").join("");
  if (r.comparison) {  // demo's report: it writes power.svg beside report.html
    $("power-box").innerHTML = "<h2>Power over time against the budget</h2><p class=\"note\">The first seed of each controller: " +
      '<a href="power.svg">power.svg</a> (written beside this report).</p><img class="power" src="power.svg" alt="node power over time against the budget">';
    $("power-box").hidden = false;
  }
  rows("rep-info", [["scenario", esc(r.scenario || "")], ["simulated", r.simulated ? "yes: every figure comes from the simulator" : "no"],
    ["seeds", esc((r.seeds || []).join(" "))], ["episode", fixed(r.duration_s, 0) + " s"], ["reference", esc(r.reference == null ? "–" : r.reference)],
    ["look-ahead", esc(r.lookahead == null ? "–" : r.lookahead)]].concat(r.flexwatt_version ? [["version", esc(r.flexwatt_version)]] : []));
  // The CLI's setup GPU-h cell (eval_table.cpp): "-" without a setup cost, "in run" for Zeus's
  // profiling, else GPU-hours (2 decimals under 10).
  const setup = n => { const c = n && n.setup_cost; if (!c) return "-"; const h = Number(c.gpu_h || 0);
    if (h === 0 && String(c.what || "").startsWith("profiling")) return "in run"; return h < 10 ? h.toFixed(2) : h.toFixed(0); };
  table("rep-table", ["controller", "step tokens", "steps/h", "tok/step", "tokens/MWh", "viol win %", "slide win %", "steps viol %", "tok/ref", "tpm/ref", "tok/look", "limiter", "setup GPU-h"],
    ks.map((k, i) => { const p = k.progress || {};
      return [swatch(style(first[i]).color, {marker: style(first[i]).marker, line: false}) + esc(name(k)).replace(/([,+])/g, "$1<wbr>"), statCell(p.completed_step_tokens, 1, 0),
        p.steps_per_hour && p.steps_per_hour.mean != null ? Number(p.steps_per_hour.mean).toFixed(1) : "–",
        p.tokens_per_step && p.tokens_per_step.mean != null ? fixed(p.tokens_per_step.mean, 0) : "–",
        siPm(k.tokens_per_mwh), statCell((k.violation_rate_offsets || {}).rate, 100, 2), statCell((k.violation_rate_sliding || {}).rate, 100, 2),
        statCell(k.steps_violating, 100, 1), ratio(k.vs_reference, "completed_step_tokens"), ratio(k.vs_reference, "tokens_per_mwh"),
        ratio(k.vs_lookahead, "completed_step_tokens"), k.limiter_interventions && k.limiter_interventions.mean != null ? fixed(k.limiter_interventions.mean, 0) : "–",
        setup(k.notes)]; }),
    "no controllers");
  setStatus("ok points=" + n + " report controllers=" + ks.length);
}
// ---- The caps report (caps --html): the comparison JSON with kind "caps".
function pct2(v, signed) { return v == null || !isFinite(v) ? "–" : (signed && v >= 0 ? "+" : "") + (100 * v).toFixed(2); }
function reportHead(kind, r, what) {
  document.title = "flexwatt " + kind + " report — " + what;
  $("title").firstChild.textContent = "flexwatt " + kind + " report ";
  $("host").textContent = "— " + what + (r.simulated ? " (SIMULATED)" : "");
  $("spans").hidden = true; $("dash").hidden = true; $(kind).hidden = false;
}
function capsReport(r) {
  reportHead("caps", r, r.scenario || "");
  const arms = r.arms || [];
  const style = i => ({color: PALETTE[i % PALETTE.length], marker: MARKERS[i % MARKERS.length]});
  const b = r.best_at_low_loss;
  rows("caps-info", [["scenario", esc(r.scenario || "")], ["simulated", r.simulated ? "yes: every figure comes from the simulator" : "no"],
    ["seeds", esc((r.seeds || []).join(" "))]].concat(b ? [["best at ≤ " + (100 * b.max_throughput_lost).toFixed(1) + " % lost",
    esc(b.arm) + ": " + pct2(b.energy_saved) + " % saved at " + pct2(b.throughput_lost) + " % lost; frontiers there: uniform " +
    pct2(b.uniform_frontier) + " %, per-GPU " + pct2(b.per_gpu_frontier) + " %"]] : []));
  let xhi = 0, ylo = 0, yhi = 0;
  for (const a of arms) { xhi = Math.max(xhi, 100 * (a.throughput_lost + (a.throughput_lost_sd || 0)));
    yhi = Math.max(yhi, 100 * (a.energy_saved + (a.energy_saved_sd || 0))); ylo = Math.min(ylo, 100 * (a.energy_saved - (a.energy_saved_sd || 0))); }
  xhi = niceHi(Math.max(xhi * 1.05, 1), 6); const yst = niceStep((yhi - ylo) * 1.1 || 1, 5);
  const y0 = Math.floor(ylo / yst) * yst, y1 = Math.ceil(yhi * 1.05 / yst) * yst || yst;
  const frontier = fam => { const p = arms.filter(a => a.family === "uncapped" || (a.family === fam && (fam === "uniform" ? a.on_uniform_frontier : a.on_per_gpu_frontier)))
    .map(a => [100 * a.throughput_lost, 100 * a.energy_saved, 0, 0]); p.sort((u, v) => u[0] - v[0]); return p; };
  const series = [{pts: frontier("uniform"), color: "#555", dash: [6, 4], width: 1.4},
    {pts: frontier("per-gpu"), color: "#999", dash: [2, 3], width: 1.4}]
    .concat(arms.map((a, i) => ({pts: [[100 * a.throughput_lost, 100 * a.energy_saved, 100 * (a.throughput_lost_sd || 0), 100 * (a.energy_saved_sd || 0)]], line: false, size: 6, ...style(i)})));
  const n = plot($("caps-trade"), {x: {lo: -0.03 * xhi, hi: xhi, ticks: linTicks(0, xhi, 6), fmt: v => v + " %", title: "throughput lost (% of the uncapped run's tokens)"},
    y: {lo: y0, hi: y1, ticks: linTicks(y0, y1, 5), fmt: v => v + " %", title: "energy saved per token (%)"}, series});
  const tag = i => '<span data-color="' + style(i).color + '" data-marker="' + style(i).marker + '">';
  $("caps-legend").innerHTML = "<span>" + swatch("#555", {dash: [6, 4]}) + "uniform frontier</span><span>" + swatch("#999", {dash: [2, 3]}) + "per-GPU frontier</span>" +
    arms.map((a, i) => tag(i) + swatch(style(i).color, {marker: style(i).marker, line: false}) + esc(a.name) + "</span>").join("");
  table("caps-table", ["arm", "saved %", "lost %", "EDP %", "same-time%", "vs unif pt", "vs pgpu pt", "cost"],
    arms.map((a, i) => [swatch(style(i).color, {marker: style(i).marker, line: false}) + esc(a.name),
      pct2(a.energy_saved) + (a.on_uniform_frontier || a.on_per_gpu_frontier ? "*" : ""), pct2(a.throughput_lost), pct2(a.edp_change),
      pct2(a.energy_saved_same_time), pct2(a.margin_vs_uniform, true), pct2(a.margin_vs_per_gpu, true), esc(a.cost || "-")]), "no arms");
  setStatus("ok points=" + n + " caps arms=" + arms.length);
}
// ---- The dr report (dr replay --html): the replay JSON with kind "dr" and its 1-minute series.
function drReport(r) {
  reportHead("dr", r, (r.event || "") + ", method " + (r.method || ""));
  rows("dr-info", [["event", esc(r.event || "")], ["simulated", r.simulated ? "yes: the jobs' measured cap curves, simulated" : "no"],
    ["method, seed", esc(r.method) + ", " + esc(r.seed)], ["baseline", watts(r.baseline_w) + "; tolerance " + (100 * r.tolerance_frac).toFixed(1) + " % (" + watts(r.tolerance_w) + ")"],
    ["minutes above target", fixed(r.minutes_above_target, 2) + " (mean over window offsets; aligned " + fixed(r.minutes_above_target_aligned, 0) + ", sliding " + fixed(r.minutes_above_target_sliding, 2) + ")"],
    ["mean over-cut", fixed(100 * r.mean_overcut_frac, 2) + " % of baseline; hold power/target " + fixed(r.hold_power_over_target, 3)],
    ["weighted performance", fixed(r.weighted_performance, 4) + " (weights tier_min / sum)"]]);
  const sr = r.series || {}, t = sr.minute_s || [], pw = sr.minute_power_w || [], tg = sr.minute_target_w || [];
  const th = t.map(v => v / 3600);
  let lo = Infinity, hi = 0; for (const v of pw.concat(tg)) if (isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  if (!(hi > 0)) { lo = 0; hi = 1; }
  const st = niceStep((hi - lo) / 1000 * 1.2 || 1, 5), k0 = Math.floor(lo / 1000 * 0.98 / st) * st, k1 = Math.ceil(hi / 1000 * 1.02 / st) * st;
  const xh = th.length ? th[th.length - 1] : 1;
  let n = plot($("dr-power"), {x: {lo: 0, hi: xh, ticks: linTicks(0, xh, 8), fmt: v => Number(v.toFixed(2)) + " h", title: "time since the replay's start (h)"},
    y: {lo: k0, hi: k1, ticks: linTicks(k0, k1, 5), fmt: v => v + " kW", title: "site power (kW, 1-minute means)"},
    series: [{pts: th.map((x, i) => [x, tg[i] / 1000]), color: BUDGET_COLOR, dash: [6, 4], width: 1.8},
             {pts: th.map((x, i) => [x, pw[i] / 1000]), color: PALETTE[0], width: 1.5}]});
  $("dr-legend").innerHTML = "<span>" + swatch(PALETTE[0], {}) + "site power</span><span>" + swatch(BUDGET_COLOR, {dash: [6, 4]}) + "target</span>";
  const jobs = r.per_job || [];
  const style = i => ({color: PALETTE[i % PALETTE.length], marker: MARKERS[i % MARKERS.length]});
  n += plot($("dr-trade"), {x: {lo: 0, hi: 1.05, ticks: linTicks(0, 1, 5), fmt: v => v.toFixed(1), title: "tier minimum (share of uncut throughput)"},
    y: {lo: 0, hi: 1.05, ticks: linTicks(0, 1, 5), fmt: v => v.toFixed(1), title: "performance over the event"},
    series: [{pts: [[0, 0], [1.05, 1.05]], color: "#999", dash: [3, 3], width: 1}].concat(jobs.map((j, i) => ({pts: [[j.tier_min, j.performance, 0, 0]], line: false, size: 6, ...style(i)})))});
  $("dr-trade-legend").innerHTML = jobs.map((j, i) => '<span data-color="' + style(i).color + '" data-marker="' + style(i).marker + '">' + swatch(style(i).color, {marker: style(i).marker, line: false}) + esc(j.name) + "</span>").join("");
  table("dr-jobs", ["job", "tier_min", "performance", "hold_perf", "paused_s"],
    jobs.map((j, i) => [swatch(style(i).color, {marker: style(i).marker, line: false}) + esc(j.name) + (j.performance < j.tier_min ? ' <span class="bad">BELOW TIER</span>' : ""),
      fixed(j.tier_min, 3), fixed(j.performance, 3), fixed(j.hold_performance, 3), fixed(j.paused_s, 0)]), "no jobs");
  table("dr-steps", ["step at", "depth", "ramp down"], (r.steps || []).map(s => [fixed(s.start_s, 0) + " s", fixed(s.depth, 3), fixed(s.ramp_down_s, 0) + " s"]), "no steps");
  setStatus("ok points=" + n + " dr jobs=" + jobs.length);
}
// ---- The coordinator's site view (GET /site): the site's state embedded with kind "site".
function utc(t) { return t == null || !isFinite(t) ? "–" : new Date(t * 1000).toISOString().replace(".000Z", "Z"); }
function siteReport(r) {
  reportHead("site", r, r.site || "");
  const card = (k, v) => '<div class="card"><div class="k">' + k + '</div><div class="v">' + v + "</div></div>";
  const t = r.target;
  $("site-cards").innerHTML = card("coordinator", r.leader ? "leader" : '<span class="bad">not the leader (its split is stale)</span>') +
    card("site budget", watts(r.site_w)) + card("effective target (after the grid)", watts(r.effective_w)) +
    card("calculated load", watts(r.calculated_load_w) + (r.compliant ? ' <span class="good">within</span>' : ' <span class="bad">over</span>')) +
    card("held for departed nodes", watts(r.held_w)) + card("ramp", esc(r.ramp_state || "–")) +
    card("grid event in force", t ? (t.value_w == null ? "cancel" : watts(t.value_w)) + " until " + utc(t.end_unix_s) : "none");
  const nodes = r.nodes || [];
  let hi = 0; for (const n of nodes) hi = Math.max(hi, n.watts || 0, n.safe_w || 0);
  hi = niceHi(Math.max(hi * 1.1, 1), 5);
  const pts = f => nodes.map((n, i) => [i + 1, n[f] == null ? NaN : n[f], 0, 0]);
  const np = plot($("site-shares"), {x: {lo: 0.5, hi: nodes.length + 0.5, ticks: nodes.map((n, i) => i + 1), fmt: v => (nodes[v - 1] || {}).node || "", title: "node"},
    y: {lo: 0, hi: hi, ticks: linTicks(0, hi, 5), fmt: v => group(String(v)), title: "node GPU budget (W)"},
    series: [{pts: pts("watts"), line: false, marker: "circle", size: 6, color: PALETTE[0]},
             {pts: pts("safe_w"), line: false, marker: "x", size: 5, color: "#777"}]});
  $("site-legend").innerHTML = "<span>" + swatch(PALETTE[0], {marker: "circle", line: false}) + "share</span><span>" + swatch("#777", {marker: "x", line: false}) + "safe share</span>";
  table("site-nodes", ["node", "share", "safe", "reserve"], nodes.map(n => [esc(n.node), watts(n.watts), watts(n.safe_w), watts(n.reserve_w)])
    .concat((r.held || []).map(h => [esc(h) + ' <span class="muted">(held)</span>', "–", "–", "–"])), "no live nodes");
  table("site-events", ["start (UTC)", "end (UTC)", "target", "ramp", "best effort", "id"],
    (r.events || []).map(e => [utc(e.start_unix_s), utc(e.end_unix_s), e.value_w == null ? "cancel" : watts(e.value_w),
      e.ramp_w_per_s ? fixed(e.ramp_w_per_s, 0) + " W/s" : "step", e.best_effort ? "yes" : "no", esc(e.correlation_id || "")]), "no grid events");
  setStatus("ok points=" + np + " site nodes=" + nodes.length + " events=" + (r.events || []).length);
  if (!q.get("static")) setTimeout(() => location.reload(), 5000);
}
const embedded = $("report");
if (embedded) {
  try { const r = JSON.parse(embedded.textContent); if (r.kind === "caps") capsReport(r); else if (r.kind === "dr") drReport(r); else if (r.kind === "site") siteReport(r); else report(r); } catch (e) { setStatus("error: " + e.message); $("err").textContent = "could not read the report: " + e.message; }
} else {
  dashboard().catch(e => { setStatus("error: " + e.message); $("err").textContent = "cannot reach the agent: " + e.message; });
}
</script></body></html>
)HTML";
  return kPage;
}

std::string report_html(const nlohmann::json& report) {
  const std::string_view page = dashboard_html();
  std::string data = report.dump();
  // Inside <script> no "</script>" may appear: every '<' (only in strings) as its JSON escape.
  std::string safe;
  safe.reserve(data.size());
  for (char ch : data) {
    if (ch == '<') {
      safe += "\\u003c";
    } else {
      safe += ch;
    }
  }
  const std::string_view anchor = "<script>\n\"use strict\";";
  const size_t at = page.find(anchor);
  std::string out(page.substr(0, at));
  out += "<script id=\"report\" type=\"application/json\">" + safe + "</script>\n";
  out += page.substr(at);
  // The title says what the file is.
  const std::string_view title = "<title>flexwatt agent</title>";
  const size_t t = out.find(title);
  if (t != std::string::npos) out.replace(t, title.size(), "<title>flexwatt report</title>");
  return out;
}

}  // namespace fw::report
