// Reports of `flexwatt fit` (sim/fit.hpp, part 3): re-simulation check, tables and JSON.

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/fit.hpp"
#include "sim/fit_dynamics.hpp"
#include "sim/fit_segment.hpp"
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
          {"gpus", f.gpus},
          {"warnings", f.warnings},
          {"notes", f.notes},
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
          {"first_sample", f.first_sample},
          {"high_w", f.high_w},
          {"low_w", f.low_w},
          {"threshold_w", f.threshold_w},
          {"low_phases", f.low_phases},
          {"every_s", f.every_s},
          {"length_s", f.length_s},
          {"jitter", f.jitter},
          {"length_jitter", f.length_jitter},
          {"long_phases", f.long_phases},
          {"long_every_s", f.long_every_s},
          {"long_s", f.long_s},
          {"long_w", f.long_w},
          {"checkpoint_every_iters", f.checkpoint_every_iters},
          {"low_share", f.low_share},
          {"period_s", f.period_s},
          {"acf_at_period", f.acf_at_period},
          {"iter_s", f.iter_s},
          {"offset_sd", f.offset_sd_frac},
          {"noise_sd", f.noise_sd_frac},
          {"noise_tau_s", f.noise_tau_s},
          {"mix",
           {{"sm", f.mix.sm},
            {"mem", f.mix.mem},
            {"compute_bound", f.mix.compute_bound},
            {"comm_share", f.mix.comm_share}}},
          {"budget_w", f.budget_w},
          {"budget_reason", f.budget_reason},
          {"warnings", f.warnings},
          {"notes", f.notes}};
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

Result<SweepCheck> check_sweep_fit(const SweepFit& f, const std::string& yaml, uint64_t seed) {
  SweepCheck out;
  out.gpus = f.gpus;
  const std::string key = "count: " + std::to_string(f.gpus) + "}";
  const size_t at = yaml.find(key);
  if (at == std::string::npos) return Status::Internal("sweep check: no GPU entry in the YAML");
  std::vector<SweepFitRow> rows;
  for (const auto& r : f.rows) {
    std::string y = yaml;
    char cap[64];
    std::snprintf(cap, sizeof cap, "count: %d, power_cap_w: %.1f}", f.gpus, r.cap_w);
    y.replace(at, key.size(), cap);
    FW_ASSIGN_OR_RETURN(Scenario sc, parse_scenario(y, "fit-sweep-check", {}));
    auto plant = make_cluster(sc, seed);
    Snapshot snap;
    const double dt = sc.sample_period_s, warm_s = 20, span_s = 100;
    double sum_w = 0, steps0 = 0, steps1 = 0;
    int64_t n = 0;
    for (int64_t k = 1; static_cast<double>(k) * dt <= warm_s + span_s + 1e-9; ++k) {
      FW_RETURN_IF_ERROR(plant->read(static_cast<double>(k) * dt, snap));
      const double t = static_cast<double>(k) * dt;
      if (t <= warm_s) {
        steps0 = snap.jobs[0].steps_total;
        continue;
      }
      for (const auto& g : snap.gpus) sum_w += g.power_w;
      n += static_cast<int64_t>(snap.gpus.size());
      steps1 = snap.jobs[0].steps_total;
    }
    rows.push_back({r.cap_w, r.p_meas, sum_w / static_cast<double>(std::max<int64_t>(n, 1)),
                    r.t_meas, (steps1 - steps0) / span_s, 0});
  }
  const double p_top = rows.back().p_sim, t_top = rows.back().t_sim;
  for (auto& r : rows) {
    r.power_w_sim = r.p_sim;
    r.p_sim = p_top > 0 ? r.p_sim / p_top : 0;
    r.t_sim = t_top > 0 ? r.t_sim / t_top : 0;
    out.max_dp = std::max(out.max_dp, std::fabs(r.p_sim - r.p_meas));
    out.max_dt = std::max(out.max_dt, std::fabs(r.t_sim - r.t_meas));
  }
  out.rows = rows;
  return out;
}

nlohmann::json sweep_check_json(const SweepCheck& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows) {
    rows.push_back({{"cap_w", r.cap_w},
                    {"p_meas", r.p_meas},
                    {"p_sim", r.p_sim},
                    {"t_meas", r.t_meas},
                    {"t_sim", r.t_sim},
                    {"power_w_sim", r.power_w_sim}});
  }
  return {{"gpus", c.gpus}, {"rows", rows}, {"max_dp", c.max_dp}, {"max_dt", c.max_dt}};
}

std::string sweep_check_table(const SweepCheck& c) {
  char line[256];
  std::snprintf(line, sizeof line,
                "check: the written scenario at %d GPUs, every cap (simulated)\n"
                "  cap_W  P/Pmax meas    sim  T/Tmax meas    sim\n",
                c.gpus);
  std::string out = line;
  for (const auto& r : c.rows) {
    std::snprintf(line, sizeof line, "  %5.0f  %11.3f %6.3f  %11.3f %6.3f\n", r.cap_w, r.p_meas,
                  r.p_sim, r.t_meas, r.t_sim);
    out += line;
  }
  std::snprintf(line, sizeof line, "  worst |dP| %.3f |dT| %.3f\n", c.max_dp, c.max_dt);
  return out + line;
}

