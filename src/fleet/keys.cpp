#include "fleet/keys.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

namespace fw::fleet {

using Json = nlohmann::json;

// ---- names and keys ----

Status check_name(std::string_view what, std::string_view name) {
  if (name.empty() || name.size() > 64) {
    return Status::InvalidArgument(std::string(what) + " name must be 1-64 characters");
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      return Status::InvalidArgument(std::string(what) + " name \"" + std::string(name) +
                                     "\": only [A-Za-z0-9._-] allowed");
    }
  }
  return Status::Ok();
}

std::string site_prefix(std::string_view site) { return "/flexwatt/" + std::string(site) + "/"; }
std::string nodes_prefix(std::string_view site) { return site_prefix(site) + "nodes/"; }
std::string node_key(std::string_view site, std::string_view node) {
  return nodes_prefix(site) + std::string(node);
}
std::string assign_prefix(std::string_view site) { return site_prefix(site) + "assign/"; }
std::string assign_key(std::string_view site, std::string_view node) {
  return assign_prefix(site) + std::string(node);
}
std::string off_prefix(std::string_view site) { return site_prefix(site) + "off/"; }
std::string join_prefix(std::string_view site) { return site_prefix(site) + "join/"; }
std::string join_key(std::string_view site, std::string_view node) {
  return join_prefix(site) + std::string(node);
}
std::string off_key(std::string_view site, std::string_view node) {
  return off_prefix(site) + std::string(node);
}
std::string budget_key(std::string_view site) { return site_prefix(site) + "budget"; }
std::string plans_prefix(std::string_view site) { return site_prefix(site) + "plans/"; }
std::string plan_key(std::string_view site, std::string_view job) {
  return plans_prefix(site) + std::string(job);
}
std::string grid_target_key(std::string_view site) { return budget_key(site) + "/grid"; }
std::string election_name(std::string_view site) { return site_prefix(site) + "coordinator"; }

Result<std::string> node_of_key(std::string_view site, std::string_view key) {
  for (const std::string& p :
       {nodes_prefix(site), assign_prefix(site), off_prefix(site), join_prefix(site)}) {
    if (key.size() > p.size() && key.substr(0, p.size()) == p) {
      std::string node(key.substr(p.size()));
      FW_RETURN_IF_ERROR(check_name("node", node).with_context(std::string(key)));
      return node;
    }
  }
  return Status::NotFound(std::string(key) + ": not a node or assignment key of site " +
                          std::string(site));
}

// ---- strict JSON reading ----

namespace {

// Reads fields of one JSON object, remembering which were seen so that unknown ones can be
// rejected; every error is "<where>: <path>.<field>: <problem>".
class Fields {
 public:
  Fields(const Json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  Status error(const std::string& field, const std::string& problem) const {
    return Status::InvalidArgument(where_ + field + ": " + problem);
  }
  Status number(const char* f, double* out, bool required, double min, double max = INFINITY) {
    seen_.insert(f);
    auto it = obj_.find(f);
    if (it == obj_.end()) return required ? error(f, "missing") : Status::Ok();
    if (!it->is_number()) return error(f, std::string("not a number (") + it->type_name() + ")");
    const double v = it->get<double>();
    if (!std::isfinite(v) || v < min) return error(f, "must be >= " + fmt_num(min));
    if (v > max) return error(f, "must be <= " + fmt_num(max));
    *out = v;
    return Status::Ok();
  }
  Status integer(const char* f, int64_t* out, bool required, int64_t min, int64_t max = INT64_MAX) {
    seen_.insert(f);
    auto it = obj_.find(f);
    if (it == obj_.end()) return required ? error(f, "missing") : Status::Ok();
    if (!it->is_number_integer()) return error(f, "not an integer");
    const int64_t v = it->get<int64_t>();
    if (v < min) return error(f, "must be >= " + std::to_string(min));
    if (v > max) return error(f, "must be <= " + std::to_string(max));
    *out = v;
    return Status::Ok();
  }
  Status string(const char* f, std::string* out, bool required, bool nonempty) {
    seen_.insert(f);
    auto it = obj_.find(f);
    if (it == obj_.end()) return required ? error(f, "missing") : Status::Ok();
    if (!it->is_string()) return error(f, "not a string");
    *out = it->get<std::string>();
    if (nonempty && out->empty()) return error(f, "must not be empty");
    return Status::Ok();
  }
  Status boolean(const char* f, bool* out, bool required) {
    seen_.insert(f);
    auto it = obj_.find(f);
    if (it == obj_.end()) return required ? error(f, "missing") : Status::Ok();
    if (!it->is_boolean()) return error(f, "not a boolean");
    *out = it->get<bool>();
    return Status::Ok();
  }
  // Fails on a field no reader asked for.
  Status no_unknown() const {
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      if (!seen_.count(it.key())) return error(it.key(), "unknown field");
    }
    return Status::Ok();
  }
  const Json& obj() const { return obj_; }
  const std::string& where() const { return where_; }
  void mark(const char* f) { seen_.insert(f); }

