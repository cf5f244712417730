#include "fleet/grid.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

namespace fw::fleet {

using Json = nlohmann::json;

namespace {

// t as a grid time: in [0, kMaxRecordUnixS], else an error naming field.
Result<double> sane_time(double t, std::string_view field) {
  if (!(t >= 0 && t <= kMaxRecordUnixS)) {
    return Status::InvalidArgument(std::string(field) + ": " + Json(t).dump() +
                                   " is outside 0..1e10 unix seconds (1970..2286)");
  }
  return t;
}

// A target in W: finite, 0..kMaxSiteW.
Result<double> sane_target_w(double w, std::string_view field) {
  if (!(w >= 0 && w <= kMaxSiteW)) {
    return Status::InvalidArgument(std::string(field) + ": " + Json(w).dump() +
                                   " W is outside 0..1e12 W");
  }
  return w;
}

}  // namespace

Result<double> parse_time(const Json& v, std::string_view field) {
  if (v.is_number()) return sane_time(v.get<double>(), field);
  if (!v.is_string()) {
    return Status::InvalidArgument(std::string(field) + ": not a time (RFC 3339 or unix s)");
  }
  const std::string s = v.get<std::string>();
  std::tm tm{};
  const char* rest = ::strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!rest) return Status::InvalidArgument(std::string(field) + ": \"" + s + "\" not RFC 3339");
  double frac = 0;
  if (*rest == '.') {
    char* end = nullptr;
    frac = std::strtod(rest, &end);
    rest = end;
  }
  if (std::string_view(rest) != "Z" && std::string_view(rest) != "+00:00") {
    return Status::InvalidArgument(std::string(field) + ": \"" + s + "\" must be UTC (Z)");
  }
  return sane_time(double(::timegm(&tm)) + frac, field);
}

Result<double> parse_duration(std::string_view text, std::string_view field) {
  auto bad = [&] {
    return Status::InvalidArgument(std::string(field) + ": \"" + std::string(text) +
                                   "\" not an ISO 8601 duration");
  };
  if (text.size() < 3 || text[0] != 'P') return bad();
  double total = 0;
  bool in_time = false;
  std::string num;
  for (size_t i = 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == 'T') {
      in_time = true;
    } else if ((c >= '0' && c <= '9') || c == '.') {
      num += c;
    } else {
      char* end = nullptr;
      const double v = num.empty() ? 0 : std::strtod(num.c_str(), &end);
      if (num.empty() || end != num.c_str() + num.size() || !std::isfinite(v)) return bad();
      num.clear();
      if (c == 'D' && !in_time)
        total += v * 86400;
      else if (c == 'W' && !in_time)
        total += v * 7 * 86400;
      else if (c == 'H' && in_time)
        total += v * 3600;
      else if (c == 'M' && in_time)
        total += v * 60;
      else if (c == 'S' && in_time)
        total += v;
      else
        return bad();
    }
  }
  if (!num.empty() || !(total <= kMaxGridDurationS)) return bad();
  return total;
}

namespace {

Result<double> unit_scale(std::string unit, std::string_view field) {
  std::transform(unit.begin(), unit.end(), unit.begin(), ::tolower);
  if (unit == "watt" || unit == "w") return 1.0;
  if (unit == "kilowatt" || unit == "kw") return 1e3;
  if (unit == "megawatt" || unit == "mw") return 1e6;
  return Status::InvalidArgument(std::string(field) + ": unit \"" + unit +
                                 "\": choose watt, kilowatt or megawatt");
}

Result<GridTarget> parse_load_target_json(std::string_view body, double now_unix_s) {
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("load target: body is not a JSON object");
  }
  static const char* kKnown[] = {"value",       "unit",           "start_time",   "end_time",
                                 "best_effort", "correlation_id", "ramp_w_per_s", "feed_tags"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(std::begin(kKnown), std::end(kKnown), it.key()) == std::end(kKnown)) {
      return Status::InvalidArgument("load target: " + it.key() + ": unknown field");
    }
  }
  GridTarget t;
  if (!j.contains("value")) return Status::InvalidArgument("load target: value: missing");
  if (!j.contains("correlation_id") || !j["correlation_id"].is_string() ||
      j["correlation_id"].get<std::string>().empty()) {
    return Status::InvalidArgument("load target: correlation_id: missing or empty");
  }
  t.correlation_id = j["correlation_id"].get<std::string>();
  if (t.correlation_id.size() > kMaxCorrelationIdChars) {
    return Status::InvalidArgument("load target: correlation_id: longer than 256 characters");
  }
  if (!j["value"].is_null()) {
    if (!j["value"].is_number() || j["value"].get<double>() < 0) {
      return Status::InvalidArgument("load target: value: must be a number >= 0 or null");
    }
    if (j.contains("unit") && !j["unit"].is_string()) {
      return Status::InvalidArgument("load target: unit: must be a string");
    }
    FW_ASSIGN_OR_RETURN(double scale,
                        unit_scale(j.value("unit", std::string("watt")), "load target: unit"));
    FW_ASSIGN_OR_RETURN(t.value_w,
                        sane_target_w(j["value"].get<double>() * scale, "load target: value"));
  }
  t.start_unix_s = now_unix_s;
  if (j.contains("start_time")) {
    FW_ASSIGN_OR_RETURN(t.start_unix_s, parse_time(j["start_time"], "load target: start_time"));
  }
  if (j.contains("end_time") && !j["end_time"].is_null()) {
    FW_ASSIGN_OR_RETURN(t.end_unix_s, parse_time(j["end_time"], "load target: end_time"));
    if (t.end_unix_s <= t.start_unix_s) {
      return Status::InvalidArgument("load target: end_time: must be after start_time");
    }
  }
  if (j.contains("best_effort")) {
    if (!j["best_effort"].is_boolean()) {
      return Status::InvalidArgument("load target: best_effort: not a boolean");
    }
    t.best_effort = j["best_effort"].get<bool>();
  }
  if (j.contains("ramp_w_per_s")) {
    if (!j["ramp_w_per_s"].is_number() || j["ramp_w_per_s"].get<double>() < 0) {
      return Status::InvalidArgument("load target: ramp_w_per_s: must be a number >= 0");
    }
    t.ramp_w_per_s = j["ramp_w_per_s"].get<double>();
  }
  return t;
}

}  // namespace

