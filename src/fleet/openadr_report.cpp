#include "fleet/openadr_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <variant>

#include "core/format.hpp"

namespace fw::fleet {

namespace {

using Json = nlohmann::json;

// A unit: its scale from W (power) or J (energy), and which of the two it measures.
struct Unit {
  double scale = 0;
  bool energy = false;
};
std::optional<Unit> unit_of(const std::string& u) {
  if (u == "KW") return Unit{1e-3, false};
  if (u == "W") return Unit{1, false};
  if (u == "MW") return Unit{1e-6, false};
  if (u == "KWH") return Unit{1 / 3.6e6, true};
  if (u == "WH") return Unit{1 / 3600.0, true};
  if (u == "MWH") return Unit{1 / 3.6e9, true};
  return std::nullopt;
}

// A descriptor's optional field of type T, else why not.
template <typename T>
std::optional<std::string> field(const Json& d, const char* key, T* out) {
  if (!d.contains(key) || d[key].is_null()) return std::nullopt;
  const Json& v = d[key];
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return std::string(key) + ": not a string";
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return std::string(key) + ": not a boolean";
  } else {
    if (!v.is_number_integer()) return std::string(key) + ": not an integer";
  }
  *out = v.get<T>();
  return std::nullopt;
}

struct Timing {
  int first = 0, count = 0, chunk = 0, reports = 0;
  bool operator==(const Timing& o) const {
    return std::tie(first, count, chunk, reports) == std::tie(o.first, o.count, o.chunk, o.reports);
  }
};

// The descriptor, or why it is left out.
std::variant<std::pair<Timing, ReportDescriptor>, std::string> parse_descriptor(const Json& d,
                                                                                int n) {
  if (!d.is_object()) return std::string("not an object");
  ReportDescriptor r;
  std::string report_intervals = "INTERVALS";
  bool historical = true;
  int start = -1, num = -1, frequency = -1, repeat = 1;
  if (!d.contains("payloadType")) return std::string("payloadType: missing");
  for (auto why :
       {field(d, "payloadType", &r.payload_type), field(d, "readingType", &r.reading_type),
        field(d, "units", &r.units), field(d, "reportIntervals", &report_intervals),
        field(d, "historical", &historical), field(d, "startInterval", &start),
        field(d, "numIntervals", &num), field(d, "frequency", &frequency),
        field(d, "repeat", &repeat)}) {
    if (why) return *why;
  }
  const std::string& type = r.payload_type;
  if (type != "DEMAND" && type != "USAGE" && type != "BASELINE" && type != "SETPOINT") {
    return "payloadType " + type + ": not reported (DEMAND, USAGE, BASELINE, SETPOINT)";
  }
  if (!historical) return std::string("historical false (a forecast): not supported");
  if (report_intervals != "INTERVALS") {
    return "reportIntervals " + report_intervals + ": not supported (INTERVALS only)";
  }
  if (r.reading_type == "FORECAST") return std::string("readingType FORECAST: not supported");
  if (r.reading_type == "PEAK" && type != "DEMAND") {
    return "readingType PEAK: only for DEMAND";
  }
  r.peak = r.reading_type == "PEAK";
  if (r.reading_type.empty()) r.reading_type = type == "USAGE" ? "SUMMED" : "MEAN";
  if (r.units.empty()) r.units = type == "USAGE" ? "KWH" : "KW";
  const std::optional<Unit> u = unit_of(r.units);
  if (!u) return "units " + r.units + ": not supported (KW, W, MW, KWH, WH, MWH)";
  if ((type == "USAGE") != u->energy && type != "BASELINE") {
    return "units " + r.units + ": not a unit of " + (type == "USAGE" ? "energy" : "power");
  }
  r.scale = u->scale;
  r.energy = u->energy;
  Timing t;
  t.first = start < 0 ? 0 : start;
  if (t.first >= n) {
    return "startInterval " + std::to_string(start) + ": the event has " + std::to_string(n) +
           " intervals";
  }
  if (num == 0) return std::string("numIntervals 0: nothing to report");
  if (repeat == 0) return std::string("repeat 0: nothing to report");
  t.count = num < 0 ? n - t.first : std::min(num, n - t.first);
  t.chunk = frequency <= 0 ? t.count : std::min(frequency, t.count);
  const int chunks = (t.count + t.chunk - 1) / t.chunk;
  t.reports = repeat < 0 ? chunks : std::min(repeat, chunks);
  return std::make_pair(t, r);
}

// Time-weighted sums over [start, end) of samples held until the next (at most max_hold_s).
struct Cover {
  double covered_s = 0, power_j = 0, baseline_j = 0, target_j = 0, peak_w = 0;
};
Cover cover(const std::vector<SiteSample>& s, double start, double end, double max_hold_s) {
  Cover c;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    const double until = std::min(s[i + 1].time_unix_s, s[i].time_unix_s + max_hold_s);
    const double dt = std::min(until, end) - std::max(s[i].time_unix_s, start);
    if (dt <= 0) continue;
    c.covered_s += dt;
    c.power_j += s[i].power_w * dt;
    c.baseline_j += s[i].baseline_w * dt;
    c.target_j += s[i].target_w * dt;
    c.peak_w = std::max(c.peak_w, s[i].power_w);
  }
  return c;
}

}  // namespace