 private:
  static std::string fmt_num(double v) {
    Json j = v;
    return j.dump();
  }
  const Json& obj_;
  std::string where_;
  std::set<std::string> seen_;
};

Result<Json> parse_object(std::string_view text, std::string_view where) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::InvalidArgument(std::string(where) + ": not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument(std::string(where) + ": not a JSON object");
  return j;
}

Result<JobRecord> decode_job(const Json& j, const std::string& where) {
  if (!j.is_object()) return Status::InvalidArgument(where + ": not an object");
  Fields f(j, where + ".");
  JobRecord r;
  int64_t gpus = 0;
  FW_RETURN_IF_ERROR(f.string("id", &r.id, true, true));
  FW_RETURN_IF_ERROR(f.integer("gpus", &gpus, true, 1, kMaxRecordGpus));
  FW_RETURN_IF_ERROR(f.number("draw_w", &r.draw_w, true, 0, kMaxNodeW));
  FW_RETURN_IF_ERROR(f.number("elasticity", &r.elasticity, true, 0));
  FW_RETURN_IF_ERROR(f.number("pfi", &r.pfi, true, 0, 100));
  FW_RETURN_IF_ERROR(f.number("min_w", &r.min_w, false, 0, kMaxNodeW));
  FW_RETURN_IF_ERROR(f.number("tier_min", &r.tier_min, false, 0, 1));
  FW_RETURN_IF_ERROR(f.boolean("pausable", &r.pausable, false));
  FW_RETURN_IF_ERROR(f.number("starts_at_unix_s", &r.starts_at_unix_s, false, 0, kMaxRecordUnixS));
  FW_RETURN_IF_ERROR(f.number("ends_at_unix_s", &r.ends_at_unix_s, false, 0, kMaxRecordUnixS));
  FW_RETURN_IF_ERROR(f.no_unknown());
  r.gpus = static_cast<int>(gpus);
  return r;
}

// A [[budget_w, value], ...] curve of a node record (draw_curve, throughput_curve): 2..
// kMaxCurvePoints points, budgets in [0, kMaxNodeW] strictly increasing, values in [0, max_v].
Status decode_curve(Fields& f, const Json& j, const char* name, const char* value_name,
                    double max_v, std::vector<std::pair<double, double>>* out) {
  auto c = j.find(name);
  if (c == j.end()) return Status::Ok();
  f.mark(name);
  if (!c->is_array()) return f.error(name, "not an array");
  if (c->size() < 2 || c->size() > kMaxCurvePoints) {
    return f.error(name, "needs 2.." + std::to_string(kMaxCurvePoints) + " points");
  }
  for (size_t i = 0; i < c->size(); ++i) {
    const Json& p = (*c)[i];
    const std::string field = std::string(name) + "[" + std::to_string(i) + "]";
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) {
      return f.error(field, std::string("not a [budget_w, ") + value_name + "] pair");
    }
    const double b = p[0].get<double>(), d = p[1].get<double>();
    if (!std::isfinite(b) || b < 0 || b > kMaxNodeW) return f.error(field, "budget_w out of range");
    if (!std::isfinite(d) || d < 0 || d > max_v) {
      return f.error(field, std::string(value_name) + " out of range");
    }
    if (!out->empty() && !(b > out->back().first)) return f.error(field, "budgets must increase");
    out->emplace_back(b, d);
  }
  return Status::Ok();
}

}  // namespace

// ---- records ----

