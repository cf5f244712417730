#pragma once
// Grid signals for a site: NVIDIA-style load targets (latest wins, ramps), the OpenADR 3
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

// "2026-11-30T21:00:00Z" (UTC, optional fractional seconds) or a JSON number of unix seconds,
// in [0, kMaxRecordUnixS].
Result<double> parse_time(const nlohmann::json& v, std::string_view field);
// ISO 8601 duration "PT1H30M", "PT15M", "P1D", "PT0.5S" -> seconds (at most
// kMaxGridDurationS).
Result<double> parse_duration(std::string_view text, std::string_view field);

// PUT /v1/grid/target body:
//   {"value": 700, "unit": "watt|kilowatt|megawatt", "start_time": t, "end_time": t?,
//    "best_effort": false, "correlation_id": "...", "ramp_w_per_s": 0?}
// "value": null means "site default" (clears the target). start_time absent: now. Any
// malformed or out-of-range field is InvalidArgument naming it (never an exception).
Result<GridTarget> parse_load_target(std::string_view body, double now_unix_s);

// The site's effective budget at now: min(site_w, target) while the target is in force, with
// ramps so the site reaches the target at start and leaves it at end at ramp_w_per_s
// (0: steps). A null or ended target, or one not started, leaves site_w (ramping included).
double effective_budget_w(double site_w, const std::optional<GridTarget>& target,
                          double now_unix_s);

// Where the effective budget stands at now: "ramping_down" / "ramping_up" while a ramp moves
// it, "holding" at the target (below site_w), "idle" at site_w (no target in force).
enum class RampState { kIdle, kRampingDown, kHolding, kRampingUp };
RampState ramp_state(double site_w, const std::optional<GridTarget>& target, double now_unix_s);
const char* ramp_state_name(RampState s);

// OpenADR 3 event -> load target. Reads intervalPeriod {start, duration} (event-level or the
// first interval's), the first interval's payloads and payloadDescriptors' units (KW, W, MW;
// KW if absent):
//   IMPORT_CAPACITY_LIMIT v / DISPATCH_SETPOINT v -> value v in its unit;
//   SIMPLE 0 -> null (site default), 1/2/3 -> 90 % / 70 % / 50 % of site_w.
// correlation_id: the event's "id", else "eventName", else "openadr". Malformed or
// out-of-range fields: InvalidArgument naming them (never an exception).
Result<GridTarget> translate_openadr_event(std::string_view body, double site_w,
                                           double ramp_w_per_s);

// One measured sample of site power with the uncontrolled prediction for the same instant.
struct PowerSample {
  double time_unix_s = 0;
  double power_w = 0;
  double baseline_w = 0;  // what the site would draw uncontrolled (simulator prediction)
};

// OpenADR 3 report: one interval per interval_s from start, with DEMAND (mean kW), USAGE
// (kWh) and BASELINE (mean kW of the uncontrolled prediction). Intervals without samples
// are left out. samples need not be evenly spaced (trapezoid-free: sample-and-hold).
nlohmann::json openadr_report(const std::vector<PowerSample>& samples, double start_unix_s,
                              double interval_s, const std::string& event_id,
                              const std::string& resource_name);

}  // namespace fw::fleet
