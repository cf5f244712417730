#pragma once
// The agent's dashboard: one self-contained HTML page (hand-written canvas plotting, no
// third-party code) served at GET / without authentication (it holds no data; the data comes
// from /v1/status and /v1/stream, which keep their scopes: pass ?token=… when auth is on).
//
// Live mode reads /v1/stream (server-sent events) and plots power per GPU and the node, the
// budget and the trailing window mean; a side panel lists the budget, controller, fallbacks,
// limiter actions and jobs with their knobs. ?static=1 reads /v1/status a few times and stops
// (headless tests: no open stream). The element #status ends as "ok points=N" once drawn.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace fw::report {

std::string_view dashboard_html();

// The same page as a self-contained report file (no network, no external files): `report`
// (an eval or demo report JSON) embedded as <script id="report" type="application/json">; the
// page then plots each controller's violation rate against window length and lists the rows
// (tokens, 30 s violation rate), and #status ends as "ok points=N report".
std::string report_html(const nlohmann::json& report);

}  // namespace fw::report
