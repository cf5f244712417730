#include "pipeline/plan_report.hpp"

#include <algorithm>
#include <cmath>

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

std::string phases_text(int mask) {
  std::string s;
  // in time order within the iteration: a segment wrapping the iteration boundary starts at
  // its cool-down or drain
  int first = 0;
  if ((mask & 1) && (mask >> (kPhases - 1) & 1)) {
    while (first < kPhases && (mask >> first & 1)) ++first;
    while (first < kPhases && !(mask >> first & 1)) ++first;
  }
  for (int i = 0; i < kPhases; ++i) {
    const int p = (first + i) % kPhases;
    if (!(mask >> p & 1)) continue;
    s += (s.empty() ? "" : "+") + std::string(phase_name(static_cast<Phase>(p)));
  }
  return s;
}

nlohmann::json mode_json(const ModePlan& m, bool straggler, const PlanReportContext& ctx) {
  const bool per_phase = m.mode == "schedule";
  nlohmann::json segs = nlohmann::json::array();
  for (const auto& st : m.segments) {
    nlohmann::json a = nlohmann::json::array();
    for (const PlanSegment& g : st) {
      nlohmann::json j = setting_json(g.set, ctx.max_cap_w);
      j["phases"] = phases_text(g.phases);
      j["busy_s"] = g.busy_s;
      j["start_s"] = g.start_s;
      a.push_back(j);
    }
    segs.push_back(a);
  }
  nlohmann::json j{{"energy_saved", m.energy_saved},
                   {"time_increase", m.time_increase},
                   {"time_s", m.time_s},
                   {"energy_j", m.energy_j},
                   {"pipeline_time_s", m.pipeline_time_s},
                   {"pipeline_energy_j", m.pipeline_energy_j},
                   {"stages", stages_json(m.stages, per_phase, ctx)},
                   {"segments", segs},
                   {"shortest_segment_s", m.shortest_segment_s},
                   {"bound_energy_saved", m.bound_energy_saved},
                   {"share_of_bound", m.bound_energy_saved > 0
                                          ? nlohmann::json(m.energy_saved / m.bound_energy_saved)
                                          : nlohmann::json()},
                   {"optimal", m.optimal},
                   {"search_nodes", m.search_nodes}};
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

std::string baseline_rule(const Plan& p, const PlanReportContext& ctx) {
  if (p.allow_above_max && p.profile_top_power_w > ctx.max_cap_w) {
    return strprintf(
        "every GPU at the profile's highest clock, drawing up to %.0f W: above the %s's %.0f W "
        "maximum cap (--allow-above-max: the profiled GPUs' own limit was higher)",
        p.profile_top_power_w, ctx.gpu_name.c_str(), ctx.max_cap_w);
  }
  if (p.baseline_at_top_clock) {
    return strprintf("every GPU at the profile's highest clock, within the %s's %.0f W maximum",
                     ctx.gpu_name.c_str(), p.max_cap_w);
  }
  return strprintf(
      "no cap written: every GPU at the %s's %.0f W maximum, each instruction at the highest "
      "profiled clock that fits it (the profile's highest clock draws up to %.0f W; "
      "--allow-above-max plans from there)",
      ctx.gpu_name.c_str(), p.max_cap_w, p.profile_top_power_w);
}

// `text` as lines of at most 100 columns: the first indented by 2, the others by 4.
std::string wrap(const std::string& text) {
  std::string out, line = "  ";
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    const std::string word = text.substr(i, j - i);
    if (line.size() + word.size() > 100 && line.find_first_not_of(' ') != std::string::npos) {
      line.pop_back();  // the space after the last word
      out += line + "\n";
      line = "    ";
    }
    line += word + " ";
    i = j + 1;
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return out + line + "\n";
}

}  // namespace