Result<GridTarget> parse_load_target(std::string_view body, double now_unix_s) {
  try {  // every field is checked above; this is the last line of defence for a 400
    return parse_load_target_json(body, now_unix_s);
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(std::string("load target: ") + e.what());
  }
}

double effective_budget_w(double site_w, const std::optional<GridTarget>& target,
                          double now_unix_s) {
  if (!target || !target->value_w || *target->value_w >= site_w) return site_w;
  const double v = *target->value_w, gap = site_w - v, r = target->ramp_w_per_s;
  const double ramp_s = r > 0 ? gap / r : 0.0;
  const double t = now_unix_s, s = target->start_unix_s, e = target->end_unix_s;
  if (t < s - ramp_s) return site_w;
  if (t < s) return v + (s - t) * r;  // ramping down, reaching v at start
  if (e == 0 || t < e) return v;
  if (t < e + ramp_s) return v + (t - e) * r;  // ramping back up after end
  return site_w;
}

RampState ramp_state(double site_w, const std::optional<GridTarget>& target, double now_unix_s) {
  const double e0 = effective_budget_w(site_w, target, now_unix_s);
  if (!target || !target->value_w || *target->value_w >= site_w) return RampState::kIdle;
  // A step (no ramp) is never "ramping"; a ramp moves the budget by ramp_w_per_s each second.
  const double r = target->ramp_w_per_s, v = *target->value_w, t = now_unix_s;
  const double ramp_s = r > 0 ? (site_w - v) / r : 0.0;
  if (r > 0 && t >= target->start_unix_s - ramp_s && t < target->start_unix_s)
    return RampState::kRampingDown;
  if (r > 0 && target->end_unix_s > 0 && t >= target->end_unix_s && t < target->end_unix_s + ramp_s)
    return RampState::kRampingUp;
  return e0 < site_w ? RampState::kHolding : RampState::kIdle;
}

const char* ramp_state_name(RampState s) {
  switch (s) {
    case RampState::kRampingDown:
      return "ramping_down";
    case RampState::kHolding:
      return "holding";
    case RampState::kRampingUp:
      return "ramping_up";
    case RampState::kIdle:
      break;
  }
  return "idle";
}

