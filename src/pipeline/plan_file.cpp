#include "pipeline/plan_file.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/text_file.hpp"

namespace fw::pipeline {
namespace {

using nlohmann::json;

// Field checks: each returns InvalidArgument "SOURCE: FIELD: why".
struct Checker {
  const std::string& source;
  Status bad(const std::string& field, const std::string& why) const {
    return Status::InvalidArgument(source + ": " + field + ": " + why);
  }
  // A finite number in [lo, hi] at j[key] (required unless `optional`; absent then keeps *out).
  Status number(const json& j, const std::string& key, const std::string& field, double lo,
                double hi, double* out, bool optional = false) const {
    if (!j.contains(key)) return optional ? Status::Ok() : bad(field, "missing");
    const json& v = j.at(key);
    if (!v.is_number()) return bad(field, "expected a number");
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < lo || x > hi) {
      return bad(field, "out of range (" + v.dump() + "; expected " + json(lo).dump() + " to " +
                            json(hi).dump() + ")");
    }
    *out = x;
    return Status::Ok();
  }
  Status integer(const json& j, const std::string& key, const std::string& field, int lo, int hi,
                 int* out) const {
    if (!j.contains(key)) return bad(field, "missing");
    const json& v = j.at(key);
    if (!v.is_number_integer()) return bad(field, "expected an integer");
    const auto x = v.get<int64_t>();
    if (x < lo || x > hi) {
      return bad(field, "out of range (" + v.dump() + "; expected " + std::to_string(lo) + " to " +
                            std::to_string(hi) + ")");
    }
    *out = static_cast<int>(x);
    return Status::Ok();
  }
  Status object(const json& j, const std::string& key, const std::string& field) const {
    if (!j.contains(key)) return bad(field, "missing");
    if (!j.at(key).is_object()) return bad(field, "expected an object");
    return Status::Ok();
  }
};

// e["cap_w"]: a cap in W (> 0) or null (uncapped), at field f.
Status parse_cap(const Checker& c, const json& e, const std::string& f, bool& uncapped,
                 double& cap_w) {
  if (!e.contains("cap_w")) return c.bad(f + ".cap_w", "missing (null: no cap written)");
  if (e.at("cap_w").is_null()) {
    uncapped = true;
    return Status::Ok();
  }
  uncapped = false;
  const json& v = e.at("cap_w");
  cap_w = v.is_number() ? v.get<double>() : 0.0;
  if (!v.is_number() || !std::isfinite(cap_w) || cap_w <= 0 || cap_w > 1e5) {
    return c.bad(f + ".cap_w", "expected a cap in W (> 0) or null, not " + v.dump());
  }
  return Status::Ok();
}

Status parse_stage(const Checker& c, const json& e, int i, PlannedStageCap& out) {
  const std::string f = "constant.stages[" + std::to_string(i) + "]";
  if (!e.is_object()) return c.bad(f, "expected an object");
  int stage = -1;
  FW_RETURN_IF_ERROR(c.integer(e, "stage", f + ".stage", 0, 4095, &stage));
  if (stage != i)
    return c.bad(f + ".stage", "expected " + std::to_string(i) + " (stages in order)");
  FW_RETURN_IF_ERROR(parse_cap(c, e, f, out.uncapped, out.cap_w));
  FW_RETURN_IF_ERROR(c.number(e, "forward_mhz", f + ".forward_mhz", 0, 1e5, &out.forward_mhz));
  FW_RETURN_IF_ERROR(c.number(e, "backward_mhz", f + ".backward_mhz", 0, 1e5, &out.backward_mhz));
  return Status::Ok();
}

// The step-keyed schedule (plan_file.hpp): read where every segment has a start_s.
Status parse_schedule(const Checker& c, const json& sc, const json& sg, PlanFile& p) {
  for (const json& st : sg) {
    for (const json& g : st) {
      if (!g.is_object() || !g.contains("start_s")) return Status::Ok();  // an older plan
    }
  }
  FW_RETURN_IF_ERROR(
      c.number(sc, "pipeline_time_s", "schedule.pipeline_time_s", 1e-9, 1e9, &p.schedule_time_s));
  p.schedule.assign(sg.size(), {});
  for (size_t i = 0; i < sg.size(); ++i) {
    for (size_t k = 0; k < sg[i].size(); ++k) {
      const std::string f =
          "schedule.segments[" + std::to_string(i) + "][" + std::to_string(k) + "]";
      ScheduledCap s;
      FW_RETURN_IF_ERROR(
          c.number(sg[i][k], "start_s", f + ".start_s", 0, p.schedule_time_s, &s.start_s));
      FW_RETURN_IF_ERROR(parse_cap(c, sg[i][k], f, s.uncapped, s.cap_w));
      p.schedule[i].push_back(s);
    }
    std::sort(p.schedule[i].begin(), p.schedule[i].end(),
              [](const ScheduledCap& a, const ScheduledCap& b) { return a.start_s < b.start_s; });
  }
  return Status::Ok();
}

Status parse(const json& j, const Checker& c, PlanFile& p) {
  if (!j.is_object()) return c.bad("(document)", "expected a JSON object (pipeline plan --json)");
  FW_RETURN_IF_ERROR(c.integer(j, "stages", "stages", 1, 4096, &p.stages));
  FW_RETURN_IF_ERROR(c.integer(j, "microbatches", "microbatches", 1, 100000000, &p.microbatches));
  if (!j.contains("mode")) return c.bad("mode", "missing");
  if (!j.at("mode").is_string()) return c.bad("mode", "expected a string");
  p.best_mode = j.at("mode").get<std::string>();
  if (p.best_mode != "constant" && p.best_mode != "schedule") {
    return c.bad("mode", "expected \"constant\" or \"schedule\", not \"" + p.best_mode + "\"");
  }
  double factor = 1;
  FW_RETURN_IF_ERROR(c.number(j, "straggler_factor", "straggler_factor", 1, 100, &factor, true));
  if (factor != 1) {
    return c.bad("straggler_factor",
                 "a straggler plan (" + j.at("straggler_factor").dump() +
                     ") sets the other pipelines' caps, and the node cannot tell which pipeline "
                     "straggles: plan without --straggler-factor");
  }
  if (j.contains("gpu")) {
    if (!j.at("gpu").is_string()) return c.bad("gpu", "expected a string");
    p.gpu = j.at("gpu").get<std::string>();
  }
  if (j.contains("cap_range_w")) {
    const json& r = j.at("cap_range_w");
    if (!r.is_array() || r.size() != 2 || !r[0].is_number() || !r[1].is_number()) {
      return c.bad("cap_range_w", "expected [min, max] in W");
    }
    p.cap_min_w = r[0].get<double>();
    p.cap_max_w = r[1].get<double>();
    if (!std::isfinite(p.cap_min_w) || !std::isfinite(p.cap_max_w) || p.cap_min_w < 0 ||
        p.cap_max_w < p.cap_min_w) {
      return c.bad("cap_range_w", "expected finite 0 <= min <= max, not " + r.dump());
    }
  }
  FW_RETURN_IF_ERROR(c.number(j, "min_segment_s", "min_segment_s", 0, 1e6, &p.min_segment_s, true));
  FW_RETURN_IF_ERROR(c.object(j, "constant", "constant"));
  const json& con = j.at("constant");
  FW_RETURN_IF_ERROR(c.number(con, "energy_saved", "constant.energy_saved", -1e6, 1,
                              &p.constant_energy_saved, true));
  FW_RETURN_IF_ERROR(c.number(con, "time_increase", "constant.time_increase", -1, 1e6,
                              &p.constant_time_increase, true));
  if (!con.contains("stages")) return c.bad("constant.stages", "missing");
  const json& st = con.at("stages");
  if (!st.is_array()) return c.bad("constant.stages", "expected an array");
  if (static_cast<int>(st.size()) != p.stages) {
    return c.bad("constant.stages", std::to_string(st.size()) + " entries for " +
                                        std::to_string(p.stages) + " stages");
  }
  p.constant.assign(static_cast<size_t>(p.stages), {});
  for (int i = 0; i < p.stages; ++i) FW_RETURN_IF_ERROR(parse_stage(c, st[i], i, p.constant[i]));
  if (j.contains("schedule")) {
    const json& sc = j.at("schedule");
    if (!sc.is_object()) return c.bad("schedule", "expected an object");
    FW_RETURN_IF_ERROR(c.number(sc, "energy_saved", "schedule.energy_saved", -1e6, 1,
                                &p.schedule_energy_saved, true));
    if (sc.contains("segments")) {
      const json& sg = sc.at("segments");
      if (!sg.is_array() || static_cast<int>(sg.size()) != p.stages) {
        return c.bad("schedule.segments",
                     "expected an array of " + std::to_string(p.stages) + " stages' segments");
      }
      for (size_t i = 0; i < sg.size(); ++i) {
        if (!sg[i].is_array() || sg[i].empty()) {
          return c.bad("schedule.segments[" + std::to_string(i) + "]",
                       "expected an array of at least one segment");
        }
        if (sg[i].size() > 1) p.schedule_switches = true;
      }
      FW_RETURN_IF_ERROR(parse_schedule(c, sc, sg, p));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<PlanFile> parse_plan_json(const std::string& text, const std::string& source) {
  const Checker c{source};
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return Status::InvalidArgument(source + ": not JSON (parse error at byte " +
                                   std::to_string(e.byte) + ")");
  }
  PlanFile p;
  p.source = source;
  try {
    FW_RETURN_IF_ERROR(parse(j, c, p));
  } catch (const json::exception& e) {  // not expected: every access is checked first
    return Status::InvalidArgument(source + ": " + e.what());
  }
  return p;
}

Result<PlanFile> read_plan_file(const std::string& path) {
  FW_ASSIGN_OR_RETURN(const std::string text, read_text_file(path));
  return parse_plan_json(text, path);
}

}  // namespace fw::pipeline