namespace {

std::vector<double> node_sum(const PowerLog& l) {
  const size_t n = l.gpu_w.empty() ? 0 : l.gpu_w[0].size();
  std::vector<double> out(n, 0.0);
  for (const auto& g : l.gpu_w)
    for (size_t k = 0; k < n; ++k) out[k] += g[k];
  return out;
}

double quantile_of(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

std::vector<double> trailing_means(const std::vector<double>& x, double dt_s, double w_s) {
  const auto w = static_cast<size_t>(std::max(1L, std::lround(w_s / dt_s)));
  std::vector<double> out;
  double s = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    s += x[k];
    if (k >= w) s -= x[k - w];
    if (k + 1 >= w) out.push_back(s / static_cast<double>(w));
  }
  return out;
}

// Figures of one node series (sum over GPUs), in row order (see FitReport).
struct Figures {
  std::vector<double> v;
  double period_s = 0;
};

constexpr double kWindows[3] = {1, 5, 30};

Figures figures(const PowerLog& l, const TraceFit& f, const std::vector<double>& budgets,
                double acf_lag_s) {
  Figures out;
  const std::vector<double> x = node_sum(l);
  const double gpus = static_cast<double>(l.gpu_w.size());
  double mean = 0;
  for (double v : x) mean += v / static_cast<double>(x.size());
  out.v = {mean, quantile_of(x, 0.05), quantile_of(x, 0.50), quantile_of(x, 0.95)};
  std::vector<double> per(x.size());
  for (size_t k = 0; k < x.size(); ++k) per[k] = x[k] / gpus;
  const Segmentation seg = segment_log(per, l.dt_s);
  double low = 0;
  for (double v : per) low += v < f.threshold_w;
  out.v.push_back(low / static_cast<double>(per.size()));
  const double pauses = static_cast<double>(seg.pauses.size());
  out.v.push_back(pauses > 0 ? static_cast<double>(x.size()) * l.dt_s / pauses : 0);
  for (double b : budgets) {
    for (double w : kWindows) {
      const auto m = trailing_means(x, l.dt_s, w);
      double above = 0;
      for (double v : m) above += v > b;
      out.v.push_back(m.empty() ? 0 : above / static_cast<double>(m.size()));
    }
  }
  const auto m30 = trailing_means(x, l.dt_s, 30);
  out.v.push_back(m30.empty() ? 0 : *std::max_element(m30.begin(), m30.end()));
  const TrainingDynamics d = training_dynamics(l, seg.steady);
  const auto lag = static_cast<size_t>(std::lround(acf_lag_s / l.dt_s));
  out.v.push_back(lag < d.acf.size() ? d.acf[lag] : 0);
  out.period_s = d.period_s;
  return out;
}

std::string verdict_of(double err, double good, double usable) {
  const double a = std::fabs(err);
  return a <= good ? "good" : a <= usable ? "usable" : "not reliable";
}

int rank(const std::string& v) { return v == "good" ? 0 : v == "usable" ? 1 : 2; }

}  // namespace

