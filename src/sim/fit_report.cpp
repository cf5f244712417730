// Reports of `flexwatt fit` (sim/fit.hpp, part 3): re-simulation check, tables and JSON.

#include <cstdio>

#include "sim/fit.hpp"
#include "sim/scenario.hpp"

namespace fw::sim {

nlohmann::json sweep_fit_json(const SweepFit& f) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : f.rows) {
    rows.push_back({{"cap_w", r.cap_w},
                    {"p_meas", r.p_meas},
                    {"p_sim", r.p_sim},
                    {"t_meas", r.t_meas},
                    {"t_sim", r.t_sim},
                    {"power_w_sim", r.power_w_sim}});
  }
  return {{"job", f.job},
          {"base", f.base_workload},
          {"rows", rows},
          {"pmax_meas_w", f.pmax_meas_w},
          {"pmax_sim_w", f.pmax_sim_w},
          {"pfi_meas", f.pfi_meas},
          {"pfi_sim", f.pfi_sim},
          {"max_dp", f.max_dp},
          {"max_dt", f.max_dt},
          {"power_at_or_below_cap", f.power_at_or_below_cap},
          {"evaluations", f.evaluations},
          {"mix",
           {{"sm", f.mix.sm},
            {"mem", f.mix.mem},
            {"compute_bound", f.mix.compute_bound},
            {"comm_share", f.mix.comm_share}}}};
}

std::string sweep_fit_table(const SweepFit& f) {
  char line[256];
  std::string out = "job " + f.job + " (base " + f.base_workload +
                    "): measured vs simulated\n  cap_W  P/Pmax meas    sim  T/Tmax meas    sim\n";
  for (const auto& r : f.rows) {
    std::snprintf(line, sizeof line, "  %5.0f  %11.3f %6.3f  %11.3f %6.3f\n", r.cap_w, r.p_meas,
                  r.p_sim, r.t_meas, r.t_sim);
    out += line;
  }
  std::snprintf(line, sizeof line,
                "  Pmax %.1f vs %.1f W/GPU; PFI %.2f vs %.2f; worst |dP| %.3f |dT| %.3f; "
                "power <= cap: %s\n",
                f.pmax_meas_w, f.pmax_sim_w, f.pfi_meas, f.pfi_sim, f.max_dp, f.max_dt,
                f.power_at_or_below_cap ? "yes" : "no");
  return out + line;
}

nlohmann::json trace_fit_json(const TraceFit& f) {
  return {{"gpus", f.gpus},
          {"duration_s", f.duration_s},
          {"high_w", f.high_w},
          {"low_w", f.low_w},
          {"low_phases", f.low_phases},
          {"every_s", f.every_s},
          {"length_s", f.length_s},
          {"jitter", f.jitter},
          {"length_jitter", f.length_jitter},
          {"offset_sd", f.offset_sd_frac},
          {"noise_sd", f.noise_sd_frac}};
}

Result<TraceCheck> check_trace_fit(const PowerLog& log, const TraceFit& f, const std::string& yaml,
                                   double level_w, uint64_t seed, int seeds) {
  FW_ASSIGN_OR_RETURN(Scenario sc, parse_scenario(yaml, "fit-check", {}));
  const PowerLog meas = slice_log(log, f.first_sample, f.samples);
  const double level = level_w > 0 ? level_w : median_window30_w(meas);
  TraceCheck out{log_stats(meas, level), {}};
  out.simulated.level_w = level;
  for (int r = 0; r < seeds; ++r) {  // simulated statistics: mean over the seeds
    PowerLog sim;
    sim.dt_s = log.dt_s;
    sim.gpu_w.resize(sc.gpus.size());
    auto plant = make_cluster(sc, seed + static_cast<uint64_t>(r));
    Snapshot snap;
    for (size_t k = 1; k <= f.samples; ++k) {
      FW_RETURN_IF_ERROR(plant->read(static_cast<double>(k) * log.dt_s, snap));
      for (size_t g = 0; g < snap.gpus.size(); ++g) sim.gpu_w[g].push_back(snap.gpus[g].power_w);
    }
    const LogStats s = log_stats(sim, level);
    out.simulated.mean_w += s.mean_w / seeds;
    out.simulated.peak30_w += s.peak30_w / seeds;
    out.simulated.share_above += s.share_above / seeds;
  }
  return out;
}

nlohmann::json trace_check_json(const TraceCheck& c) {
  const LogStats &a = c.measured, &b = c.simulated;
  return {{"level_w", a.level_w},
          {"mean_w", {a.mean_w, b.mean_w}},
          {"peak30_w", {a.peak30_w, b.peak30_w}},
          {"share_30s_above", {a.share_above, b.share_above}}};
}

std::string trace_check_table(const TraceCheck& c) {
  const LogStats &a = c.measured, &b = c.simulated;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "check (node, measured vs simulated):\n  mean power      %8.1f %8.1f W\n"
                "  peak 30 s mean  %8.1f %8.1f W\n  trailing 30 s means > %.0f W: %.3f %.3f\n",
                a.mean_w, b.mean_w, a.peak30_w, b.peak30_w, a.level_w, a.share_above,
                b.share_above);
  return buf;
}

}  // namespace fw::sim