nlohmann::json plan_json(const Plan& p, const PlanReportContext& ctx) {
  const ModePlan& b = p.best();
  const bool straggler = p.straggler_factor > 1;
  nlohmann::json clocks = nlohmann::json::array();
  for (const auto& c : p.baseline_mhz) {
    clocks.push_back({{"forward_mhz", c[0]}, {"backward_mhz", c[1]}});
  }
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
          {"cap_range_w", {p.min_cap_w, p.max_cap_w}},
          {"allow_above_max", p.allow_above_max},
          {"cap_limit_w",
           std::isfinite(p.cap_limit_w) ? nlohmann::json(p.cap_limit_w) : nlohmann::json()},
          {"min_segment_s", p.min_segment_s},
          {"segments", p.segments},
          {"energy_saved", b.energy_saved},
          {"time_increase", b.time_increase},
          {"bound_energy_saved", b.bound_energy_saved},
          {"optimal", b.optimal},
          {"mode", b.mode},
          {"baseline",
           {{"time_s", p.baseline_time_s},
            {"energy_j", p.baseline_energy_j},
            {"pipeline_time_s", p.baseline_pipeline_time_s},
            {"pipeline_energy_j", p.baseline_pipeline_energy_j},
            {"rule", baseline_rule(p, ctx)},
            {"at_profile_top_clock", p.baseline_at_top_clock},
            {"stages", clocks}}},
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
  s += strprintf("\n  caps: %.0f-%.0f W%s%s\n", p.min_cap_w,
                 p.allow_above_max ? std::max(p.max_cap_w, p.profile_top_power_w) : p.max_cap_w,
                 p.allow_above_max ? " (above the GPU's maximum: --allow-above-max)"
                                   : " (the GPU's settable range)",
                 std::isfinite(p.cap_limit_w)
                     ? strprintf(", at most %.0f W (--max-cap-w)", p.cap_limit_w).c_str()
                     : "");
  s += wrap("baseline: " + baseline_rule(p, ctx));
  s += strprintf("  baseline: %.4f s, %.1f J per pipeline\n", p.baseline_pipeline_time_s,
                 p.baseline_pipeline_energy_j);
  s +=
      wrap(strprintf("schedule segments: each at least %.3g s, its ops at the fastest clocks "
                     "(--min-segment-s: %s)%s",
                     p.min_segment_s,
                     p.min_segment_s == kCapSettlingS
                         ? "the cap settling time measured in the simulator, an assumption"
                         : "given",
                     p.segments == 3 ? "; fill stays with warm-up, drain with cool-down" : ""));
  for (const ModePlan* m : {&p.constant, &p.schedule}) {
    s += strprintf(
        "  %-8s energy %+.2f %%  time %+.2f %%  (no such plan saves more than %.2f %%%s)\n",
        m->mode.c_str(), -100 * m->energy_saved, 100 * m->time_increase,
        100 * m->bound_energy_saved, m->optimal ? ": optimal" : "");
  }
  const ModePlan& b = p.best();
  s += "  settings (" + b.mode + "; forward/backward clock the cap allows):\n";
  bool above = false;
  for (size_t st = 0; st < b.segments.size(); ++st) {
    s += strprintf("    stage %zu:", st);
    const char* sep = "";
    for (const PlanSegment& g : b.segments[st]) {
      const bool one = b.segments[st].size() == 1;
      s += strprintf("%s %s%s", sep, one ? "" : (phases_text(g.phases) + " ").c_str(),
                     cap_text(g.set, ctx.max_cap_w).c_str());
      if (!one) s += strprintf(" %.3f s", g.busy_s);
      sep = ",";
      above = above || (!g.set.uncapped && g.set.cap_w > ctx.max_cap_w);
    }
    s += "\n";
  }
  if (above) {
    s += strprintf("  (* above the GPU's %.0f W maximum cap: the profile's GPUs drew more)\n",
                   ctx.max_cap_w);
  }
  s += strprintf("  planned in %.3f s (%.3f s CPU)\n", p.planning_s, p.planning_cpu_s);
  return s;
}

}  // namespace fw::pipeline