std::string iso8601_duration(double seconds) {
  const double ms = std::round(seconds * 1000);
  if (std::fmod(ms, 1000) == 0) return "PT" + std::to_string(int64_t(ms / 1000)) + "S";
  std::string v = format_fixed(ms / 1000, 3);
  while (v.back() == '0') v.pop_back();
  return "PT" + v + "S";
}

std::vector<OwedReport> plan_reports(const std::string& event_id, const std::string& program_id,
                                     const Json& report_descriptors,
                                     const std::vector<EventInterval>& intervals,
                                     std::vector<std::string>* unsupported) {
  std::vector<OwedReport> out;
  if (report_descriptors.is_null()) return out;
  if (!report_descriptors.is_array()) {
    if (unsupported) unsupported->push_back(event_id + ": reportDescriptors: not a list");
    return out;
  }
  const int n = int(intervals.size());
  std::vector<std::pair<Timing, std::vector<ReportDescriptor>>> groups;  // in order asked
  for (size_t i = 0; i < report_descriptors.size(); ++i) {
    auto d = parse_descriptor(report_descriptors[i], n);
    if (auto* why = std::get_if<std::string>(&d)) {
      if (unsupported) {
        unsupported->push_back(event_id + ": reportDescriptors[" + std::to_string(i) +
                               "]: " + *why);
      }
      continue;
    }
    auto& [t, r] = std::get<0>(d);
    auto g =
        std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == t; });
    if (g == groups.end()) {
      groups.push_back({t, {r}});
    } else {
      g->second.push_back(r);
    }
  }
  for (const auto& [t, descriptors] : groups) {
    std::string types;
    for (const auto& d : descriptors) {
      types += (types.empty() ? "" : ",") + d.payload_type + ":" + d.reading_type + ":" + d.units;
    }
    for (int j = 0; j < t.reports; ++j) {
      OwedReport r;
      r.event_id = event_id;
      r.program_id = program_id;
      r.descriptors = descriptors;
      const int from = t.first + j * t.chunk, to = std::min(from + t.chunk, t.first + t.count);
      r.intervals.assign(intervals.begin() + from, intervals.begin() + to);
      r.due_unix_s = r.intervals.back().end_unix_s;
      r.key = event_id + "/";
      for (const auto& iv : r.intervals) r.key += std::to_string(iv.id) + ",";
      r.key += "/" + types;
      out.push_back(std::move(r));
    }
  }
  return out;
}

Json build_report(const OwedReport& report, const std::vector<SiteSample>& samples,
                  double max_hold_s, const std::string& client_name,
                  const std::string& resource_name) {
  Json descriptors = Json::array();
  for (const auto& d : report.descriptors) {
    descriptors.push_back({{"objectType", "REPORT_PAYLOAD_DESCRIPTOR"},
                           {"payloadType", d.payload_type},
                           {"readingType", d.reading_type},
                           {"units", d.units}});
  }
  descriptors.push_back(
      {{"objectType", "REPORT_PAYLOAD_DESCRIPTOR"}, {"payloadType", "DATA_QUALITY"}});
  Json intervals = Json::array();
  for (const auto& iv : report.intervals) {
    const double length_s = iv.end_unix_s - iv.start_unix_s;
    const Cover c = cover(samples, iv.start_unix_s, iv.end_unix_s, max_hold_s);
    Json payloads = Json::array();
    if (c.covered_s > 0) {
      for (const auto& d : report.descriptors) {
        double v = 0;
        if (d.payload_type == "DEMAND") {
          v = d.peak ? c.peak_w : c.power_j / c.covered_s;
        } else if (d.payload_type == "USAGE") {
          v = c.power_j / c.covered_s * length_s;
        } else if (d.payload_type == "BASELINE") {
          v = c.baseline_j / c.covered_s * (d.energy ? length_s : 1);
        } else {
          v = c.target_j / c.covered_s;
        }
        payloads.push_back({{"type", d.payload_type}, {"values", {v * d.scale}}});
      }
    }
    const char* quality = c.covered_s <= 0                                ? "MISSING"
                          : c.covered_s >= kReportFullCoverage * length_s ? "OK"
                                                                          : "ESTIMATED";
    payloads.push_back({{"type", "DATA_QUALITY"}, {"values", {quality}}});
    intervals.push_back(
        {{"id", iv.id},
         {"intervalPeriod",
          {{"start", rfc3339_utc(iv.start_unix_s)}, {"duration", iso8601_duration(length_s)}}},
         {"payloads", payloads}});
  }
  Json r = {
      {"objectType", "REPORT"},
      {"eventID", report.event_id},
      {"clientName", client_name},
      {"reportName", client_name + ":" + report.event_id + ":" +
                         std::to_string(report.intervals.front().id) + "-" +
                         std::to_string(report.intervals.back().id)},
      {"payloadDescriptors", descriptors},
      {"resources", Json::array({{{"resourceName", resource_name}, {"intervals", intervals}}})}};
  if (!report.program_id.empty()) r["programID"] = report.program_id;
  return r;
}

}  // namespace fw::fleet
