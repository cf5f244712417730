#include "pipeline/plan_report.hpp"

#include "core/format.hpp"

namespace fw::pipeline {
namespace {

bool has_ops(const OneFOneB& dag, size_t s, int p) {
  const auto ph = static_cast<Phase>(p);
  const int st = static_cast<int>(s);
  return dag.count(st, Instr::kForward, ph) + dag.count(st, Instr::kBackward, ph) > 0;
}

nlohmann::json setting_json(const CapSetting& c, double max_cap_w) {
  nlohmann::json j{{"forward_mhz", c.forward_mhz}, {"backward_mhz", c.backward_mhz}};
  if (c.uncapped) {
    j["cap_w"] = nullptr;
  } else {
    j["cap_w"] = c.cap_w;
    if (c.cap_w > max_cap_w) j["above_max_cap"] = true;
  }
  return j;
}

nlohmann::json stages_json(const std::vector<std::array<CapSetting, kPhases>>& st, bool per_phase,
                           const PlanReportContext& ctx) {
  nlohmann::json a = nlohmann::json::array();
  for (size_t s = 0; s < st.size(); ++s) {
    nlohmann::json j{{"stage", s}};
    if (per_phase) {  // a segment without ops on this stage: null
      for (int p = 0; p < kPhases; ++p) {
        j[phase_name(static_cast<Phase>(p))] =
            has_ops(*ctx.dag, s, p) ? setting_json(st[s][p], ctx.max_cap_w) : nlohmann::json();
      }
    } else {
      j.update(setting_json(st[s][0], ctx.max_cap_w));
    }
    a.push_back(j);
  }
  return a;
}

nlohmann::json mode_json(const ModePlan& m, bool straggler, const PlanReportContext& ctx) {
  const bool per_phase = m.mode == "schedule";
  nlohmann::json j{{"energy_saved", m.energy_saved},
                   {"time_increase", m.time_increase},
                   {"time_s", m.time_s},
                   {"energy_j", m.energy_j},
                   {"pipeline_time_s", m.pipeline_time_s},
                   {"pipeline_energy_j", m.pipeline_energy_j},
                   {"stages", stages_json(m.stages, per_phase, ctx)}};
  if (straggler) {
    j["others"] = stages_json(m.others, per_phase, ctx);
    j["others_time_s"] = m.others_time_s;
  }
  nlohmann::json fr = nlohmann::json::array();
  for (const auto& p : m.frontier) fr.push_back({{"time_s", p.time_s}, {"energy_j", p.energy_j}});
  j["frontier"] = fr;
  return j;
}

std::string cap_text(const CapSetting& c, double max_cap_w) {
  if (c.uncapped) {
    return strprintf("uncapped (%.0f/%.0f MHz)", c.forward_mhz, c.backward_mhz);
  }
  return strprintf("%.0f W%s (%.0f/%.0f MHz)", c.cap_w, c.cap_w > max_cap_w ? "*" : "",
                   c.forward_mhz, c.backward_mhz);
}

}  // namespace

nlohmann::json plan_json(const Plan& p, const PlanReportContext& ctx) {
  const ModePlan& b = p.best();
  const bool straggler = p.straggler_factor > 1;
  return {{"profile", ctx.profile_path},
          {"gpu", ctx.gpu_name},
          {"computed_from_profile", true},
          {"stages", p.stages},
          {"microbatches", p.microbatches},
          {"tp", p.tp},
          {"pipelines", p.pipelines},
          {"blocking_w", p.blocking_w},
          {"slowdown_max", p.slowdown_max},
          {"straggler_factor", p.straggler_factor},
          {"energy_saved", b.energy_saved},
          {"time_increase", b.time_increase},
          {"mode", b.mode},
          {"baseline",
           {{"time_s", p.baseline_time_s},
            {"energy_j", p.baseline_energy_j},
            {"pipeline_time_s", p.baseline_pipeline_time_s},
            {"pipeline_energy_j", p.baseline_pipeline_energy_j}}},
          {"constant", mode_json(p.constant, straggler, ctx)},
          {"schedule", mode_json(p.schedule, straggler, ctx)},
          {"planning_s", p.planning_s},
          {"planning_cpu_s", p.planning_cpu_s}};
}

std::string format_plan(const Plan& p, const PlanReportContext& ctx) {
  std::string s = "pipeline plan: " + ctx.profile_path + "\n";
  s += strprintf("  %d stages x tp %d, %d micro-batches, %d pipelines, blocking %.2f W/GPU",
                 p.stages, p.tp, p.microbatches, p.pipelines, p.blocking_w);
  if (p.straggler_factor > 1) s += strprintf(", one pipeline %.3gx slower", p.straggler_factor);
  s += strprintf("\n  baseline (every GPU at its highest clock): %.4f s, %.1f J per pipeline\n",
                 p.baseline_pipeline_time_s, p.baseline_pipeline_energy_j);
  for (const ModePlan* m : {&p.constant, &p.schedule}) {
    s += strprintf("  %-8s energy %+.2f %%  time %+.2f %%\n", m->mode.c_str(),
                   -100 * m->energy_saved, 100 * m->time_increase);
  }
  const ModePlan& b = p.best();
  s += "  settings (" + b.mode + "; forward/backward clock the cap allows):\n";
  bool above = false;
  for (size_t st = 0; st < b.stages.size(); ++st) {
    s += strprintf("    stage %zu:", st);
    if (b.mode == "schedule") {
      const char* sep = "";
      for (int ph = 0; ph < kPhases; ++ph) {
        if (!has_ops(*ctx.dag, st, ph)) continue;
        s += strprintf("%s %s %s", sep, phase_name(static_cast<Phase>(ph)),
                       cap_text(b.stages[st][ph], ctx.max_cap_w).c_str());
        sep = ",";
      }
      s += "\n";
    } else {
      s += " " + cap_text(b.stages[st][0], ctx.max_cap_w) + "\n";
    }
    for (const CapSetting& c : b.stages[st])
      above = above || (!c.uncapped && c.cap_w > ctx.max_cap_w);
  }
  if (above) {
    s += strprintf("  (* above the GPU's %.0f W maximum cap: the profile's GPUs drew more)\n",
                   ctx.max_cap_w);
  }
  s += strprintf("  planned in %.3f s (%.3f s CPU)\n", p.planning_s, p.planning_cpu_s);
  return s;
}

}  // namespace fw::pipeline