int set_job_pfi(NodeRecord& record, const std::map<std::string, double>& pfi_by_job) {
  int set = 0;
  for (JobRecord& j : record.jobs) {
    auto it = pfi_by_job.find(j.id);
    if (it == pfi_by_job.end() || !std::isfinite(it->second) || !(it->second > 0)) continue;
    j.pfi = it->second;
    ++set;
  }
  return set;
}

std::string encode(const NodeRecord& r) {
  Json jobs = Json::array();
  for (const auto& j : r.jobs) {
    Json o = {{"id", j.id},
              {"gpus", j.gpus},
              {"draw_w", j.draw_w},
              {"elasticity", j.elasticity},
              {"pfi", j.pfi}};
    if (j.min_w > 0) o["min_w"] = j.min_w;
    if (j.tier_min > 0) o["tier_min"] = j.tier_min;
    if (j.pausable) o["pausable"] = true;
    if (j.starts_at_unix_s > 0) o["starts_at_unix_s"] = j.starts_at_unix_s;
    if (j.ends_at_unix_s > 0) o["ends_at_unix_s"] = j.ends_at_unix_s;
    jobs.push_back(std::move(o));
  }
  Json out = {{"node", r.node},
              {"gpus", r.gpus},
              {"nameplate_w", r.nameplate_w},
              {"min_w", r.min_w},
              {"draw_w", r.draw_w},
              {"cap_w", r.cap_w},
              {"jobs", std::move(jobs)},
              {"time_unix_s", r.time_unix_s},
              {"safe_w", r.safe_w},
              {"uncontrolled_w", r.uncontrolled_w}};
  if (r.paused_draw_w >= 0) out["paused_draw_w"] = r.paused_draw_w;
  if (!r.draw_curve.empty()) {
    Json c = Json::array();
    for (const auto& [b, d] : r.draw_curve) c.push_back(Json::array({b, d}));
    out["draw_curve"] = std::move(c);
  }
  if (!r.throughput_curve.empty()) {
    Json c = Json::array();
    for (const auto& [b, t] : r.throughput_curve) c.push_back(Json::array({b, t}));
    out["throughput_curve"] = std::move(c);
  }
  return out.dump();
}

double curve_draw_w(const std::vector<std::pair<double, double>>& curve, double budget_w) {
  if (curve.empty()) return budget_w;
  if (budget_w <= curve.front().first) {
    const double b0 = curve.front().first;
    return b0 > 0 ? std::min(budget_w, curve.front().second * std::max(0.0, budget_w) / b0)
                  : curve.front().second;
  }
  for (size_t i = 1; i < curve.size(); ++i) {
    if (budget_w <= curve[i].first) {
      const auto& [b0, d0] = curve[i - 1];
      const auto& [b1, d1] = curve[i];
      return d0 + (d1 - d0) * (budget_w - b0) / (b1 - b0);
    }
  }
  return curve.back().second;
}