namespace {

Result<GridTarget> openadr_event_json(std::string_view body, double site_w, double ramp_w_per_s) {
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("OpenADR event: body is not a JSON object");
  }
  if (!j.contains("intervals") || !j["intervals"].is_array() || j["intervals"].empty()) {
    return Status::InvalidArgument("OpenADR event: intervals: missing or empty");
  }
  const Json& iv = j["intervals"][0];
  const Json* period = iv.contains("intervalPeriod")  ? &iv["intervalPeriod"]
                       : j.contains("intervalPeriod") ? &j["intervalPeriod"]
                                                      : nullptr;
  if (!period || !period->contains("start")) {
    return Status::InvalidArgument("OpenADR event: intervalPeriod.start: missing");
  }
  GridTarget t;
  t.ramp_w_per_s = ramp_w_per_s;
  FW_ASSIGN_OR_RETURN(t.start_unix_s,
                      parse_time((*period)["start"], "OpenADR event: intervalPeriod.start"));
  if (period->contains("duration")) {
    if (!(*period)["duration"].is_string()) {
      return Status::InvalidArgument("OpenADR event: intervalPeriod.duration: not a string");
    }
    FW_ASSIGN_OR_RETURN(double d, parse_duration((*period)["duration"].get<std::string>(),
                                                 "OpenADR event: intervalPeriod.duration"));
    if (d > 0) t.end_unix_s = t.start_unix_s + d;
  }
  t.correlation_id = "openadr";
  for (const char* key : {"eventName", "id"}) {  // "id" wins
    if (!j.contains(key)) continue;
    if (!j[key].is_string() || j[key].get<std::string>().size() > kMaxCorrelationIdChars) {
      return Status::InvalidArgument(std::string("OpenADR event: ") + key +
                                     ": not a string of at most 256 characters");
    }
    t.correlation_id = j[key].get<std::string>();
  }
  std::string unit = "KW";
  if (j.contains("payloadDescriptors") && j["payloadDescriptors"].is_array()) {
    for (const auto& d : j["payloadDescriptors"]) {
      if (d.contains("units") && d["units"].is_string()) unit = d["units"].get<std::string>();
    }
  }
  if (!iv.contains("payloads") || !iv["payloads"].is_array()) {
    return Status::InvalidArgument("OpenADR event: intervals[0].payloads: missing");
  }
  for (const auto& p : iv["payloads"]) {
    if (!p.is_object() || (p.contains("type") && !p["type"].is_string())) {
      return Status::InvalidArgument(
          "OpenADR event: intervals[0].payloads: not {\"type\": string}");
    }
    const std::string type = p.value("type", std::string());
    if (!p.contains("values") || !p["values"].is_array() || p["values"].empty() ||
        !p["values"][0].is_number()) {
      continue;
    }
    const double v = p["values"][0].get<double>();
    if (type == "IMPORT_CAPACITY_LIMIT" || type == "DISPATCH_SETPOINT") {
      FW_ASSIGN_OR_RETURN(double scale, unit_scale(unit, "OpenADR event: payloadDescriptors"));
      FW_ASSIGN_OR_RETURN(t.value_w, sane_target_w(v * scale, "OpenADR event: " + type));
      return t;
    }
    if (type == "SIMPLE") {
      const int level = v >= -0.5 && v < 3.5 ? int(std::lround(v)) : -1;
      if (level < 0 || level > 3) {
        return Status::InvalidArgument("OpenADR event: SIMPLE level must be 0..3");
      }
      static const double kFraction[] = {1.0, 0.9, 0.7, 0.5};
      if (level > 0) t.value_w = site_w * kFraction[level];
      return t;
    }
  }
  return Status::InvalidArgument(
      "OpenADR event: no IMPORT_CAPACITY_LIMIT, DISPATCH_SETPOINT or SIMPLE payload");
}

}  // namespace

Result<GridTarget> translate_openadr_event(std::string_view body, double site_w,
                                           double ramp_w_per_s) {
  try {  // every field is checked above; this is the last line of defence for a 400
    return openadr_event_json(body, site_w, ramp_w_per_s);
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(std::string("OpenADR event: ") + e.what());
  }
}

Json openadr_report(const std::vector<PowerSample>& samples, double start_unix_s, double interval_s,
                    const std::string& event_id, const std::string& resource_name) {
  struct Acc {
    double energy_j = 0, baseline_j = 0, covered_s = 0;
  };
  std::map<int64_t, Acc> acc;
  for (size_t i = 0; i + 1 < samples.size(); ++i) {
    const double t = samples[i].time_unix_s, dt = samples[i + 1].time_unix_s - t;
    if (t < start_unix_s || dt <= 0) continue;
    Acc& a = acc[int64_t((t - start_unix_s) / interval_s)];
    a.energy_j += samples[i].power_w * dt;
    a.baseline_j += samples[i].baseline_w * dt;
    a.covered_s += dt;
  }
  Json intervals = Json::array();
  for (const auto& [k, a] : acc) {
    if (a.covered_s <= 0) continue;
    Json payloads = Json::array({
        {{"type", "DEMAND"}, {"values", {a.energy_j / a.covered_s / 1e3}}},
        {{"type", "USAGE"}, {"values", {a.energy_j / 3.6e6}}},
        {{"type", "BASELINE"}, {"values", {a.baseline_j / a.covered_s / 1e3}}},
    });
    intervals.push_back({{"id", k},
                         {"intervalPeriod",
                          {{"start", start_unix_s + k * interval_s},
                           {"duration", "PT" + std::to_string(int64_t(interval_s)) + "S"}}},
                         {"payloads", payloads}});
  }
  return {
      {"objectType", "REPORT"},
      {"eventID", event_id},
      {"clientName", resource_name},
      {"payloadDescriptors",
       Json::array({{{"payloadType", "DEMAND"}, {"units", "KW"}, {"readingType", "MEAN"}},
                    {{"payloadType", "USAGE"}, {"units", "KWH"}},
                    {{"payloadType", "BASELINE"}, {"units", "KW"}}})},
      {"resources", Json::array({{{"resourceName", resource_name}, {"intervals", intervals}}})}};
}

}  // namespace fw::fleet
