#include "fleet/grid.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>

#include "core/format.hpp"
#include "fleet/openadr_report.hpp"

namespace fw::fleet {

using Json = nlohmann::json;

namespace {

// A number for an error message: %.15g, so 1e308 MW (infinite in W) reads "inf", not "null".
std::string num_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

// t as a grid time: in [0, kMaxRecordUnixS], else an error naming field.
Result<double> sane_time(double t, std::string_view field) {
  if (!(t >= 0 && t <= kMaxRecordUnixS)) {
    return Status::InvalidArgument(std::string(field) + ": " + num_text(t) +
                                   " is outside 0..1e10 unix seconds (1970..2286)");
  }
  return t;
}

// A target in W: finite, 0..kMaxSiteW.
Result<double> sane_target_w(double w, std::string_view field) {
  if (!(w >= 0 && w <= kMaxSiteW)) {
    return Status::InvalidArgument(std::string(field) + ": " + num_text(w) +
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
  std::string s = v.get<std::string>();
  auto bad = [&](const char* why) {
    return Status::InvalidArgument(std::string(field) + ": \"" + v.get<std::string>() +
                                   "\" not RFC 3339 (" + why + ")");
  };
  if (s.size() > 10 && s[10] == 't') s[10] = 'T';
  std::tm tm{};
  const char* rest = ::strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!rest) return bad("YYYY-MM-DDTHH:MM:SS");
  double frac = 0;
  if (*rest == '.') {
    char* end = nullptr;
    frac = std::strtod(rest, &end);
    if (end == rest + 1) return bad("digits after '.'");
    rest = end;
  }
  const std::string_view zone(rest);
  double offset_s = 0;
  if (zone == "Z" || zone == "z") {
    offset_s = 0;
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':' &&
             std::isdigit(static_cast<unsigned char>(zone[1])) &&
             std::isdigit(static_cast<unsigned char>(zone[2])) &&
             std::isdigit(static_cast<unsigned char>(zone[4])) &&
             std::isdigit(static_cast<unsigned char>(zone[5]))) {
    const int hh = (zone[1] - '0') * 10 + (zone[2] - '0');
    const int mm = (zone[4] - '0') * 10 + (zone[5] - '0');
    if (hh > 23 || mm > 59) return bad("offset beyond +-23:59");
    offset_s = (zone[0] == '-' ? -1.0 : 1.0) * (hh * 3600 + mm * 60);
  } else {
    return bad("a zone is required: Z or +-HH:MM");
  }
  // Local time = UTC + offset, so UTC = local - offset.
  return sane_time(double(::timegm(&tm)) + frac - offset_s, field);
}

Result<double> parse_duration(std::string_view text, std::string_view field) {
  auto bad = [&] {
    return Status::InvalidArgument(
        std::string(field) + ": \"" + std::string(text) +
        "\" not an ISO 8601 duration (P[nY][nM][nW][nD][T[nH][nM][nS]])");
  };
  if (text.size() < 3 || text[0] != 'P') return bad();
  // Designators in their only order; 'M' is months before 'T', minutes after it.
  static const char kDate[] = {'Y', 'M', 'W', 'D'};
  static const double kDateS[] = {365 * 86400.0, 30 * 86400.0, 7 * 86400.0, 86400.0};
  static const char kTime[] = {'H', 'M', 'S'};
  static const double kTimeS[] = {3600.0, 60.0, 1.0};
  double total = 0;
  bool in_time = false;
  int next = 0, parts = 0, time_parts = 0;
  std::string num;
  for (size_t i = 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == 'T') {
      if (in_time || !num.empty()) return bad();
      in_time = true;
      next = 0;
    } else if ((c >= '0' && c <= '9') || c == '.' || c == ',') {
      num += c == ',' ? '.' : c;
      if (num.size() > 32) return bad();
    } else {
      char* end = nullptr;
      const double v = num.empty() ? 0 : std::strtod(num.c_str(), &end);
      if (num.empty() || end != num.c_str() + num.size() || !std::isfinite(v)) return bad();
      num.clear();
      const char* names = in_time ? kTime : kDate;
      const int n = in_time ? 3 : 4;
      int k = next;
      while (k < n && names[k] != c) ++k;
      if (k == n) return bad();
      total += v * (in_time ? kTimeS[k] : kDateS[k]);
      next = k + 1;
      ++parts;
      if (in_time) ++time_parts;
    }
  }
  if (!num.empty() || parts == 0 || (in_time && time_parts == 0)) return bad();
  if (!(total <= kMaxGridDurationS)) return bad();
  return total;
}

Result<double> check_ramp_w_per_s(double v, std::string_view field) {
  if (v == 0 || (v >= kMinRampWPerS && v <= kMaxSiteW)) return v;
  return Status::InvalidArgument(std::string(field) + ": " + num_text(v) +
                                 " must be 0 (a step) or 1..1e12 W/s");
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
                                 "best_effort", "correlation_id", "ramp_w_per_s", "ramp_up_w_per_s",
                                 "feed_tags"};
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
    if (!j["ramp_w_per_s"].is_number()) {
      return Status::InvalidArgument("load target: ramp_w_per_s: must be a number");
    }
    FW_ASSIGN_OR_RETURN(t.ramp_w_per_s, check_ramp_w_per_s(j["ramp_w_per_s"].get<double>(),
                                                           "load target: ramp_w_per_s"));
  }
  if (j.contains("ramp_up_w_per_s")) {
    if (!j["ramp_up_w_per_s"].is_number()) {
      return Status::InvalidArgument("load target: ramp_up_w_per_s: must be a number");
    }
    FW_ASSIGN_OR_RETURN(t.ramp_up_w_per_s, check_ramp_w_per_s(j["ramp_up_w_per_s"].get<double>(),
                                                              "load target: ramp_up_w_per_s"));
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

namespace {

// The ramp rates in force, down and up: at least what ends a ramp over the gap within kMaxRampS.
double ramp_rate(double rate_w_per_s, double gap_w) {
  return rate_w_per_s > 0 ? std::max(rate_w_per_s, gap_w / kMaxRampS) : 0.0;
}
double down_rate(const GridTarget& t, double gap_w) { return ramp_rate(t.ramp_w_per_s, gap_w); }
double up_rate(const GridTarget& t, double gap_w) {
  return ramp_rate(t.ramp_up_w_per_s > 0 ? t.ramp_up_w_per_s : t.ramp_w_per_s, gap_w);
}

double event_budget_w(double site_w, const GridTarget& target, double now_unix_s) {
  if (!target.value_w || *target.value_w >= site_w) return site_w;
  const double v = *target.value_w, gap = site_w - v;
  const double rd = down_rate(target, gap), ru = up_rate(target, gap);
  const double down_s = rd > 0 ? gap / rd : 0.0, up_s = ru > 0 ? gap / ru : 0.0;
  const double t = now_unix_s, s = target.start_unix_s, e = target.end_unix_s;
  if (t < s - down_s) return site_w;
  if (t < s) return v + (s - t) * rd;  // ramping down, reaching v at start
  if (e == 0 || t < e) return v;
  if (t < e + up_s) return v + (t - e) * ru;  // ramping back up after end
  return site_w;
}

RampState event_ramp_state(double site_w, const GridTarget& target, double now_unix_s) {
  const double e0 = event_budget_w(site_w, target, now_unix_s);
  if (!target.value_w || *target.value_w >= site_w) return RampState::kIdle;
  // A step (no ramp) is never "ramping"; a ramp moves the budget by its rate each second.
  const double v = *target.value_w, t = now_unix_s;
  const double rd = down_rate(target, site_w - v), ru = up_rate(target, site_w - v);
  const double down_s = rd > 0 ? (site_w - v) / rd : 0.0, up_s = ru > 0 ? (site_w - v) / ru : 0.0;
  if (rd > 0 && t >= target.start_unix_s - down_s && t < target.start_unix_s)
    return RampState::kRampingDown;
  if (ru > 0 && target.end_unix_s > 0 && t >= target.end_unix_s && t < target.end_unix_s + up_s)
    return RampState::kRampingUp;
  return e0 < site_w ? RampState::kHolding : RampState::kIdle;
}

}  // namespace

const GridTarget* binding_event(double site_w, const GridSchedule& schedule, double now_unix_s) {
  const GridTarget* best = nullptr;
  double best_w = site_w;
  for (const GridTarget& e : schedule.events) {
    const double w = event_budget_w(site_w, e, now_unix_s);
    if (w < best_w) {
      best_w = w;
      best = &e;
    }
  }
  return best;
}

double effective_budget_w(double site_w, const GridSchedule& schedule, double now_unix_s) {
  const GridTarget* e = binding_event(site_w, schedule, now_unix_s);
  return e ? event_budget_w(site_w, *e, now_unix_s) : site_w;
}

RampState ramp_state(double site_w, const GridSchedule& schedule, double now_unix_s) {
  const GridTarget* e = binding_event(site_w, schedule, now_unix_s);
  if (e) return event_ramp_state(site_w, *e, now_unix_s);
  // A step event at its start instant, or a ramp's first instant, is not below site_w yet.
  for (const GridTarget& ev : schedule.events) {
    const RampState st = event_ramp_state(site_w, ev, now_unix_s);
    if (st == RampState::kRampingDown) return st;
  }
  return RampState::kIdle;
}

namespace {

std::string group_of(const std::string& correlation_id) {
  return correlation_id.substr(0, correlation_id.find('#'));
}

}  // namespace

ScheduleChange schedule_events(const GridSchedule& current, const std::string& group,
                               const std::vector<GridTarget>& events, double now_unix_s) {
  ScheduleChange out;
  size_t of_group = 0;
  for (const GridTarget& e : current.events) {
    if (e.end_unix_s > 0 && e.end_unix_s + kMaxRampS < now_unix_s) continue;  // long over
    if (group_of(e.correlation_id) == group) {
      ++of_group;
      continue;
    }
    out.schedule.events.push_back(e);
  }
  std::vector<GridTarget> valued;
  bool any_valued = false;
  for (const GridTarget& e : events) {
    if (!e.value_w) continue;
    any_valued = true;
    if (e.end_unix_s > 0 && e.end_unix_s <= now_unix_s) continue;  // this interval is over
    valued.push_back(e);
  }
  if (!any_valued) {
    if (of_group == 0) {
      out.http_status = 404;
      out.error = "no scheduled event \"" + group + "\" to cancel";
    }
    return out;
  }
  if (valued.empty()) {
    out.http_status = 409;
    out.error = "event \"" + group + "\" ended before now (" + num_text(now_unix_s) +
                " unix s): nothing to schedule";
    return out;
  }
  if (out.schedule.events.size() + valued.size() > kMaxGridEvents) {
    out.http_status = 422;
    out.error = "schedule full: at most " + std::to_string(kMaxGridEvents) + " events";
    return out;
  }
  out.added = valued.size();
  for (auto& e : valued) out.schedule.events.push_back(std::move(e));
  std::sort(
      out.schedule.events.begin(), out.schedule.events.end(),
      [](const GridTarget& a, const GridTarget& b) { return a.start_unix_s < b.start_unix_s; });
  return out;
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

// One interval's payloads -> t.value_w (unset for SIMPLE 0). where: "intervals[k]".
Status interval_value(const Json& iv, const std::string& where, const std::string& unit,
                      double site_w, GridTarget* t) {
  if (!iv.contains("payloads") || !iv["payloads"].is_array()) {
    return Status::InvalidArgument("OpenADR event: " + where + ".payloads: missing");
  }
  for (const auto& p : iv["payloads"]) {
    if (!p.is_object() || (p.contains("type") && !p["type"].is_string())) {
      return Status::InvalidArgument("OpenADR event: " + where +
                                     ".payloads: not {\"type\": string}");
    }
    const std::string type = p.value("type", std::string());
    if (!p.contains("values") || !p["values"].is_array() || p["values"].empty() ||
        !p["values"][0].is_number()) {
      continue;
    }
    const double v = p["values"][0].get<double>();
    if (type == "IMPORT_CAPACITY_LIMIT" || type == "DISPATCH_SETPOINT") {
      FW_ASSIGN_OR_RETURN(double scale, unit_scale(unit, "OpenADR event: payloadDescriptors"));
      FW_ASSIGN_OR_RETURN(t->value_w, sane_target_w(v * scale, "OpenADR event: " + type));
      return Status::Ok();
    }
    if (type == "SIMPLE") {
      const int level = v >= -0.5 && v < 3.5 ? int(std::lround(v)) : -1;
      if (level < 0 || level > 3) {
        return Status::InvalidArgument("OpenADR event: SIMPLE level must be 0..3");
      }
      static const double kFraction[] = {1.0, 0.9, 0.7, 0.5};
      if (level > 0) t->value_w = site_w * kFraction[level];
      return Status::Ok();
    }
  }
  return Status::InvalidArgument("OpenADR event: " + where +
                                 ": no IMPORT_CAPACITY_LIMIT, DISPATCH_SETPOINT or SIMPLE payload");
}

Result<std::vector<GridTarget>> openadr_events_json(std::string_view body, double site_w,
                                                    double ramp_w_per_s) {
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("OpenADR event: body is not a JSON object");
  }
  if (!j.contains("intervals") || !j["intervals"].is_array() || j["intervals"].empty()) {
    return Status::InvalidArgument("OpenADR event: intervals: missing or empty");
  }
  const Json& intervals = j["intervals"];
  if (intervals.size() > kMaxGridEvents) {
    return Status::InvalidArgument("OpenADR event: intervals: more than " +
                                   std::to_string(kMaxGridEvents));
  }
  std::string group = "openadr";
  for (const char* key : {"eventName", "id"}) {  // "id" wins
    if (!j.contains(key)) continue;
    if (!j[key].is_string() || j[key].get<std::string>().size() > kMaxCorrelationIdChars) {
      return Status::InvalidArgument(std::string("OpenADR event: ") + key +
                                     ": not a string of at most 256 characters");
    }
    group = j[key].get<std::string>();
  }
  if (group.empty() || group.find('#') != std::string::npos) {
    return Status::InvalidArgument("OpenADR event: id: must be non-empty and without '#'");
  }
  std::string unit = "KW";
  if (j.contains("payloadDescriptors") && j["payloadDescriptors"].is_array()) {
    for (const auto& d : j["payloadDescriptors"]) {
      if (d.contains("units") && d["units"].is_string()) unit = d["units"].get<std::string>();
    }
  }
  const Json* event_period = j.contains("intervalPeriod") ? &j["intervalPeriod"] : nullptr;
  std::vector<GridTarget> out;
  double next_start = -1;  // where the interval before ended (-1: no end known)
  for (size_t k = 0; k < intervals.size(); ++k) {
    const std::string where = "intervals[" + std::to_string(k) + "]";
    const Json& iv = intervals[k];
    if (!iv.is_object())
      return Status::InvalidArgument("OpenADR event: " + where + ": not an object");
    const Json* own = iv.contains("intervalPeriod") ? &iv["intervalPeriod"] : nullptr;
    GridTarget t;
    t.ramp_w_per_s = ramp_w_per_s;
    const std::string pfield = own ? where + ".intervalPeriod" : std::string("intervalPeriod");
    if (own && own->contains("start")) {
      FW_ASSIGN_OR_RETURN(t.start_unix_s,
                          parse_time((*own)["start"], "OpenADR event: " + pfield + ".start"));
    } else if (k > 0) {
      if (next_start < 0) {
        return Status::InvalidArgument("OpenADR event: " + where +
                                       ".intervalPeriod.start: missing (the interval before has "
                                       "no duration)");
      }
      t.start_unix_s = next_start;
    } else if (event_period && event_period->contains("start")) {
      FW_ASSIGN_OR_RETURN(t.start_unix_s, parse_time((*event_period)["start"],
                                                     "OpenADR event: intervalPeriod.start"));
    } else {
      return Status::InvalidArgument("OpenADR event: intervalPeriod.start: missing");
    }
    const Json* dperiod = own && own->contains("duration")                     ? own
                          : event_period && event_period->contains("duration") ? event_period
                                                                               : nullptr;
    next_start = -1;
    if (dperiod) {
      const std::string dfield =
          "OpenADR event: " + (dperiod == own ? pfield : std::string("intervalPeriod")) +
          ".duration";
      if (!(*dperiod)["duration"].is_string()) {
        return Status::InvalidArgument(dfield + ": not a string");
      }
      FW_ASSIGN_OR_RETURN(double d,
                          parse_duration((*dperiod)["duration"].get<std::string>(), dfield));
      if (d > 0) {
        t.end_unix_s = t.start_unix_s + d;
        next_start = t.end_unix_s;
      }
    }
    t.correlation_id = intervals.size() == 1 ? group : group + "#" + std::to_string(k);
    FW_RETURN_IF_ERROR(
        interval_value(iv, intervals.size() == 1 ? "intervals[0]" : where, unit, site_w, &t));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

Result<std::vector<GridTarget>> translate_openadr_events(std::string_view body, double site_w,
                                                         double ramp_w_per_s) {
  try {  // every field is checked above; this is the last line of defence for a 400
    return openadr_events_json(body, site_w, ramp_w_per_s);
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(std::string("OpenADR event: ") + e.what());
  }
}

Result<GridTarget> translate_openadr_event(std::string_view body, double site_w,
                                           double ramp_w_per_s) {
  FW_ASSIGN_OR_RETURN(std::vector<GridTarget> all,
                      translate_openadr_events(body, site_w, ramp_w_per_s));
  return all.front();
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
                          {{"start", rfc3339_utc(start_unix_s + k * interval_s)},
                           {"duration", iso8601_duration(interval_s)}}},
                         {"payloads", payloads}});
  }
  return {
      {"objectType", "REPORT"},
      {"eventID", event_id},
      {"clientName", resource_name},
      {"payloadDescriptors", Json::array({{{"objectType", "REPORT_PAYLOAD_DESCRIPTOR"},
                                           {"payloadType", "DEMAND"},
                                           {"units", "KW"},
                                           {"readingType", "MEAN"}},
                                          {{"objectType", "REPORT_PAYLOAD_DESCRIPTOR"},
                                           {"payloadType", "USAGE"},
                                           {"units", "KWH"}},
                                          {{"objectType", "REPORT_PAYLOAD_DESCRIPTOR"},
                                           {"payloadType", "BASELINE"},
                                           {"units", "KW"}}})},
      {"resources", Json::array({{{"resourceName", resource_name}, {"intervals", intervals}}})}};
}

}  // namespace fw::fleet
