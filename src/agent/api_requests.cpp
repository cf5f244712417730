#include "agent/api_requests.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <tuple>

#include "control/controller_spec.hpp"
#include "core/format.hpp"
#include "core/json_int.hpp"
#include "core/json_unique_keys.hpp"
#include "vocab/budget.hpp"

namespace fw::agent {
namespace {

using nlohmann::json;

HttpError bad(std::string m) { return {400, std::move(m)}; }
HttpError invalid(std::string m) { return {422, std::move(m)}; }

// A key given twice is refused (400) rather than read as nlohmann's last one: another reader
// of the same body (a proxy, the audit log's reader) may take the first.
std::optional<HttpError> parse_object(std::string_view body, json& out) {
  std::string duplicate;
  out = parse_json_unique_keys(body, &duplicate);
  if (!duplicate.empty()) {
    return bad(duplicate + ": duplicate key (a key may appear once in an object)");
  }
  if (out.is_discarded()) return bad("body is not valid JSON");
  if (!out.is_object()) return bad("body must be a JSON object");
  return std::nullopt;
}

std::optional<HttpError> only_keys(const json& j, std::initializer_list<const char*> keys,
                                   const std::string& where) {
  for (const auto& [k, v] : j.items()) {
    bool known = false;
    for (const char* key : keys) known = known || k == key;
    if (!known) {
      std::string list;
      for (const char* key : keys) list += (list.empty() ? "" : ", ") + std::string(key);
      return invalid(where + k + ": unknown field (valid: " + list + ")");
    }
  }
  return std::nullopt;
}

// A number field in [lo, hi]; `fallback` when absent (NaN fallback: required).
std::optional<HttpError> number(const json& j, const char* key, const std::string& where, double lo,
                                double hi, double fallback, double& out) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (std::isnan(fallback)) return invalid(where + key + ": required");
    out = fallback;
    return std::nullopt;
  }
  if (!it->is_number()) return bad(where + key + ": must be a number");
  double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    return invalid(where + key + ": " + it->dump() + " is out of range [" + format_g(lo, 15) +
                   ", " + format_g(hi, 15) + "]");
  }
  out = v;
  return std::nullopt;
}

std::optional<HttpError> string_field(const json& j, const char* key, size_t max_len,
                                      std::string& out) {
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (!it->is_string()) return bad(std::string(key) + ": must be a string");
  out = it->get<std::string>();
  if (out.size() > max_len) {
    return invalid(std::string(key) + ": longer than " + std::to_string(max_len) + " characters");
  }
  return std::nullopt;
}

std::optional<HttpError> expected_version(const json& j, std::optional<uint64_t>& out) {
  auto it = j.find("expected_version");
  if (it == j.end()) return std::nullopt;
  if (!it->is_number_unsigned()) return bad("expected_version: must be a non-negative integer");
  out = it->get<uint64_t>();
  return std::nullopt;
}

std::optional<HttpError> schedule_entries(const json& j, double window_s, BudgetState& b) {
  auto it = j.find("schedule");
  if (it == j.end()) return std::nullopt;
  if (!it->is_array()) return bad("schedule: must be an array");
  if (it->size() > kMaxScheduleEntries) {
    return invalid("schedule: more than " + std::to_string(kMaxScheduleEntries) + " entries");
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const json& e = (*it)[i];
    std::string where = "schedule[" + std::to_string(i) + "].";
    if (!e.is_object()) return bad(where.substr(0, where.size() - 1) + ": must be an object");
    if (auto err = only_keys(e, {"after_s", "watts", "window_s"}, where)) return err;
    BudgetEntry entry;
    if (auto err = number(e, "after_s", where, 0, 1e9, NAN, entry.after_s)) return err;
    if (auto err = number(e, "watts", where, kMinBudgetW, kMaxBudgetW, NAN, entry.watts)) {
      return err;
    }
    if (auto err =
            number(e, "window_s", where, kMinWindowS, kMaxWindowS, window_s, entry.window_s)) {
      return err;
    }
    if (entry.after_s <= b.schedule.back().after_s) {
      return invalid(where + "after_s: must be greater than the previous entry's");
    }
    b.schedule.push_back(entry);
  }
  return std::nullopt;
}

}  // namespace

std::optional<HttpError> parse_budget_request(std::string_view body, BudgetRequest& out) {
  json j;
  if (auto err = parse_object(body, j)) return err;
  if (auto err = only_keys(j, {"watts", "window_s", "scope", "schedule", "expected_version"}, "")) {
    return err;
  }
  BudgetEntry first;
  if (auto err = number(j, "watts", "", kMinBudgetW, kMaxBudgetW, NAN, first.watts)) return err;
  if (auto err = number(j, "window_s", "", kMinWindowS, kMaxWindowS, 30, first.window_s)) {
    return err;
  }
  BudgetState b;
  b.source = "api";
  if (auto err = string_field(j, "scope", 16, b.scope)) return err;
  BudgetScope scope;
  if (!fw::scope_from_name(b.scope, scope)) {
    return invalid("scope: '" + b.scope + "' is not one of gpu, job, node, fleet");
  }
  b.schedule.push_back(first);
  if (auto err = schedule_entries(j, first.window_s, b)) return err;
  b.watts = first.watts;
  b.window_s = first.window_s;
  if (auto err = expected_version(j, out.expected_version)) return err;
  out.budget = std::move(b);
  return std::nullopt;
}

