#pragma once
// Grid signals for a site: NVIDIA-style load targets (a schedule of events, ramps), the OpenADR 3
// event translator (JSON in, load target out) and OpenADR 3 reports (DEMAND, USAGE,
// BASELINE) back. Pure functions: no I/O, no clock (callers pass now_unix_s).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "fleet/keys.hpp"

namespace fw::fleet {

// Sane ranges of grid signals; beyond them a value is an error naming its field (400), not a
// target that never starts or an infinite budget. Assumptions: times between 1970 and 2286
// (kMaxRecordUnixS), durations up to 10 years, targets up to kMaxSiteW (1 TW, keys.hpp), ids
// up to 256 characters.
inline constexpr double kMaxGridDurationS = 10 * 365.25 * 86400;
inline constexpr size_t kMaxCorrelationIdChars = 256;
// Ramp rates: 0 (a step) or kMinRampWPerS..kMaxSiteW W/s; and whatever the rate, a ramp lasts
// at most kMaxRampS (the rate is raised to gap / kMaxRampS), so no target ramps for days.
inline constexpr double kMinRampWPerS = 1;
inline constexpr double kMaxRampS = 3600;

// RFC 3339 "2026-11-30T21:00:00Z", "2026-11-30T13:00:00.5-08:00" (a zone is required: Z or
// +-HH:MM; 'T'/'Z' in either case) or a JSON number of unix seconds, in [0, kMaxRecordUnixS].
Result<double> parse_time(const nlohmann::json& v, std::string_view field);
// ISO 8601 duration P[nY][nM][nW][nD][T[nH][nM][nS]] in that order, each at most once, at
// least one, decimals with '.' or ',': "PT1H30M", "P1Y2M3DT4H5M6.5S". Nominal calendar
// units (a year 365 days, a month 30 days): a grid event's length, not a date. At most
// kMaxGridDurationS.
Result<double> parse_duration(std::string_view text, std::string_view field);
// A ramp rate: 0 or within [kMinRampWPerS, kMaxSiteW], else InvalidArgument naming field.
Result<double> check_ramp_w_per_s(double v, std::string_view field);

// PUT /v1/grid/target body:
//   {"value": 700, "unit": "watt|kilowatt|megawatt", "start_time": t, "end_time": t?,
//    "best_effort": false, "correlation_id": "...", "ramp_w_per_s": 0?, "ramp_up_w_per_s": 0?}
// "value": null means "site default" (clears the target). start_time absent: now. Any
// malformed or out-of-range field is InvalidArgument naming it (never an exception).
Result<GridTarget> parse_load_target(std::string_view body, double now_unix_s);

// The site's effective budget at now. Per event: min(site_w, its value) while it is in force,
// with ramps so the site reaches the value at start at ramp_w_per_s and leaves it at end at
// ramp_up_w_per_s (ramp_w_per_s when 0) (0: steps; a ramp lasts at most kMaxRampS); a null, ended
// or not yet started event leaves site_w (ramping included). Overlap rule: the lowest of site_w and
// every event's budget (the most restrictive event wins at each instant; a future event never lifts
// an active one).
double effective_budget_w(double site_w, const GridSchedule& schedule, double now_unix_s);
// The event that sets the effective budget at now (the lowest below site_w); nullptr if none.
const GridTarget* binding_event(double site_w, const GridSchedule& schedule, double now_unix_s);

// Where the effective budget stands at now (the binding event's state): "ramping_down" /
// "ramping_up" while a ramp moves it, "holding" at the target (below site_w), "idle" at
// site_w (no event in force).
enum class RampState { kIdle, kRampingDown, kHolding, kRampingUp };
RampState ramp_state(double site_w, const GridSchedule& schedule, double now_unix_s);
const char* ramp_state_name(RampState s);

// Adding events to a site's schedule. `events` share one group (a load target's
// correlation_id; an OpenADR event's id) and replace every scheduled event of that group
// (correlation_id == group, or group + "#" + interval): a later write of the same event is
// its update. Null-valued events carry no limit: if every event is null the write cancels
// the group (404 when nothing of it is scheduled). Events that ended are dropped; if every
// valued event ended at or before now the write is refused (409: an event wholly in the past,
// or a finished one replayed). More than kMaxGridEvents scheduled: 422. Events that ended
// more than kMaxRampS ago are pruned on every change.
inline constexpr size_t kMaxGridEvents = 64;
struct ScheduleChange {
  int http_status = 200;  // 200, 404, 409 or 422
  std::string error;      // when not 200
  GridSchedule schedule;  // the schedule to store (when 200)
  size_t added = 0;       // valued events of the group now scheduled
};
ScheduleChange schedule_events(const GridSchedule& current, const std::string& group,
                               const std::vector<GridTarget>& events, double now_unix_s);

// OpenADR 3 event -> load targets, one per interval. Each interval's intervalPeriod {start,
// duration}, or the event's: an interval without its own starts where the one before ended
// (the event's start for the first). Payloads per interval with payloadDescriptors' units
// (KW, W, MW; KW if absent):
//   IMPORT_CAPACITY_LIMIT v / DISPATCH_SETPOINT v -> value v in its unit;
//   SIMPLE 0 -> null (no limit in that interval), 1/2/3 -> 90 % / 70 % / 50 % of site_w.
// correlation_id: the event's "id", else "eventName", else "openadr" (the group); with more
// than one interval each is group + "#" + its index. At most kMaxGridEvents intervals.
// Malformed or out-of-range fields: InvalidArgument naming them (never an exception).
Result<std::vector<GridTarget>> translate_openadr_events(std::string_view body, double site_w,
                                                         double ramp_w_per_s);
// The first interval only (translate_openadr_events()[0]).
Result<GridTarget> translate_openadr_event(std::string_view body, double site_w,
                                           double ramp_w_per_s);

// One measured sample of site power with the uncontrolled prediction for the same instant.
struct PowerSample {
  double time_unix_s = 0;
  double power_w = 0;
  double baseline_w = 0;  // what the site would draw uncontrolled (simulator prediction)
};

// OpenADR 3 report: one interval per interval_s from start (intervalPeriod start RFC 3339 UTC,
// duration ISO 8601), with DEMAND (mean kW), USAGE (kWh) and BASELINE (mean kW of the
// uncontrolled prediction). Intervals without samples are left out. samples need not be evenly
// spaced (trapezoid-free: sample-and-hold). The VEN's reports on an event's own intervals:
// openadr_report.hpp.
nlohmann::json openadr_report(const std::vector<PowerSample>& samples, double start_unix_s,
                              double interval_s, const std::string& event_id,
                              const std::string& resource_name);

}  // namespace fw::fleet
