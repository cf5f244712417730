#include "report/html_page.hpp"

#include <string>

namespace fw::report {

std::string_view dashboard_html() {
  static constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>flexwatt agent</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px system-ui,sans-serif;margin:16px;color:#222;background:#fafafa}
h1{font-size:18px;margin:0 0 8px}#wrap{display:flex;gap:16px;flex-wrap:wrap}
canvas{background:#fff;border:1px solid #ccc}#side{min-width:260px}
table{border-collapse:collapse}td,th{padding:2px 8px;text-align:left;border-bottom:1px solid #eee}
.fb{color:#b00;font-weight:bold}.ok{color:#070}#legend span{margin-right:12px}
</style></head><body>
<h1>flexwatt agent <span id="host"></span></h1>
<div id="status">loading</div>
<div id="wrap"><div><canvas id="plot" width="800" height="320"></canvas>
<div id="legend"></div></div>
<div id="side"><table id="info"></table><h3 id="jobs-title">Jobs</h3><table id="jobs"></table></div></div>
<script>
"use strict";
const q = new URLSearchParams(location.search);
const token = q.get("token");
const hdr = token ? {Authorization: "Bearer " + token} : {};
const span = Number(q.get("span_s") || 120);
const pts = [];  // {t, node, gpus[], budget, mean}
const colors = ["#1f77b4","#ff7f0e","#2ca02c","#9467bd","#8c564b","#e377c2","#7f7f7f","#bcbd22"];
function add(s) {
  const node = s.node_power_w == null ? NaN : s.node_power_w;
  const w = (s.windows && s.windows[0]) || {};
  const n = (s.gpus || []).length;
  let budget = s.budget && s.budget.watts != null ? s.budget.watts : NaN;
  if (s.budget && s.budget.scope === "gpu") budget *= n;
  pts.push({t: s.time_unix_s, node, gpus: (s.gpus || []).map(g => g.power_w == null ? NaN : g.power_w),
            budget, mean: w.mean_w == null ? NaN : w.mean_w});
  while (pts.length && pts[0].t < s.time_unix_s - span) pts.shift();
  draw(); side(s);
}
function draw() {
  const c = document.getElementById("plot"), x = c.getContext("2d");
  const W = c.width, H = c.height, L = 56, B = 24, T = 10, R = 10;
  x.clearRect(0, 0, W, H);
  if (!pts.length) return;
  let hi = 0;
  for (const p of pts) hi = Math.max(hi, p.node || 0, p.budget || 0, ...p.gpus.filter(isFinite));
  hi = hi * 1.1 || 1;
  // The x axis covers the data, up to span_s: a fresh page fills its width at once.
  const t1 = pts[pts.length - 1].t, sp = Math.min(span, Math.max(1e-3, t1 - pts[0].t)), t0 = t1 - sp;
  const X = t => L + (W - L - R) * (t - t0) / sp, Y = v => T + (H - T - B) * (1 - v / hi);
  x.strokeStyle = "#ddd"; x.fillStyle = "#555"; x.font = "11px sans-serif";
  for (let i = 0; i <= 4; i++) {
    const v = hi * i / 4; x.beginPath(); x.moveTo(L, Y(v)); x.lineTo(W - R, Y(v)); x.stroke();
    x.fillText(v.toFixed(0) + " W", 4, Y(v) + 4);
  }
  x.fillText("-" + sp.toFixed(sp < 10 ? 1 : 0) + " s", L, H - 6); x.fillText("now", W - R - 24, H - 6);
  const line = (get, color, dash, width) => {
    x.strokeStyle = color; x.setLineDash(dash); x.lineWidth = width; x.beginPath();
    let on = false;
    for (const p of pts) { const v = get(p); if (!isFinite(v)) { on = false; continue; }
      if (on) x.lineTo(X(p.t), Y(v)); else x.moveTo(X(p.t), Y(v)); on = true; }
    x.stroke(); x.setLineDash([]); x.lineWidth = 1;
  };
  const n = pts[pts.length - 1].gpus.length;
  for (let g = 0; g < n; g++) line(p => p.gpus[g], colors[g % colors.length], [], 1);
  line(p => p.node, "#000", [], 2);
  line(p => p.mean, "#555", [2, 3], 2);
  line(p => p.budget, "#d62728", [8, 4], 2);
  let lg = '<span style="color:#000">&#9632; node</span><span style="color:#555">&#9632; trailing window mean</span>' +
           '<span style="color:#d62728">&#9632; budget</span>';
  for (let g = 0; g < n; g++) lg += '<span style="color:' + colors[g % colors.length] + '">&#9632; GPU ' + g + '</span>';
  document.getElementById("legend").innerHTML = lg;
}
function esc(v) { return String(v).replace(/[&<>"]/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;"}[c])); }
function fmt(v, u) {
  if (v == null) return "–";
  return (typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(1)) : esc(v)) + (u || "");
}
function side(s) {
  document.getElementById("host").textContent = s.hostname || "";
  const w = (s.windows && s.windows[0]) || {};
  const fb = s.fallback_reason ? '<span class="fb">' + esc(s.fallback_reason) + '</span>' : '<span class="ok">none</span>';
  const rows = [["node power", fmt(s.node_power_w, " W")],
    ["budget", fmt(s.budget && s.budget.watts, " W") + " (" + esc(s.budget ? s.budget.scope : "") + ", " + fmt(s.budget && s.budget.window_s, " s") + ")"],
    ["window mean", fmt(w.mean_w, " W")], ["violations", fmt(w.violations_total)],
    ["controller", esc(s.controller || "")], ["fallback", fb],
    ["fallbacks", esc(Object.entries(s.fallbacks_total || {}).map(e => e[0] + "=" + e[1]).join(" "))],
    ["limiter", esc(Object.entries(s.limiter_actions_total || {}).map(e => e[0] + "=" + e[1]).join(" "))],
    ["late ticks", fmt(s.loop && s.loop.late_ticks_total)]];
  for (const g of s.gpus || []) rows.push(["GPU " + g.index + " cap", fmt(g.cap_w, " W")]);
  document.getElementById("info").innerHTML = rows.map(r => "<tr><th>" + r[0] + "</th><td>" + r[1] + "</td></tr>").join("");
  document.getElementById("jobs").innerHTML = (s.jobs || []).map(j => "<tr><td>" + esc(j.id) + "</td><td>" + esc(j.phase) +
    "</td><td>" + esc(JSON.stringify(j.knobs || {})) + "</td></tr>").join("") || "<tr><td>no jobs registered</td></tr>";
  document.getElementById("status").textContent = "ok points=" + pts.length + (s.fallback_reason ? " fallback=" + s.fallback_reason : "");
}
async function once() { const r = await fetch("/v1/status", {headers: hdr}); if (!r.ok) throw new Error("status " + r.status); return r.json(); }
async function stat() {
  for (let i = 0; i < Number(q.get("samples") || 3); i++) { add(await once()); await new Promise(r => setTimeout(r, 200)); }
}
async function live() {
  add(await once());
  const r = await fetch("/v1/stream", {headers: hdr});
  const rd = r.body.getReader(), dec = new TextDecoder(); let buf = "";
  for (;;) { const {value, done} = await rd.read(); if (done) break; buf += dec.decode(value, {stream: true});
    let i; while ((i = buf.indexOf("\n\n")) >= 0) { const ev = buf.slice(0, i); buf = buf.slice(i + 2);
      for (const l of ev.split("\n")) if (l.startsWith("data:")) add(JSON.parse(l.slice(5))); } }
}
function report(r) {
  document.querySelector("h1").firstChild.textContent = "flexwatt report ";
  document.getElementById("host").textContent = r.scenario || "";
  document.getElementById("jobs-title").textContent = "Controllers";
  const rows = r.controllers || [];
  const c = document.getElementById("plot"), x = c.getContext("2d");
  const W = c.width, H = c.height, L = 56, B = 24, T = 10, R = 10;
  x.clearRect(0, 0, W, H);
  let lo = Infinity, hi = -Infinity, n = 0;
  for (const k of rows) for (const w of ((k.windows_curve || {}).windows_s || [])) { lo = Math.min(lo, w); hi = Math.max(hi, w); }
  if (!(hi > lo)) { lo = 0.5; hi = 300; }
  const X = w => L + (W - L - R) * Math.log(w / lo) / Math.log(hi / lo), Y = v => T + (H - T - B) * (1 - v);
  x.strokeStyle = "#ddd"; x.fillStyle = "#555"; x.font = "11px sans-serif";
  for (let i = 0; i <= 4; i++) { x.beginPath(); x.moveTo(L, Y(i / 4)); x.lineTo(W - R, Y(i / 4)); x.stroke(); x.fillText(25 * i + " %", 4, Y(i / 4) + 4); }
  const ws = ((rows[0] || {}).windows_curve || {}).windows_s || [];
  for (const w of ws) x.fillText(w + " s", Math.min(X(w) - 8, W - R - 36), H - 6);
  let lg = "";
  rows.forEach((k, i) => {
    const cv = k.windows_curve || {}, col = colors[i % colors.length];
    x.strokeStyle = col; x.lineWidth = 2; x.beginPath();
    (cv.windows_s || []).forEach((w, j) => { const v = ((cv.violation_rate || [])[j] || {}).mean;
      if (v == null) return; if (j) x.lineTo(X(w), Y(v)); else x.moveTo(X(w), Y(v)); n++; });
    x.stroke(); x.lineWidth = 1;
    lg += '<span style="color:' + col + '">&#9632; ' + esc(k.controller || k.name) + '</span>';
  });
  document.getElementById("legend").innerHTML = "violation rate against window length: " + lg;
  const info = [["scenario", esc(r.scenario || "")], ["duration", fmt(r.duration_s, " s")],
    ["seeds", esc((r.seeds || []).join(" "))], ["reference", esc(r.reference || "")], ["simulated", esc(r.simulated)]];
  document.getElementById("info").innerHTML = info.map(e => "<tr><th>" + e[0] + "</th><td>" + e[1] + "</td></tr>").join("");
  const v30 = k => (k.violation_rate || {})["30"] || {};
  document.getElementById("jobs").innerHTML = "<tr><th>controller</th><th>tokens</th><th>30 s violations</th></tr>" +
    rows.map(k => "<tr><td>" + esc(k.controller || k.name) + "</td><td>" + fmt((k.tokens || {}).mean) + "</td><td>" +
      fmt(v30(k).mean == null ? null : 100 * v30(k).mean) + " &plusmn; " + fmt(v30(k).ci95 == null ? null : 100 * v30(k).ci95, " %") + "</td></tr>").join("");
  document.getElementById("status").textContent = "ok points=" + n + " report";
}
const embedded = document.getElementById("report");
if (embedded) {
  try { report(JSON.parse(embedded.textContent)); } catch (e) { document.getElementById("status").textContent = "error: " + e.message; }
} else {
  (q.get("static") ? stat() : live()).catch(e => { document.getElementById("status").textContent = "error: " + e.message; });
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
