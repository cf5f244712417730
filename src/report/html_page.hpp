#pragma once
// The agent's dashboard: one self-contained HTML page (hand-written canvas plotting, one
// plotting module inside the page, no third-party code, no external resource) served at GET /
// without authentication (it holds no data; the data comes from /v1/history, /v1/status and
// /v1/stream, which keep their read scope: pass ?token=… when auth is on).
//
// On load the page reads /v1/history?span_s=S (the agent's ring), then follows /v1/stream. It
// plots node power, each GPU's power and cap, the budget (as node watts), the trailing window
// mean, spans where that mean is over budget and ticks where a window was judged over budget;
// axes in W and seconds/minutes before now with nice ticks. Span buttons: 1 min, 15 min, 1 h
// (?span_s= sets the first one). Cards: node power, budget with scope, window and source,
// trailing mean, windows over budget, controller, fallback state in words (e.g. why a knob
// controller without a job cannot act). Tables (with headers): jobs with their knobs as
// integers, GPUs, the fleet share and grid event when the budget comes from a coordinator,
// fallbacks and limiter counts. ?static=1 reads /v1/status a few times (?samples=N) and stops
// (headless tests: no open stream). A hidden element #status ends as
// "ok points=N span_s=S[ fallback=REASON]" once drawn (machine-readable, for tests).

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace fw::report {

std::string_view dashboard_html();

// The same page as a self-contained report file (no network): `report` (an eval or demo report
// JSON, as EvalReport::to_json writes it) embedded as <script id="report"
// type="application/json">. The page then draws the trade-off (completed-step tokens against
// the offset-averaged budget-window violation rate per controller, 95 % CI bars both ways),
// the violation rate against window length, and a table with the columns of `flexwatt eval`'s
// table; each controller has its own colour and marker (16 colours x 8 markers). A demo report
// (it has "comparison") links and shows power.svg, which demo writes beside report.html.
// #status ends as "ok points=N report controllers=K".
// With "kind": "caps" (CapCompareResult::to_json plus the kind, `flexwatt caps --html`) the
// page draws energy saved per token against throughput lost per arm (±1 SD bars, the uniform
// and per-GPU frontiers dashed) and the arms table with the CLI's columns; #status "ok
// points=N caps arms=K". With "kind": "dr" (dr_replay_json plus the kind and "series":
// {minute_s, minute_power_w, minute_target_w}, `flexwatt dr replay --html`): site power against
// the target over time, each job's performance against its tier minimum, the jobs and steps
// tables with the CLI's columns; #status "ok points=N dr jobs=K". With "kind": "site" (the
// coordinator's GET /site, fleet/grid_server.hpp): cards for the budget, effective target,
// load, held watts, ramp and the grid event in force; each live node's share and safe share
// (plot and table, held nodes listed); the schedule's events; reloads every 5 s (not with
// ?static=1); #status "ok points=N site nodes=K events=E".
std::string report_html(const nlohmann::json& report);

}  // namespace fw::report