std::optional<HttpError> parse_controller_request(std::string_view body, ControllerRequest& out) {
  json j;
  if (auto err = parse_object(body, j)) return err;
  if (auto err = only_keys(j, {"controller", "expected_version"}, "")) return err;
  if (!j.contains("controller")) return invalid("controller: required");
  if (auto err = string_field(j, "controller", kMaxControllerSpec, out.spec)) return err;
  auto spec = parse_controller_spec(out.spec);
  if (!spec.ok()) return invalid("controller: " + spec.status().message());
  return expected_version(j, out.expected_version);
}

bool valid_job_id(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

namespace {

// number(), for a whole number (8 and 8.0 are; 8.5 is not: said before the range).
std::optional<HttpError> whole_number(const json& j, const char* key, const std::string& where,
                                      double lo, double hi, double fallback, double& out) {
  if (auto it = j.find(key); it != j.end() && it->is_number()) {
    const double v = it->get<double>();
    if (std::isfinite(v) && std::floor(v) != v) {
      return invalid(where + key + ": " + it->dump() + " is not a whole number");
    }
  }
  return number(j, key, where, lo, hi, fallback, out);
}

// An optional announcement of a progress report: absent leaves `out` unknown (NaN).
std::optional<HttpError> announcement(const json& j, const char* key, double hi, bool whole,
                                      double& out) {
  out = kUnset;
  if (!j.contains(key)) return std::nullopt;
  const double lo = whole ? 1 : 0;  // checkpoint_in_iters: 1 is the iteration under way
  return whole ? whole_number(j, key, "", lo, hi, 0, out) : number(j, key, "", lo, hi, 0, out);
}

std::optional<HttpError> job_knobs(const json& j, JobInfo& info) {
  auto it = j.find("knobs");
  if (it == j.end()) return std::nullopt;
  if (!it->is_object()) return bad("knobs: must be an object");
  for (const auto& [name, spec] : it->items()) {
    int k = -1;
    for (int i = 0; i < kNumKnobs; ++i) {
      if (name == kKnobNames[i]) k = i;
    }
    std::string where = "knobs." + name;
    if (k < 0) {
      std::string valid;  // the actuator table's per-job rows
      for (std::string_view n : kKnobNames) valid += (valid.empty() ? "" : ", ") + std::string(n);
      return invalid(where + ": unknown knob (valid: " + valid + ")");
    }
    if (!spec.is_object()) return bad(where + ": must be an object");
    where += ".";
    if (auto err = only_keys(spec, {"min", "max", "step", "default"}, where)) return err;
    // Knobs are counts (concurrency, group size): the ladder min + n·step and the default are
    // whole numbers, so every value the job is handed is one (answered as a JSON integer).
    KnobRange& r = info.knob_ranges[k];
    if (auto err = whole_number(spec, "min", where, 0, kMaxKnob, NAN, r.min)) return err;
    if (auto err = whole_number(spec, "max", where, r.min, kMaxKnob, NAN, r.max)) return err;
    if (auto err = whole_number(spec, "step", where, 1, kMaxKnob, 1, r.step)) return err;
    double def = 0;
    if (auto err = whole_number(spec, "default", where, r.min, r.max, r.max, def)) return err;
    r.available = true;
    info.default_knobs[k] = def;
  }
  return std::nullopt;
}

}  // namespace

std::optional<HttpError> parse_job_request(std::string_view body, JobRequest& out) {
  json j;
  if (auto err = parse_object(body, j)) return err;
  if (auto err = only_keys(
          j, {"id", "name", "kind", "gpus", "knobs", "pfi", "fill", "pipeline_stages"}, "")) {
    return err;
  }
  if (auto it = j.find("fill"); it != j.end()) {
    if (!it->is_boolean()) return bad("fill: must be true or false");
    out.fill = it->get<bool>();
  }
  if (j.contains("pfi")) {
    if (auto err = number(j, "pfi", "", 1e-6, 100, NAN, out.pfi)) return err;
  }
  if (auto err = string_field(j, "id", 64, out.id)) return err;
  if (j.contains("id") && !valid_job_id(out.id)) {
    return invalid("id: must be 1-64 characters of A-Z a-z 0-9 _ . -");
  }
  if (auto err = string_field(j, "name", 128, out.info.name)) return err;
  if (auto err = string_field(j, "kind", 32, out.info.kind)) return err;
  if (auto it = j.find("gpus"); it != j.end()) {
    if (!it->is_array()) return bad("gpus: must be an array of GPU indices or of GPU UUIDs");
    if (it->size() > kMaxJobGpus) return invalid("gpus: more than 64 entries");
    const bool by_uuid = !it->empty() && it->front().is_string();
    for (const auto& g : *it) {
      if (by_uuid) {  // "GPU-…" / "MIG-…" / "sim-N": resolved by the server
        if (!g.is_string()) return bad("gpus: all indices or all UUIDs, not both");
        const std::string u = g.get<std::string>();
        if (u.empty() || u.size() > 96 || !std::all_of(u.begin(), u.end(), [](char c) {
              return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
            })) {
          return invalid("gpus: " + g.dump() + " is not a GPU UUID (1-96 of A-Z a-z 0-9 - _)");
        }
        if (std::find(out.gpu_uuids.begin(), out.gpu_uuids.end(), u) != out.gpu_uuids.end()) {
          return invalid("gpus: " + g.dump() + " is listed twice");
        }
        out.gpu_uuids.push_back(u);
        continue;
      }
      if (!g.is_number_integer()) return bad("gpus: all indices or all UUIDs, not both");
      int64_t wide = 0;
      if (!json_int_in(g, 0, 1023, wide)) {
        return invalid("gpus: index " + g.dump() + " is out of range");
      }
      const int v = static_cast<int>(wide);
      if (std::find(out.info.gpus.begin(), out.info.gpus.end(), v) != out.info.gpus.end()) {
        return invalid("gpus: index " + g.dump() + " is listed twice");
      }
      out.info.gpus.push_back(v);
    }
  }
  if (auto it = j.find("pipeline_stages"); it != j.end()) {
    const size_t n = std::max(out.info.gpus.size(), out.gpu_uuids.size());
    if (!it->is_array()) return bad("pipeline_stages: must be an array of stage indices");
    if (it->size() != n || n == 0) {
      return invalid("pipeline_stages: " + std::to_string(it->size()) +
                     " entries; one per GPU in gpus (" + std::to_string(n) + ")");
    }
    for (const auto& s : *it) {
      if (!s.is_number_integer()) return bad("pipeline_stages: must be an array of stage indices");
      int64_t wide = 0;
      if (!json_int_in(s, 0, 4095, wide)) {
        return invalid("pipeline_stages: stage " + s.dump() + " is out of range [0, 4095]");
      }
      out.info.pipeline_stages.push_back(static_cast<int>(wide));
    }
  }
  return job_knobs(j, out.info);
}

std::optional<HttpError> parse_pfi_request(std::string_view body, PfiRequest& out) {
  json j;
  if (auto err = parse_object(body, j)) return err;
  if (auto err = only_keys(j, {"pfi", "source"}, "")) return err;
  if (!j.contains("pfi")) return invalid("pfi: required");
  if (auto err = number(j, "pfi", "", 1e-6, 100, NAN, out.pfi)) return err;
  if (auto err = string_field(j, "source", 32, out.source)) return err;
  if (out.source != "sweep" && out.source != "registration" && out.source != "operator") {
    return invalid("source: must be sweep, registration or operator");
  }
  return std::nullopt;
}

std::optional<HttpError> parse_progress_request(std::string_view body, JobProgress& out) {
  json j;
  if (auto err = parse_object(body, j)) return err;
  if (auto err = only_keys(j,
                           {"tokens_total", "steps_total", "phase", "starts_in_s", "ends_in_s",
                            "checkpoint_in_iters", "checkpoint_s", "step_age_s"},
                           "")) {
    return err;
  }
  if (auto err = number(j, "tokens_total", "", 0, 1e18, NAN, out.tokens_total)) return err;
  if (auto err = number(j, "steps_total", "", 0, 1e15, NAN, out.steps_total)) return err;
  JobAnnouncements& a = out.announced;
  for (const auto& [key, hi, whole, field] :
       {std::tuple{"starts_in_s", kMaxAnnouncedS, false, &a.starts_in_s},
        std::tuple{"ends_in_s", kMaxAnnouncedS, false, &a.ends_in_s},
        std::tuple{"checkpoint_in_iters", 1e15, true, &a.checkpoint_in_iters},
        std::tuple{"checkpoint_s", kMaxAnnouncedS, false, &a.checkpoint_s},
        std::tuple{"step_age_s", kMaxAnnouncedS, false, &a.step_age_s}}) {
    if (auto err = announcement(j, key, hi, whole, *field)) return err;
  }
  std::string phase;
  if (auto err = string_field(j, "phase", 32, phase)) return err;
  if (j.contains("phase")) {
    Phase p;
    if (!phase_from_name(phase, p)) return invalid("phase: '" + phase + "' is not a known phase");
    out.phase = p;
  }
  return std::nullopt;
}

}  // namespace fw::agent
