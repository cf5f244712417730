#include "studies/stability_table.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>

#include "analysis/json_fields.hpp"
#include "core/format.hpp"
#include "core/text_table.hpp"

namespace fw::studies {
namespace {

std::string f1(double v) {
  if (std::isnan(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string seeds_text(const std::vector<uint64_t>& s) {
  if (s.empty()) return "none";
  if (s.size() == 1) return std::to_string(s[0]);
  return std::to_string(s.front()) + "-" + std::to_string(s.back());
}

nlohmann::json mitigations_json(const sim::SiteMitigations& m) {
  nlohmann::json j;
  j["cap_frac"] = m.cap_frac;
  if (m.smoothing.enabled) {
    j["smoothing"] = {{"floor_frac", m.smoothing.floor_frac},
                      {"ramp_up_w_per_s", m.smoothing.ramp_up_w_per_s},
                      {"ramp_down_w_per_s", m.smoothing.ramp_down_w_per_s},
                      {"ramp_down_hysteresis_ms", m.smoothing.ramp_down_hysteresis_ms}};
  } else {
    j["smoothing"] = nullptr;
  }
  j["fill_frac"] = m.fill.enabled ? nlohmann::json(m.fill.target_frac) : nlohmann::json(nullptr);
  j["stagger_s"] = m.stagger.stagger_s;
  return j;
}

nlohmann::json run_json(const StabilityRunMetrics& m, const std::vector<double>& windows) {
  nlohmann::json ramps = nlohmann::json::array();
  for (size_t k = 0; k < m.ramp_pct_per_s.size() && k < windows.size(); ++k) {
    ramps.push_back({{"window_s", windows[k]}, {"pct_of_peak_per_s", m.ramp_pct_per_s[k]}});
  }
  return {{"seed", m.seed},
          {"ref_peak_w", m.ref_peak_w},
          {"peak_w", m.peak_w},
          {"mean_w", m.mean_w},
          {"energy_j", m.energy_j},
          {"ramps", ramps},
          {"ramp_limit_pct_per_s", m.ramp_limit_pct_per_s},
          {"band_frac", num_or_null<nlohmann::json>(m.band_frac)},
          {"band_steady_frac", num_or_null<nlohmann::json>(m.band_steady_frac)},
          {"osc_steady_pct", num_or_null<nlohmann::json>(m.osc_steady_pct)},
          {"energy_overhead_pct", m.energy_overhead_pct},
          {"throughput_loss_pct", m.throughput_loss_pct},
          {"steady_energy_pct", num_or_null<nlohmann::json>(m.steady_energy_pct)},
          {"steady_throughput_loss_pct", num_or_null<nlohmann::json>(m.steady_throughput_loss_pct)},
          {"trace_cost_pct", m.trace_cost_pct},
          {"steady_cost_pct", num_or_null<nlohmann::json>(m.steady_cost_pct)},
          {"cost_pct", m.cost_pct},
          {"smoothing_burn_pct", m.smoothing_burn_pct},
          {"fill_pct", m.fill_pct},
          {"stagger_burn_pct", m.stagger_burn_pct},
          {"tokens", m.tokens},
          {"iterations", m.iterations},
          {"meets", m.meets},
          {"worst_ratio", m.worst_ratio}};
}

}  // namespace

std::string format_stability_table(const StabilityStudyReport& r) {
  const StabilityScenario& s = *r.scenario;
  const sim::SiteSpec& site = s.site;
  const StabilityLimitSpec& l = s.limits;
  std::string out;
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "%s (simulated): %lld GPUs %s%s%s, %lld ranks of %d, %d simulated; %g s, job %g-%g s",
      s.name.c_str(), static_cast<long long>(site.gpus), site.gpu_model.c_str(),
      site.smoothing ? " with the power smoothing of " : "", site.smoothing_model.c_str(),
      static_cast<long long>(site.ranks()), site.job.tp, site.representatives, site.duration_s,
      site.job.start_s, std::min(site.job.end_s, site.duration_s));
  out += wrap_text(buf, 120, "  ") + "\n";
  std::string steady =
      l.steady_to_s > l.steady_from_s
          ? "; steady stretch " + format_g(l.steady_from_s) + "-" + format_g(l.steady_to_s) + " s"
          : "";
  std::snprintf(buf, sizeof buf,
                "limits: ramp <= %g %% of the unmitigated peak per s at a %g s window; band "
                "%g-%g Hz <= %g %% of the whole trace's variation%s",
                l.max_ramp_frac_per_s * 100, l.ramp_window_s, l.band_lo_hz, l.band_hi_hz,
                l.max_band_frac * 100, steady.c_str());
  out += wrap_text(buf, 120, "  ") + "\n";
  std::snprintf(buf, sizeof buf,
                "seeds: evaluation %s; settings chosen on calibration seeds %s; cost %% = "
                "throughput loss %% + %.3f x energy overhead %%",
                seeds_text(r.eval_seeds).c_str(), seeds_text(r.calib_seeds).c_str(),
                r.energy_weight);
  out += wrap_text(buf, 120, "  ") + "\n\n";

  TextTable t;
  t.label_header = "arm";
  for (double w : l.ramp_windows_s) t.columns.push_back({"ramp " + format_g(w) + "s"});
  t.columns.push_back({"band %"});
  t.columns.push_back({"osc %pk", 2});
  for (const char* h : {"E %", "thr %", "E st %", "thr st %", "cost %", "meets", "calib"}) {
    t.columns.push_back({h});
  }
  for (const auto& a : r.arms) {
    std::vector<std::string> row = {a.name};
    for (double v : a.ramp_pct_per_s) row.push_back(f1(v));
    row.push_back(f1(a.band_frac * 100));
    row.push_back(f1(a.osc_steady_pct));
    row.push_back(f1(a.energy_overhead_pct));
    row.push_back(f1(a.throughput_loss_pct));
    row.push_back(f1(a.steady_energy_pct));
    row.push_back(f1(a.steady_throughput_loss_pct));
    row.push_back(f1(a.cost_pct));
    row.push_back(a.meets ? "yes" : "NO");
    row.push_back(a.candidates > 0
                      ? std::to_string(a.candidates_meeting) + "/" + std::to_string(a.candidates)
                      : "-");
    t.rows.push_back(std::move(row));
  }
  std::vector<std::string> left_out;
  out += render_table(t, TextStyle{}, &left_out);
  std::string legend =
      "ramp: largest up or down, % of the unmitigated peak per s (worst seed); band: share of "
      "the detrended variation in the band, whole trace (worst seed); osc: in-band RMS on the "
      "steady stretch, % of peak (worst seed); E, thr: energy overhead and throughput loss vs "
      "none over the trace, st: over the steady stretch; cost: projected (events every " +
      format_g(s.objective.events_every_h) +
      " h); E, thr, cost: mean over seeds; calib: "
      "settings meeting the limits on the calibration seeds / searched";
  if (!left_out.empty()) legend += " (left out to fit: --json has every figure)";
  out += wrap_text(legend, 120) +
         "\n\nsettings (the best fixed setting of each arm on the "
         "calibration seeds):\n";
  for (const auto& a : r.arms) {
    std::string line = "  " + a.name + ": " + a.setting;
    if (a.candidates > 0 && !a.calibration_met) {
      line += " (no setting met the limits on the calibration seeds: the closest)";
    }
    out += wrap_text(line, 120, "      ") + "\n";
  }
  if (r.runs > 0 && r.rank_steps > 0) {
    const double us = r.sim_wall_s / static_cast<double>(r.rank_steps) * 1e6;
    const double per_run = r.sim_wall_s / static_cast<double>(r.runs);
    std::snprintf(buf, sizeof buf,
                  "\nspeed: %zu runs of %g simulated s in %.1f s of simulation (%.2f s per run, "
                  "%.0fx real time; %.2f us per rank-step); study %.1f s wall",
                  r.runs, site.duration_s, r.sim_wall_s, per_run, site.duration_s / per_run, us,
                  r.study_wall_s);
    out += wrap_text(buf, 120, "  ") + "\n";
  }
  for (const auto& a : r.arms) {  // a controller's decision cost against the loop's period
    if (a.kind != "controller" || a.decisions == 0) continue;
    std::snprintf(buf, sizeof buf,
                  "decisions of %s: %lld on %zu plant rows, %.3f us mean, %.1f us at most, "
                  "against the loop's %g ms period (%.3f %% of it at most)",
                  a.name.c_str(), static_cast<long long>(a.decisions),
                  static_cast<size_t>(site.representatives), a.decision_mean_s * 1e6,
                  a.decision_max_s * 1e6, a.loop_period_s * 1e3,
                  a.decision_max_s / a.loop_period_s * 100);
    out += wrap_text(buf, 120, "  ") + "\n";
  }
  return out;
}

nlohmann::json stability_json(const StabilityStudyReport& r) {
  const StabilityScenario& s = *r.scenario;
  const sim::SiteSpec& site = s.site;
  const StabilityLimitSpec& l = s.limits;
  nlohmann::json j;
  j["simulated"] = true;
  j["scenario"] = {{"name", s.name}, {"path", s.path}, {"overrides", s.overrides}};
  j["site"] = {
      {"gpus", site.gpus},
      {"gpu", site.gpu_model},
      {"smoothing_model", site.smoothing_model.empty() ? nlohmann::json(nullptr)
                                                       : nlohmann::json(site.smoothing_model)},
      {"tp", site.job.tp},
      {"ranks", site.ranks()},
      {"representatives", site.representatives},
      {"workload", site.job.workload},
      {"duration_s", site.duration_s},
      {"dt_s", site.dt_s},
      {"output_period_s", site.output_period_s}};
  j["limits"] = {{"max_ramp_frac_per_s", l.max_ramp_frac_per_s},
                 {"ramp_window_s", l.ramp_window_s},
                 {"ramp_windows_s", l.ramp_windows_s},
                 {"band_hz", {l.band_lo_hz, l.band_hi_hz}},
                 {"max_band_frac", l.max_band_frac},
                 {"steady_s", l.steady_to_s > l.steady_from_s
                                  ? nlohmann::json({l.steady_from_s, l.steady_to_s})
                                  : nlohmann::json(nullptr)}};
  j["eval_seeds"] = r.eval_seeds;
  j["calib_seeds"] = r.calib_seeds;
  j["energy_weight"] = r.energy_weight;
  j["objective"] = {{"usd_per_gpu_hour", s.objective.usd_per_gpu_hour},
                    {"usd_per_kwh", s.objective.usd_per_kwh},
                    {"events_every_h", s.objective.events_every_h}};
  nlohmann::json arms = nlohmann::json::array();
  for (const auto& a : r.arms) {
    nlohmann::json aj;
    aj["name"] = a.name;
    aj["kind"] = a.kind;
    aj["setting"] = a.setting;
    aj["mitigations"] = mitigations_json(a.chosen);
    if (a.kind == "controller") {
      aj["decisions"] = a.decisions;
      aj["decision_mean_us"] = a.decision_mean_s * 1e6;
      aj["decision_max_us"] = a.decision_max_s * 1e6;
      aj["loop_period_s"] = a.loop_period_s;
    }
    aj["candidates"] = a.candidates;
    aj["candidates_meeting"] = a.candidates_meeting;
    aj["calibration_met"] = a.calibration_met;
    nlohmann::json ramps = nlohmann::json::array();
    for (size_t k = 0; k < a.ramp_pct_per_s.size(); ++k) {
      ramps.push_back(
          {{"window_s", l.ramp_windows_s[k]}, {"pct_of_peak_per_s", a.ramp_pct_per_s[k]}});
    }
    aj["ramps"] = ramps;
    aj["ramp_limit_pct_per_s"] = a.ramp_limit_pct_per_s;
    aj["band_frac"] = num_or_null<nlohmann::json>(a.band_frac);
    aj["band_steady_frac"] = num_or_null<nlohmann::json>(a.band_steady_frac);
    aj["osc_steady_pct"] = num_or_null<nlohmann::json>(a.osc_steady_pct);
    aj["energy_overhead_pct"] = a.energy_overhead_pct;
    aj["throughput_loss_pct"] = a.throughput_loss_pct;
    aj["steady_energy_pct"] = num_or_null<nlohmann::json>(a.steady_energy_pct);
    aj["steady_throughput_loss_pct"] = num_or_null<nlohmann::json>(a.steady_throughput_loss_pct);
    aj["cost_pct"] = a.cost_pct;
    aj["meets"] = a.meets;
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& m : a.runs) runs.push_back(run_json(m, l.ramp_windows_s));
    aj["runs"] = runs;
    arms.push_back(aj);
  }
  j["arms"] = arms;
  j["speed"] = {{"runs", r.runs},
                {"sim_wall_s", r.sim_wall_s},
                {"study_wall_s", r.study_wall_s},
                {"rank_steps", r.rank_steps},
                {"threads", r.options.threads}};
  return j;
}

Status write_site_csv(const std::string& path, const sim::SiteRun& run) {
  std::ofstream f(path);
  if (!f) return Status::IoError(path + ": cannot write");
  f << "time_s,power_w\n";
  char buf[64];
  for (size_t i = 0; i < run.time_s.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.3f,%.1f\n", run.time_s[i], run.power_w[i]);
    f << buf;
  }
  f.flush();
  if (!f) return Status::IoError(path + ": write failed");
  return Status::Ok();
}

}  // namespace fw::studies
