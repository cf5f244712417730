#pragma once
// OpenADR 3.1 reports a VEN owes, pure (no I/O, no clock): an event's reportDescriptors ->
// the reports it asks for (which of its intervals, when each is due), and one such report
// with the site's samples -> the REPORT body POSTed to {vtn}/reports.
//
// What a descriptor may ask (anything else is left out and named in `unsupported`):
//   payloadType  DEMAND (the site's measured power: readingType MEAN (default) or PEAK),
//                USAGE (its energy), BASELINE (the uncontrolled prediction's power, or energy
//                with an energy unit), SETPOINT (the target the site held: the coordinator's
//                effective budget after the grid, the event's limit with ramps, capped by the
//                site budget)
//   units        power KW (default), W, MW; energy KWH (default for USAGE), WH, MWH
//   readingType  echoed (default MEAN; SUMMED for USAGE, the nodes' energy summed); PEAK
//                only for DEMAND; FORECAST is not supported
//   startInterval/numIntervals  the contiguous intervals [start, start + num) (-1: from the
//                first / to the last); frequency f > 0: one report per f intervals of them
//                (-1 or 0: one report of them all); repeat r: the first r of those reports
//                (-1: all); historical must be true, reportIntervals INTERVALS (the report's
//                intervals are the event's: same ids, starts and durations).
// Descriptors that ask for the same intervals share one report (a payload each, in the order
// asked). A report is due at the end of its last interval.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fw::fleet {

// One interval of an event as translated (grid.hpp translate_openadr_events).
struct EventInterval {
  int id = 0;  // the event interval's "id"
  double start_unix_s = 0;
  double end_unix_s = 0;
};

struct ReportDescriptor {
  std::string payload_type;  // DEMAND | USAGE | BASELINE | SETPOINT
  std::string reading_type;  // as the report's payloadDescriptor says it
  std::string units;         // KW | W | MW | KWH | WH | MWH
  double scale = 1e-3;       // value in W (or J) x scale = value in units
  bool energy = false;       // units are energy (J x scale)
  bool peak = false;         // DEMAND PEAK: the highest sample, not the mean
};

// One report the VEN owes the VTN.
struct OwedReport {
  std::string event_id, program_id;
  std::string key;  // event id, interval ids and payload types: the same report, the same key
  std::vector<ReportDescriptor> descriptors;
  std::vector<EventInterval> intervals;  // of the event, in order, at least one
  double due_unix_s = 0;                 // end of the last interval
};

// The reports an event's reportDescriptors (a JSON array, or null: none) ask for over its
// intervals. unsupported (may be null): "<event id>: reportDescriptors[i]: <why>" for each
// descriptor left out. Never throws.
std::vector<OwedReport> plan_reports(const std::string& event_id, const std::string& program_id,
                                     const nlohmann::json& report_descriptors,
                                     const std::vector<EventInterval>& intervals,
                                     std::vector<std::string>* unsupported);

// What the leader saw of the site at time_unix_s.
struct SiteSample {
  double time_unix_s = 0;
  double power_w = 0;     // the nodes' measured draw, summed
  double baseline_w = 0;  // their uncontrolled prediction, summed
  double target_w = 0;    // the effective budget the coordinator split (the grid's target)
};

// Coverage of an interval by samples (each held until the next) at or above this fraction:
// DATA_QUALITY "OK"; below, above zero: "ESTIMATED"; none: "MISSING" (that interval then
// carries DATA_QUALITY alone).
inline constexpr double kReportFullCoverage = 0.9;

// The REPORT body (3.1 reportRequest; objectType and programID kept for 3.0.1 VTNs): eventID,
// clientName, reportName, payloadDescriptors (objectType REPORT_PAYLOAD_DESCRIPTOR: each
// descriptor's payloadType, readingType, units, then DATA_QUALITY), resources [{resourceName,
// intervals}], each interval {id, intervalPeriod {start: RFC 3339 UTC, duration: ISO 8601},
// payloads}. samples sorted by time; each holds until the next, at most max_hold_s (a gap
// longer than that is not covered). Per interval: DEMAND the time-weighted mean (or the peak)
// of power_w, USAGE that mean x the interval's length, BASELINE and SETPOINT the means of
// baseline_w and target_w (an energy unit: x the length); then DATA_QUALITY.
nlohmann::json build_report(const OwedReport& report, const std::vector<SiteSample>& samples,
                            double max_hold_s, const std::string& client_name,
                            const std::string& resource_name);

// Seconds as an ISO 8601 duration: "PT1800S", "PT0.5S" (at most millisecond precision).
std::string iso8601_duration(double seconds);

}  // namespace fw::fleet
