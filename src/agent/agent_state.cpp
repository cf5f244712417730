#include "agent/agent_state.hpp"

#include <cmath>

namespace fw::agent {
namespace {

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json smoothing_json(const std::optional<GpuState::Smoothing>& s) {
  if (!s) return nlohmann::json();
  return {{"enabled", s->enabled},
          {"profile", s->profile},
          {"floor_pct", num(s->floor_pct)},
          {"ramp_up_w_per_s", num(s->ramp_up_w_per_s)},
          {"ramp_down_w_per_s", num(s->ramp_down_w_per_s)},
          {"hysteresis_ms", num(s->hysteresis_ms)}};
}

nlohmann::json gpu_json(const GpuState& g) {
  nlohmann::json out = {{"index", g.index},
                        {"uuid", g.uuid},
                        {"power_source", g.power_source},
                        {"power_averaging", g.power_averaging},
                        {"name", g.name},
                        {"power_w", num(g.power_w)},
                        {"energy_j", num(g.energy_j)},
                        {"cap_w", num(g.cap_w)},
                        {"cap_min_w", num(g.cap_min_w)},
                        {"cap_max_w", num(g.cap_max_w)},
                        {"cap_default_w", num(g.cap_default_w)},
                        {"sm_clock_mhz", num(g.sm_clock_mhz)},
                        {"sm_util", num(g.sm_util)},
                        {"mem_util", num(g.mem_util)},
                        {"temp_c", num(g.temp_c)},
                        {"cap_write_failures_total", g.cap_write_failures_total},
                        {"persistence_mode", std::isnan(g.persistence_mode)
                                                 ? nlohmann::json()
                                                 : nlohmann::json(g.persistence_mode != 0)}};
  out["smoothing"] = smoothing_json(g.smoothing);
  return out;
}

nlohmann::json budget_json(const BudgetState& b) {
  nlohmann::json sched = nlohmann::json::array();
  for (const auto& e : b.schedule) {
    sched.push_back({{"after_s", e.after_s}, {"watts", e.watts}, {"window_s", e.window_s}});
  }
  return {{"scope", b.scope},      {"source", b.source},          {"set_unix_s", b.set_unix_s},
          {"watts", num(b.watts)}, {"window_s", num(b.window_s)}, {"schedule", std::move(sched)}};
}

}  // namespace

nlohmann::json knobs_json(const KnobValues& k) {
  nlohmann::json out = nlohmann::json::object();
  for (int i = 0; i < kNumKnobs; ++i) {
    if (!std::isfinite(k[i])) continue;
    // Knobs are counts (concurrency, group size): whole values are written as integers.
    const double r = std::round(k[i]);
    if (r == k[i] && std::abs(r) < 9e15) {
      out[std::string(kKnobNames[i])] = static_cast<int64_t>(r);
    } else {
      out[std::string(kKnobNames[i])] = k[i];
    }
  }
  return out;
}

nlohmann::json to_json(const RegisteredJob& j) {
  return {{"id", j.id},
          {"name", j.name},
          {"kind", j.kind},
          {"phase", j.phase},
          {"tokens_total", j.tokens_total},
          {"steps_total", j.steps_total},
          {"knobs", knobs_json(j.knobs)},
          {"knob_version", j.knob_version},
          {"last_report_age_s", num(j.last_report_age_s)},
          {"announced",
           {{"starts_in_s", num(j.announced.starts_in_s)},
            {"ends_in_s", num(j.announced.ends_in_s)},
            {"checkpoint_in_iters",  // a whole number (api_requests.hpp)
             std::isfinite(j.announced.checkpoint_in_iters)
                 ? nlohmann::json(static_cast<int64_t>(j.announced.checkpoint_in_iters))
                 : nlohmann::json()},
            {"checkpoint_s", num(j.announced.checkpoint_s)},
            {"step_age_s", num(j.announced.step_age_s)}}},
          {"pfi", num(j.pfi)},
          {"pfi_source", j.pfi_source},
          {"fill", j.fill},
          {"paused", j.paused},
          {"start_at_unix_s", j.start_at_unix_s},
          {"stop_at_unix_s", j.stop_at_unix_s},
          {"fill_w", fill_json(j)}};
}

nlohmann::json fill_json(const RegisteredJob& j) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [gpu, w] : j.fill_w) out[std::to_string(gpu)] = w;
  return out;
}

nlohmann::json to_json(const AgentState& s) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : s.gpus) gpus.push_back(gpu_json(g));
  nlohmann::json windows = nlohmann::json::array();
  for (const auto& w : s.windows) {
    windows.push_back({{"window_s", w.window_s},
                       {"mean_w", num(w.mean_w)},
                       {"violations_total", w.violations_total},
                       {"windows_total", w.windows_total},
                       {"source", w.source}});
  }
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& j : s.jobs) jobs.push_back(to_json(j));
  nlohmann::json plant_jobs = nlohmann::json::array();
  for (const auto& j : s.plant_jobs) {
    plant_jobs.push_back({{"name", j.name},
                          {"knobs", j.knobs},
                          {"tokens_total", num(j.tokens_total)},
                          {"steps_total", num(j.steps_total)}});
  }
  nlohmann::json lost = nlohmann::json::array();
  for (const auto& l : s.lost_gpus) {
    lost.push_back({{"index", l.index}, {"uuid", l.uuid}, {"reason", l.reason}});
  }
  return {{"version", s.version},
          {"time_unix_s", s.time_unix_s},
          {"hostname", s.hostname},
          {"backend", s.backend},
          {"controller", s.controller},
          {"read_only", s.read_only},
          {"node_power_w", num(s.node_power_w)},
          {"gpus", std::move(gpus)},
          {"lost_gpus", std::move(lost)},
          {"budget", budget_json(s.budget)},
          {"windows", std::move(windows)},
          {"limiter_actions_total", s.limiter_actions_total},
          {"fallbacks_total", s.fallbacks_total},
          {"fallback_reason", s.fallback_reason},
          {"loop",
           {{"period_s", s.loop.period_s},
            {"ticks_total", s.loop.ticks_total},
            {"late_ticks_total", s.loop.late_ticks_total},
            {"lateness_s", s.loop.lateness_s},
            {"lateness_max_s", s.loop.lateness_max_s},
            {"plant_time_s", s.loop.plant_time_s}}},
          {"jobs", std::move(jobs)},
          {"plant_jobs", std::move(plant_jobs)},
          {"applied_command_seq", s.applied_command_seq}};
}

}  // namespace fw::agent