Result<NodeRecord> decode_node(std::string_view text, std::string_view where) {
  FW_ASSIGN_OR_RETURN(Json j, parse_object(text, where));
  Fields f(j, std::string(where) + ": ");
  NodeRecord r;
  int64_t gpus = 0;
  FW_RETURN_IF_ERROR(f.string("node", &r.node, true, true));
  FW_RETURN_IF_ERROR(check_name("node", r.node).with_context(f.where() + "node"));
  FW_RETURN_IF_ERROR(f.integer("gpus", &gpus, true, 1, kMaxRecordGpus));
  FW_RETURN_IF_ERROR(f.number("nameplate_w", &r.nameplate_w, true, 1e-9, kMaxNodeW));
  FW_RETURN_IF_ERROR(f.number("min_w", &r.min_w, true, 0, r.nameplate_w));
  FW_RETURN_IF_ERROR(f.number("draw_w", &r.draw_w, true, 0, kMaxNodeW));
  FW_RETURN_IF_ERROR(f.number("cap_w", &r.cap_w, true, 0, kMaxNodeW));
  FW_RETURN_IF_ERROR(f.number("time_unix_s", &r.time_unix_s, true, 0, kMaxRecordUnixS));
  FW_RETURN_IF_ERROR(f.number("safe_w", &r.safe_w, false, 0, kMaxNodeW));
  FW_RETURN_IF_ERROR(f.number("uncontrolled_w", &r.uncontrolled_w, false, 0, kMaxNodeW));
  FW_RETURN_IF_ERROR(f.number("paused_draw_w", &r.paused_draw_w, false, 0, kMaxNodeW));
  f.mark("jobs");
  auto jobs = j.find("jobs");
  if (jobs == j.end()) return f.error("jobs", "missing");
  if (!jobs->is_array()) return f.error("jobs", "not an array");
  int64_t job_gpus = 0;
  for (size_t i = 0; i < jobs->size(); ++i) {
    FW_ASSIGN_OR_RETURN(JobRecord job,
                        decode_job((*jobs)[i], f.where() + "jobs[" + std::to_string(i) + "]"));
    job_gpus += job.gpus;
    r.jobs.push_back(std::move(job));
  }
  if (job_gpus > gpus) {
    return f.error("jobs",
                   "use " + std::to_string(job_gpus) + " GPUs, node has " + std::to_string(gpus));
  }
  FW_RETURN_IF_ERROR(decode_curve(f, j, "draw_curve", "draw_w", kMaxNodeW, &r.draw_curve));
  FW_RETURN_IF_ERROR(decode_curve(f, j, "throughput_curve", "t_rel", 1.5, &r.throughput_curve));
  FW_RETURN_IF_ERROR(f.no_unknown());
  r.gpus = static_cast<int>(gpus);
  return r;
}

std::string encode(const Assignment& r) {
  Json j = {{"watts", r.watts}, {"revision", r.revision}, {"expires_unix_s", r.expires_unix_s}};
  if (!r.reason.empty()) j["reason"] = r.reason;
  if (r.safe_w > 0) j["safe_w"] = r.safe_w;
  if (r.reserve_w > 0) j["reserve_w"] = r.reserve_w;
  if (r.pause) j["pause"] = true;
  if (r.start_at_unix_s > 0) j["start_at_unix_s"] = r.start_at_unix_s;
  if (r.stop_at_unix_s > 0) j["stop_at_unix_s"] = r.stop_at_unix_s;
  return j.dump();
}

Result<Assignment> decode_assignment(std::string_view text, std::string_view where) {
  FW_ASSIGN_OR_RETURN(Json j, parse_object(text, where));
  Fields f(j, std::string(where) + ": ");
  Assignment r;
  FW_RETURN_IF_ERROR(f.number("watts", &r.watts, true, 0, kMaxNodeW));
  FW_RETURN_IF_ERROR(f.integer("revision", &r.revision, true, 1));
  FW_RETURN_IF_ERROR(f.number("expires_unix_s", &r.expires_unix_s, true, 0, kMaxRecordUnixS));
  FW_RETURN_IF_ERROR(f.string("reason", &r.reason, false, false));
  FW_RETURN_IF_ERROR(f.number("safe_w", &r.safe_w, false, 0, kMaxNodeW));
  FW_RETURN_IF_ERROR(f.number("reserve_w", &r.reserve_w, false, 0, kMaxNodeW));
  FW_RETURN_IF_ERROR(f.boolean("pause", &r.pause, false));
  FW_RETURN_IF_ERROR(f.number("start_at_unix_s", &r.start_at_unix_s, false, 0, kMaxRecordUnixS));
  FW_RETURN_IF_ERROR(f.number("stop_at_unix_s", &r.stop_at_unix_s, false, 0, kMaxRecordUnixS));
  FW_RETURN_IF_ERROR(f.no_unknown());
  return r;
}

std::string encode(const SiteBudget& r) {
  return Json{{"watts", r.watts},
              {"window_s", r.window_s},
              {"source", r.source},
              {"time_unix_s", r.time_unix_s}}
      .dump();
}

Result<SiteBudget> decode_budget(std::string_view text, std::string_view where) {
  FW_ASSIGN_OR_RETURN(Json j, parse_object(text, where));
  Fields f(j, std::string(where) + ": ");
  SiteBudget r;
  FW_RETURN_IF_ERROR(f.number("watts", &r.watts, true, 1e-9, kMaxSiteW));
  FW_RETURN_IF_ERROR(f.number("window_s", &r.window_s, false, 1e-9, 86400));
  FW_RETURN_IF_ERROR(f.string("source", &r.source, true, true));
  FW_RETURN_IF_ERROR(f.number("time_unix_s", &r.time_unix_s, true, 0, kMaxRecordUnixS));
  FW_RETURN_IF_ERROR(f.no_unknown());
  return r;
}