// Reason for length: one table of figures, each with its tolerance, filled from two series.
Result<FitReport> report_trace_fit(const PowerLog& log, const TraceFit& f, const std::string& yaml,
                                   double level_w, uint64_t seed, int seeds) {
  FW_ASSIGN_OR_RETURN(Scenario sc, parse_scenario(yaml, "fit-report", {}));
  const PowerLog meas = slice_log(log, f.first_sample, f.samples);
  const std::vector<double> m1 = trailing_means(node_sum(meas), meas.dt_s, 1.0);
  FitReport r;
  r.seeds = seeds;
  r.budgets_w = {level_w > 0 ? level_w : quantile_of(m1, 0.90), quantile_of(m1, 0.99)};
  const double acf_lag = f.period_s > 0 ? f.period_s : 1.0;
  const Figures a = figures(meas, f, r.budgets_w, acf_lag);
  Figures b;
  b.v.assign(a.v.size(), 0.0);
  for (int s = 0; s < seeds; ++s) {
    PowerLog sim;
    sim.dt_s = log.dt_s;
    sim.gpu_w.resize(sc.gpus.size());
    auto plant = make_cluster(sc, seed + static_cast<uint64_t>(s));
    Snapshot snap;
    for (size_t k = 1; k <= f.samples; ++k) {
      FW_RETURN_IF_ERROR(plant->read(static_cast<double>(k) * log.dt_s, snap));
      for (size_t g = 0; g < snap.gpus.size(); ++g) sim.gpu_w[g].push_back(snap.gpus[g].power_w);
    }
    const Figures fs = figures(sim, f, r.budgets_w, acf_lag);
    for (size_t i = 0; i < b.v.size(); ++i) b.v[i] += fs.v[i] / seeds;
    b.period_s += fs.period_s / seeds;
  }
  struct Spec {
    std::string name;
    std::string label;
    const char* unit;
    bool rel;
    double good, usable;
  };
  std::vector<Spec> spec = {{"mean_w", "mean", "W", true, 0.03, 0.06},
                            {"p5_w", "p5", "W", true, 0.03, 0.06},
                            {"p50_w", "p50", "W", true, 0.03, 0.06},
                            {"p95_w", "p95", "W", true, 0.03, 0.06},
                            {"low_share", "low-phase share", "", false, 0.03, 0.08},
                            {"pause_spacing_s", "pause spacing", "s", true, 0.10, 0.25}};
  static const char* kB[2] = {"b1", "b2"};
  for (int bi = 0; bi < 2; ++bi) {
    for (double w : kWindows) {
      char name[48], label[64];
      std::snprintf(name, sizeof name, "viol_%.0fs_at_%s", w, kB[bi]);
      std::snprintf(label, sizeof label, "%2.0f s means > %.0f W", w, r.budgets_w[bi]);
      spec.push_back({name, label, "", false, 0.05, 0.10});
    }
  }
  char acf_label[64];
  std::snprintf(acf_label, sizeof acf_label, "acf at %.2f s%s", acf_lag,
                f.period_s > 0 ? " (step)" : "");
  spec.push_back({"peak30_w", "peak 30 s mean", "W", true, 0.05, 0.10});
  spec.push_back({"acf_at_step", acf_label, "", false, 0.15, 0.30});
  for (size_t i = 0; i < spec.size(); ++i) {
    ReportRow row{spec[i].name, spec[i].label, spec[i].unit,   a.v[i], b.v[i], 0,
                  spec[i].rel,  spec[i].good,  spec[i].usable, ""};
    if (row.relative) {
      row.error = row.log != 0 ? row.twin / row.log - 1 : (row.twin != 0 ? 1 : 0);
    } else {
      row.error = row.twin - row.log;
    }
    row.verdict = verdict_of(row.error, row.good, row.usable);
    r.rows.push_back(row);
  }
  if (f.period_s > 0) {
    ReportRow row{"period_s", "dominant period", "s", a.period_s, b.period_s, 0, true, 0.10, 0.20,
                  ""};
    row.error = row.log > 0 ? row.twin / row.log - 1 : 1;
    row.verdict = verdict_of(row.error, row.good, row.usable);
    r.rows.push_back(row);
  }
  int worst = 0;
  std::string bad, fair;
  for (const auto& row : r.rows) {
    worst = std::max(worst, rank(row.verdict));
    if (row.verdict == "not reliable") bad += (bad.empty() ? "" : ", ") + row.label;
    if (row.verdict == "usable") fair += (fair.empty() ? "" : ", ") + row.label;
  }
  if (worst == 2) {
    r.verdict = "not reliable";
    r.reason = "outside the usable tolerance: " + bad;
  } else if (worst == 1) {
    r.verdict = "usable";
    r.reason = "outside the good tolerance: " + fair;
  } else {
    r.verdict = "good";
    r.reason = "every figure within its good tolerance";
  }
  if (!f.warnings.empty() && worst == 0) {
    r.verdict = "usable";
    r.reason = "the figures match, but the fit warned: " + f.warnings.front();
  }
  return r;
}

nlohmann::json fit_report_json(const FitReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& x : r.rows) {
    rows.push_back({{"name", x.name},
                    {"label", x.label},
                    {"unit", x.unit},
                    {"log", x.log},
                    {"twin", x.twin},
                    {"error", x.error},
                    {"relative", x.relative},
                    {"good", x.good},
                    {"usable", x.usable},
                    {"verdict", x.verdict}});
  }
  return {{"budgets_w", r.budgets_w},
          {"seeds", r.seeds},
          {"rows", rows},
          {"verdict", r.verdict},
          {"reason", r.reason}};
}

std::string fit_report_table(const FitReport& r) {
  char line[256];
  std::snprintf(line, sizeof line,
                "fit report (node power over the fitted span; twin simulated, mean of %d seeds):\n"
                "  %-28s %10s %10s %9s  %s\n",
                r.seeds, "figure", "log", "twin", "error", "verdict");
  std::string out = line;
  for (const auto& x : r.rows) {
    char err[32];
    if (x.relative) {
      std::snprintf(err, sizeof err, "%+.1f %%", 100 * x.error);
    } else {
      std::snprintf(err, sizeof err, "%+.3f", x.error);
    }
    const bool watts = x.unit == std::string("W");
    std::snprintf(
        line, sizeof line,
        watts ? "  %-28s %8.0f %s %8.0f %s %9s  %s\n" : "  %-28s %8.3f %s %8.3f %s %9s  %s\n",
        x.label.c_str(), x.log, x.unit.empty() ? " " : x.unit.c_str(), x.twin,
        x.unit.empty() ? " " : x.unit.c_str(), err, x.verdict.c_str());
    out += line;
  }
  return out + "verdict: " + r.verdict + " (" + r.reason + ")\n";
}

}  // namespace fw::sim
