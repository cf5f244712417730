#include "agent/state_publisher.hpp"

#include <cmath>

#include "core/format.hpp"

namespace fw::agent {

void StatePublisher::set_env(const PlantInfo& info, const BudgetSchedule& budget) {
  std::lock_guard<std::mutex> lock(env_mu_);
  env_info_ = info;
  env_budget_ = budget;
}

std::pair<PlantInfo, BudgetSchedule> StatePublisher::env() const {
  std::lock_guard<std::mutex> lock(env_mu_);
  return {env_info_, env_budget_};
}

void StatePublisher::publish(double t, NodePlant& plant, const AgentTick* tick,
                             const LoopState& loop) {
  AgentState s;
  s.time_unix_s = unix_now_s();
  s.hostname = hostname_;
  s.backend = backend_;
  s.read_only = read_only_;
  static const Snapshot kNone;
  const Snapshot& snap = tick ? tick->latest() : kNone;
  double node_w = 0;
  bool any = false;
  const auto& ids = plant.node_gpus();
  for (const LostGpu& l : plant.lost_gpus()) s.lost_gpus.push_back({l.index, l.uuid, l.reason});
  for (size_t g = 0; g < ids.size(); ++g) {
    GpuState gs;
    gs.index = ids[g].index;
    gs.uuid = ids[g].uuid;
    gs.power_source = ids[g].power_source;
    gs.power_averaging = ids[g].power_averaging;
    gs.name = ids[g].name;
    const int nvml_gpu = ids[g].index;
    CapConstraints c = plant.caps().constraints(nvml_gpu);
    gs.cap_min_w = c.min_w;
    gs.cap_max_w = c.max_w;
    gs.cap_default_w = c.default_w;
    gs.cap_write_failures_total = plant.caps().write_failures(nvml_gpu);
    switch (plant.caps().persistence_mode(nvml_gpu)) {
      case PersistenceMode::kOn:
        gs.persistence_mode = 1;
        break;
      case PersistenceMode::kOff:
        gs.persistence_mode = 0;
        break;
      case PersistenceMode::kUnknown:
        break;
    }
    if (const PowerSmoothingSettings* sm = plant.smoothing_in_force(nvml_gpu)) {
      GpuState::Smoothing out;
      out.enabled = sm->enabled;
      out.profile = sm->profile;
      // In % as the command gives it, rounded to 1e-6 % (the fraction's binary error).
      out.floor_pct = std::round(sm->floor_frac_of_tdp * 1e8) / 1e6;
      out.ramp_up_w_per_s = sm->ramp_up_w_per_s;
      out.ramp_down_w_per_s = sm->ramp_down_w_per_s;
      out.hysteresis_ms = sm->ramp_down_hysteresis_ms;
      gs.smoothing = out;
    }
    if (g < snap.gpus.size()) {
      const GpuReading& r = snap.gpus[g];
      gs.power_w = r.power_w;
      gs.energy_j = r.energy_j;
      gs.cap_w = r.cap_w;
      gs.sm_clock_mhz = r.sm_clock_mhz;
      gs.sm_util = r.sm_util;
      gs.mem_util = r.mem_util;
      gs.temp_c = r.temp_c;
      gs.clock_event_reasons = plant.clock_event_reasons(g);
      if (!std::isnan(r.power_w)) {
        node_w += r.power_w;
        any = true;
      }
    }
    s.gpus.push_back(gs);
  }
  s.node_power_w = any ? node_w : kUnset;
  s.loop = loop;
  s.jobs = jobs_.snapshot();
  if (tick) {
    s.controller = tick->controller_spec();
    s.budget = tick->budget_state();
    const Budget& now = tick->budget().at(t);
    s.budget.watts = now.watts;
    s.budget.window_s = now.window_s;
    WindowState w;
    w.window_s = now.window_s;
    w.mean_w = tick->trailing_mean_w();
    w.violations_total = tick->violations_total();
    w.windows_total = tick->windows_total();
    w.source = tick->window_source();
    s.windows.push_back(w);
    s.limiter_actions_total = tick->limiter_actions_total();
    for (FallbackReason r : kFallbackReasons) {
      auto it = tick->fallbacks_total().find(r);
      s.fallbacks_total[std::string(fallback_name(r))] =
          it == tick->fallbacks_total().end() ? 0 : it->second;
    }
    s.fallback_reason = std::string(fallback_name(tick->fallback()));
    s.applied_command_seq = tick->applied_command_seq();
    const PlantInfo& info = plant.info();
    for (size_t j = 0; j < info.jobs.size(); ++j) {
      PlantJobState pj;
      pj.name = info.jobs[j].name;
      for (int k = 0; k < kNumKnobs; ++k) {
        if (info.jobs[j].knob_ranges[k].available) pj.knobs.emplace_back(kKnobNames[k]);
      }
      if (j < snap.jobs.size()) {
        pj.tokens_total = snap.jobs[j].tokens_total;
        pj.steps_total = snap.jobs[j].steps_total;
      }
      s.plant_jobs.push_back(std::move(pj));
    }
    // A registered job's progress is the plant's reading of the plant job it mirrors.
    for (size_t j = 0; j < snap.jobs.size(); ++j) {
      for (RegisteredJob& js : s.jobs) {
        if (js.id != plant.job_id(j)) continue;
        js.tokens_total = snap.jobs[j].tokens_total;
        js.steps_total = snap.jobs[j].steps_total;
      }
    }
  }
  hub_.publish(std::move(s));
}

}  // namespace fw::agent