std::string encode(const JoinMarker& r) { return Json{{"min_w", r.min_w}}.dump(); }

Result<JoinMarker> decode_join(std::string_view text, std::string_view where) {
  FW_ASSIGN_OR_RETURN(Json j, parse_object(text, where));
  Fields f(j, std::string(where) + ": ");
  JoinMarker r;
  FW_RETURN_IF_ERROR(f.number("min_w", &r.min_w, true, 0, kMaxNodeW));
  FW_RETURN_IF_ERROR(f.no_unknown());
  return r;
}

std::string encode(const GridTarget& r) {
  Json j = {{"value_w", r.value_w ? Json(*r.value_w) : Json(nullptr)},
            {"start_unix_s", r.start_unix_s},
            {"end_unix_s", r.end_unix_s},
            {"ramp_w_per_s", r.ramp_w_per_s},
            {"ramp_up_w_per_s", r.ramp_up_w_per_s},
            {"best_effort", r.best_effort},
            {"correlation_id", r.correlation_id}};
  return j.dump();
}

Result<GridTarget> decode_grid_target(std::string_view text, std::string_view where) {
  FW_ASSIGN_OR_RETURN(Json j, parse_object(text, where));
  Fields f(j, std::string(where) + ": ");
  GridTarget r;
  f.mark("value_w");
  auto v = j.find("value_w");
  if (v == j.end()) return f.error("value_w", "missing (null means the site default)");
  if (!v->is_null()) {
    double w = 0;
    FW_RETURN_IF_ERROR(f.number("value_w", &w, true, 0, kMaxSiteW));
    r.value_w = w;
  }
  FW_RETURN_IF_ERROR(f.number("start_unix_s", &r.start_unix_s, true, 0, kMaxRecordUnixS));
  FW_RETURN_IF_ERROR(f.number("end_unix_s", &r.end_unix_s, true, 0, kMaxRecordUnixS));
  if (r.end_unix_s != 0 && r.end_unix_s <= r.start_unix_s) {
    return f.error("end_unix_s", "must be 0 (open) or after start_unix_s");
  }
  FW_RETURN_IF_ERROR(f.number("ramp_w_per_s", &r.ramp_w_per_s, false, 0, kMaxSiteW));
  FW_RETURN_IF_ERROR(f.number("ramp_up_w_per_s", &r.ramp_up_w_per_s, false, 0, kMaxSiteW));
  FW_RETURN_IF_ERROR(f.boolean("best_effort", &r.best_effort, false));
  FW_RETURN_IF_ERROR(f.string("correlation_id", &r.correlation_id, true, true));
  FW_RETURN_IF_ERROR(f.no_unknown());
  return r;
}

std::string encode(const GridSchedule& r) {
  Json events = Json::array();
  for (const GridTarget& e : r.events) events.push_back(Json::parse(encode(e)));
  return Json{{"events", events}}.dump();
}

Result<GridSchedule> decode_grid_schedule(std::string_view text, std::string_view where) {
  FW_ASSIGN_OR_RETURN(Json j, parse_object(text, where));
  if (!j.contains("events")) {  // one target: the layout before schedules
    FW_ASSIGN_OR_RETURN(GridTarget t, decode_grid_target(text, where));
    return GridSchedule(t);
  }
  if (j.size() != 1) return Status::InvalidArgument(std::string(where) + ": only \"events\"");
  const Json& ev = j["events"];
  if (!ev.is_array() || ev.size() > 1024) {
    return Status::InvalidArgument(std::string(where) + ": events: an array of at most 1024");
  }
  GridSchedule s;
  for (size_t i = 0; i < ev.size(); ++i) {
    FW_ASSIGN_OR_RETURN(GridTarget t,
                        decode_grid_target(ev[i].dump(), std::string(where) + ": events[" +
                                                             std::to_string(i) + "]"));
    if (t.value_w) s.events.push_back(std::move(t));
  }
  return s;
}

}  // namespace fw::fleet
