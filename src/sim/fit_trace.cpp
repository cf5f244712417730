// Fit of an uncapped power log (sim/fit.hpp, part 2): levels, duty cycle, spread, noise.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "core/format.hpp"
#include "sim/fit.hpp"
#include "sim/fit_dynamics.hpp"
#include "sim/fit_segment.hpp"
#include "telemetry/trace_reader.hpp"

namespace fw::sim {
namespace {

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double sd_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// Per-GPU mean power of the node at each sample.
std::vector<double> node_mean(const PowerLog& log) {
  const size_t n = log.gpu_w.empty() ? 0 : log.gpu_w[0].size();
  std::vector<double> out(n, 0.0);
  for (const auto& g : log.gpu_w)
    for (size_t k = 0; k < n; ++k) out[k] += g[k] / static_cast<double>(log.gpu_w.size());
  return out;
}

}  // namespace

Result<PowerLog> read_power_log(const std::string& path, double dt_s) {
  if (!(dt_s > 0)) return Status::InvalidArgument("resampling step must be > 0");
  TraceReaderOptions opt;
  opt.fields = kFieldMemUtil;
  FW_ASSIGN_OR_RETURN(auto r, TraceReader::open(path, opt));
  std::vector<std::vector<double>> sum, cnt, usum, ucnt;
  TraceRow row;
  double t0 = 0;
  bool first = true, any_util = false;
  while (r->next(row)) {
    if (first) t0 = row.time_s, first = false;
    const int g = row.reading.gpu;
    const auto k = static_cast<size_t>(std::max(0.0, std::floor((row.time_s - t0) / dt_s)));
    if (static_cast<int>(sum.size()) <= g) {
      sum.resize(g + 1), cnt.resize(g + 1), usum.resize(g + 1), ucnt.resize(g + 1);
    }
    if (sum[g].size() <= k) {
      sum[g].resize(k + 1, 0.0), cnt[g].resize(k + 1, 0.0);
      usum[g].resize(k + 1, 0.0), ucnt[g].resize(k + 1, 0.0);
    }
    sum[g][k] += row.reading.power_w;
    cnt[g][k] += 1;
    if (std::isfinite(row.reading.mem_util)) {
      usum[g][k] += row.reading.mem_util;
      ucnt[g][k] += 1;
      any_util = true;
    }
  }
  FW_RETURN_IF_ERROR(r->status());
  PowerLog log;
  log.dt_s = dt_s;
  size_t n = 0;
  for (const auto& s : sum) n = std::max(n, s.size());
  for (size_t g = 0; g < sum.size(); ++g) {
    if (sum[g].empty()) continue;
    std::vector<double> w(n, NAN), u(n, NAN);
    double last = NAN;
    for (size_t k = 0; k < n; ++k) {
      if (k < cnt[g].size() && cnt[g][k] > 0) last = sum[g][k] / cnt[g][k];
      w[k] = last;
      if (k < ucnt[g].size() && ucnt[g][k] > 0) u[k] = usum[g][k] / ucnt[g][k];
    }
    const double first_w = *std::find_if(w.begin(), w.end(), [](double x) { return x == x; });
    for (double& x : w)
      if (!(x == x)) x = first_w;
    log.gpu_w.push_back(std::move(w));
    if (any_util) log.mem_util.push_back(std::move(u));
  }
  if (log.gpu_w.empty() || n < 4) return Status::InvalidArgument(path + ": too few samples");
  return log;
}

namespace {

double geo_mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(std::max(x, 1e-3));
  return v.empty() ? 0 : std::exp(s / static_cast<double>(v.size()));
}

double log_sd(const std::vector<double>& v) {
  std::vector<double> l;
  for (double x : v) l.push_back(std::log(std::max(x, 1e-3)));
  return sd_of(l);
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Uncapped power per GPU of `model` (one GPU, no noise or duty).
double uncapped_w(const GpuPreset& gpu, const PretrainModel& model, const SimParams& sp) {
  return simulate_sweep(gpu, model, {gpu.max_cap_w}, sp)[0].power_w;
}

// The model's own in-step swing as read (one GPU, no noise): variance and lag-one correlation
// of its readings every dt_s, over 120 s after a 10 s warm-up.
void model_swing(const GpuPreset& gpu, const PretrainModel& model, double iter_jitter, double dt_s,
                 const SimParams& sp, double* var_w2, double* acf1) {
  JobSpec j;
  j.kind = JobKind::kPretrain;
  j.gpus = {0};
  j.pretrain.model = model;
  j.pretrain.iter_jitter = iter_jitter;
  Cluster c(sp, {{&gpu, std::string(gpu.name), gpu.max_cap_w}}, {j}, 1);
  std::vector<double> w;
  Snapshot snap;
  for (int k = 1; k * dt_s <= 130; ++k) {
    (void)c.read(k * dt_s, snap);
    if (k * dt_s > 10) w.push_back(snap.gpus[0].power_w);
  }
  const double m = mean_of(w);
  double v = 0, c1 = 0;
  for (size_t k = 0; k < w.size(); ++k) {
    v += (w[k] - m) * (w[k] - m);
    if (k + 1 < w.size()) c1 += (w[k] - m) * (w[k + 1] - m);
  }
  *var_w2 = v / static_cast<double>(w.size());
  *acf1 = v > 0 ? c1 / v : 0;
}

// F2: fwd/bwd SM activity for the uncapped level target_w; at sm = 0 also the memory traffic.
// Unreachable levels: an error above (the GPU or preset is wrong), a warning below.
Result<JobMix> solve_level_checked(const GpuPreset& gpu, const PretrainModel& base, JobMix mix,
                                   double target_w, const SimParams& sp,
                                   std::vector<std::string>* warnings) {
  constexpr double kSmMax = 2.0;  // the scenario's limit of mix.sm
  JobMix m = mix;
  m.sm = kSmMax;
  const double top = uncapped_w(gpu, apply_mix(base, m), sp);
  if (target_w > top * 1.005) {
    return Status::InvalidArgument(
        strprintf("the log's training level %.0f W/GPU is above what ", target_w) +
        std::string(gpu.name) + " reaches with preset " + std::string(base.name) +
        strprintf(" at mix.sm's limit %.1f (%.0f W): the log is not from this GPU (check --gpu) or "
                  "needs another preset (--base)",
                  kSmMax, top));
  }
  m.sm = 0;
  const double floor_sm = uncapped_w(gpu, apply_mix(base, m), sp);
  if (target_w >= floor_sm) {
    double lo = 0, hi = kSmMax;
    for (int it = 0; it < 22; ++it) {
      m.sm = 0.5 * (lo + hi);
      (uncapped_w(gpu, apply_mix(base, m), sp) < target_w ? lo : hi) = m.sm;
    }
    m.sm = 0.5 * (lo + hi);
    return m;
  }
  // Below the model at sm = 0: lower the memory traffic too.
  m.mem = 0;
  const double floor_all = uncapped_w(gpu, apply_mix(base, m), sp);
  if (target_w <= floor_all) {
    warnings->push_back(
        strprintf("mix.sm and mix.mem held at their limit 0: the log's training level "
                  "%.0f W/GPU is below the lowest the model draws in training (%.0f "
                  "W: context idle %.0f W plus the preset's non-fwd/bwd phases); the "
                  "twin trains %.0f W/GPU high",
                  target_w, floor_all, gpu.idle_ctx_w, floor_all - target_w));
    return m;
  }
  double lo = 0, hi = mix.mem;
  for (int it = 0; it < 22; ++it) {
    m.mem = 0.5 * (lo + hi);
    (uncapped_w(gpu, apply_mix(base, m), sp) < target_w ? lo : hi) = m.mem;
  }
  m.mem = 0.5 * (lo + hi);
  warnings->push_back(
      strprintf("mix.sm held at its limit 0: the log's training level %.0f W/GPU is "
                "below what the preset draws at mix.sm = 0 (%.0f W); mix.mem lowered "
                "from %.3f to %.3f to reach it",
                target_w, floor_sm, mix.mem, m.mem));
  return m;
}

// Per-sample AR(1) correlation (step dt_sim) whose reading has lag-one (lag_steps) correlation
// r1 through `taps`.
double rho_for_acf(double r1, int taps, int lag_steps) {
  double lo = 0, hi = 0.99999;
  for (int it = 0; it < 50; ++it) {
    const double mid = 0.5 * (lo + hi);
    (box_ar1_acf(mid, taps, lag_steps) < r1 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// Pause level per GPU → duty (sm, mem) at full clock: P = P_ctx + K_sm·u + K_mem·m, m = 0.10.
void duty_load(const GpuPreset& gpu, double level_w, double* sm, double* mem,
               std::vector<std::string>* warnings, std::vector<std::string>* notes) {
  *mem = 0.10;
  *sm = (level_w - gpu.idle_ctx_w - gpu.mem_power_w * *mem) / gpu.sm_power_w;
  if (*sm > 2) {
    warnings->push_back(
        strprintf("duty.sm held at its limit 2 (fitted %.2f): the pauses' level %.0f "
                  "W/GPU is beyond the model's",
                  *sm, level_w));
    *sm = 2;
  }
  if (*sm >= 0) return;
  *sm = 0;
  *mem = (level_w - gpu.idle_ctx_w) / gpu.mem_power_w;
  if (*mem >= 0) {
    notes->push_back(
        strprintf("duty.sm = 0 (no SM activity in the pauses) and duty.mem %.3f for their "
                  "level %.0f W/GPU",
                  *mem, level_w));
    return;
  }
  *mem = 0;
  warnings->push_back(
      strprintf("duty.sm and duty.mem held at their limit 0: the pauses' level %.0f "
                "W/GPU is below ",
                level_w) +
      std::string(gpu.name) +
      strprintf("'s context-idle floor %.0f W (the lowest the model draws with a CUDA "
                "context at full clock); the twin's pauses sit %.0f W/GPU higher",
                gpu.idle_ctx_w, gpu.idle_ctx_w - level_w));
}

}  // namespace

// Long by design: the fit is a fixed sequence of estimates (segmentation, pauses, level,
// step time, noise) sharing the log; each step is one of the rules of docs/simulator.md.
Result<TraceFit> fit_trace(const PowerLog& log, const GpuPreset& gpu,
                           const std::string& base_workload, const SimParams& sim) {
  const PretrainModel* base = find_pretrain_model(base_workload);
  if (!base) return Status::InvalidArgument("unknown workload preset '" + base_workload + "'");
  const std::vector<double> node = node_mean(log);
  TraceFit f;
  f.gpus = static_cast<int>(log.gpu_w.size());
  f.base_workload = base_workload;
  const Segmentation seg = segment_log(node, log.dt_s);
  f.notes = seg.notes;
  f.threshold_w = seg.threshold_w;
  f.first_sample = seg.train_begin;
  f.samples = seg.train_end - seg.train_begin;
  f.duration_s = static_cast<double>(f.samples) * log.dt_s;
  if (f.duration_s < 60) {
    return Status::InvalidArgument(
        strprintf("the log holds %.0f s of training (at least 60 s needed)", f.duration_s));
  }
  // F1: pauses. Regular ones → duty; rare long ones → checkpoints.
  double low_s = 0;
  for (const auto& p : seg.pauses) low_s += static_cast<double>(p.end - p.begin) * log.dt_s;
  f.low_share = low_s / f.duration_s;
  f.low_phases = static_cast<int>(seg.regular_length_s.size());
  f.long_phases = static_cast<int>(seg.long_length_s.size());
  f.low_w = seg.regular_w;
  if (f.low_phases > 0) {
    if (!seg.regular_spacing_s.empty()) {
      f.every_s = geo_mean(seg.regular_spacing_s);
    } else {
      f.every_s = seg.train_time_s / f.low_phases;
      f.notes.push_back("pause spacing from the training time per pause (no complete spacing)");
    }
    f.length_s = geo_mean(seg.regular_length_s);
    const bool spread = seg.regular_spacing_s.size() >= 3;
    f.jitter = spread ? log_sd(seg.regular_spacing_s) : 0.1;
    f.length_jitter = seg.regular_length_s.size() >= 3 ? log_sd(seg.regular_length_s) : 0.1;
    if (!spread) f.notes.push_back("pause jitter: fewer than 3 complete spacings, 0.1 assumed");
    for (double* j : {&f.jitter, &f.length_jitter}) {
      if (*j > 2.0) {
        f.warnings.push_back(
            strprintf("duty jitter held at its limit 2.0 (measured %.2f): the pauses' "
                      "spacing or length is more irregular than a lognormal holds",
                      *j));
        *j = 2.0;
      }
    }
    duty_load(gpu, f.low_w, &f.duty_sm, &f.duty_mem, &f.warnings, &f.notes);
  }
  if (f.long_phases > 0) {
    f.long_every_s = seg.long_spacing_s;
    f.long_s = median_of(seg.long_length_s);
    f.long_w = seg.long_w;
    const double ckpt_w = gpu_power_w(gpu, {0.05, 0.10, 0.0}, 1.0);
    if (std::fabs(f.long_w - ckpt_w) > 0.1 * ckpt_w) {
      f.warnings.push_back(
          strprintf("the long pauses sit at %.0f W/GPU; the simulator's checkpoint "
                    "phase draws %.0f W (a fixed load, sm 0.05, mem 0.10): the "
                    "twin's long pauses are %+.0f W/GPU off",
                    f.long_w, ckpt_w, ckpt_w - f.long_w));
    }
    if (f.long_phases < 2) {
      f.warnings.push_back(
          strprintf("one long pause only: its spacing (%.0f s of training) is the "
                    "log's training time, a lower bound",
                    f.long_every_s));
    }
  }
  // F2: steady level per GPU and its spread.
  std::vector<double> gpu_means;
  for (const auto& g : log.gpu_w) {
    std::vector<double> v;
    for (size_t k = 0; k < g.size(); ++k)
      if (seg.steady[k]) v.push_back(g[k]);
    if (v.empty()) v.push_back(mean_of(g));
    gpu_means.push_back(mean_of(v));
  }
  f.high_w = mean_of(gpu_means);
  if (f.high_w < gpu.idle_ctx_w) {
    return Status::InvalidArgument(
        strprintf("the log's highest steady level, %.0f W/GPU, is below ", f.high_w) +
        std::string(gpu.name) +
        strprintf("'s context-idle power %.0f W: no training in the log, or another GPU (--gpu)",
                  gpu.idle_ctx_w));
  }
  f.offset_sd_frac = gpu_means.size() > 1 ? sd_of(gpu_means) / gpu.tdp_w : 0.0;
  if (f.offset_sd_frac > 0.5) {
    f.warnings.push_back(
        strprintf("hetero.offset_sd held at its limit 0.5 of TDP (measured %.2f): the "
                  "GPUs' training levels differ more than one job's do",
                  f.offset_sd_frac));
    f.offset_sd_frac = 0.5;
  }
  // F3: step time from the in-training autocorrelation (D2); without a period, a step short
  // enough that its phases average out within one reading.
  const TrainingDynamics dyn = training_dynamics(log, seg.steady);
  f.period_s = dyn.period_s;
  f.acf_at_period = dyn.acf_at_period;
  constexpr double kNoPeriodIterS = 0.1;  // = the simulator's step: phases average in it
  f.iter_s = f.period_s > 0 ? f.period_s : kNoPeriodIterS;
  f.iter_jitter = 0.01;
  f.tokens_per_iter = 4096.0 * 256 * f.iter_s / base->iter_s;
  if (f.period_s > 0) {
    f.notes.push_back(
        strprintf("step time %.2f s: the in-training autocorrelation peaks there (%.2f)",
                  f.period_s, f.acf_at_period));
  } else {
    f.notes.push_back(
        strprintf("no period in training (autocorrelation below 0.3 after 1 s): iter_s "
                  "%.1f s, whose phases average out within one reading",
                  kNoPeriodIterS));
  }
  SimParams sp = sim;
  sp.noise_w = 0;
  PretrainModel base_m = *base;
  base_m.iter_s = f.iter_s;
  JobMix mix0{base->load[1].u, base->load[1].m, base->load[1].c,
              1 - base->share[0] - base->share[1]};
  // F2a: the job's own memory traffic where the log carries it (utilization.memory, the share
  // of time device memory was read or written: a proxy of mix.mem), mean over steady training.
  bool mem_from_log = false;
  if (log.mem_util.size() == log.gpu_w.size()) {
    double su = 0, nu = 0;
    for (const auto& u : log.mem_util)
      for (size_t k = 0; k < u.size(); ++k)
        if (seg.steady[k] && std::isfinite(u[k])) su += u[k], nu += 1;
    if (nu > 0.5 * static_cast<double>(f.gpus) * static_cast<double>(dyn.samples)) {
      mix0.mem = std::clamp(su / nu, 0.0, 1.0);
      mem_from_log = true;
      f.notes.push_back(
          strprintf("mix.mem %.3f from the log's utilization.memory (mean over steady "
                    "training)",
                    mix0.mem));
    }
  }
  FW_ASSIGN_OR_RETURN(f.mix, solve_level_checked(gpu, base_m, mix0, f.high_w, sp, &f.warnings));
  double var_sw = 0, acf_sw = 0;
  model_swing(gpu, apply_mix(base_m, f.mix), f.iter_jitter, log.dt_s, sp, &var_sw, &acf_sw);
  // F4: with a period, the share outside fwd/bwd sets the swing: fitted so that the model's
  // swing variance is the log's periodic part (autocorrelation at the period × variance).
  if (f.period_s > 0) {
    const double target = std::max(0.0, f.acf_at_period) * dyn.node_var_w2;
    double lo = 0.005, hi = 0.5;
    if (std::fabs(var_sw - target) > 0.2 * target) {
      JobMix m = f.mix;
      for (int it = 0; it < 12; ++it) {
        m.comm_share = 0.5 * (lo + hi);
        std::vector<std::string> scratch;
        FW_ASSIGN_OR_RETURN(JobMix mm, solve_level_checked(gpu, base_m, m, f.high_w, sp, &scratch));
        model_swing(gpu, apply_mix(base_m, mm), f.iter_jitter, log.dt_s, sp, &var_sw, &acf_sw);
        (var_sw < target ? lo : hi) = m.comm_share;
      }
      m.comm_share = 0.5 * (lo + hi);
      FW_ASSIGN_OR_RETURN(f.mix, solve_level_checked(gpu, base_m, m, f.high_w, sp, &f.warnings));
      model_swing(gpu, apply_mix(base_m, f.mix), f.iter_jitter, log.dt_s, sp, &var_sw, &acf_sw);
      if (m.comm_share <= 0.006 || m.comm_share >= 0.499) {
        f.warnings.push_back(
            strprintf("mix.comm_share held at its search limit %.3f: the log's periodic "
                      "swing (sd %.1f W/GPU) is beyond the preset's phase contrast",
                      m.comm_share, std::sqrt(target)));
      }
      f.notes.push_back(
          strprintf("mix.comm_share %.3f fitted to the periodic swing (sd %.1f W/GPU)",
                    f.mix.comm_share, std::sqrt(target)));
    }
  }
  // F5: noise. Independent per GPU in the simulator; the log's aperiodic part common to the
  // GPUs is carried as independent noise of the size that keeps the node's variance.
  const double n = static_cast<double>(f.gpus);
  const double common_ap = std::max(0.0, dyn.common_var_w2 - var_sw);
  double read_var = n * common_ap + dyn.indep_var_w2 - sim.noise_w * sim.noise_w;
  const double ap_var = dyn.node_var_w2 - var_sw;
  double r1 = dyn.acf.size() > 1 && ap_var > 0
                  ? (dyn.acf[1] * dyn.node_var_w2 - acf_sw * var_sw) / ap_var
                  : 0.5;
  r1 = std::clamp(r1, 0.02, 0.98);
  const int taps = gpu.power_avg_1s ? static_cast<int>(std::lround(1.0 / sim.dt_s)) : 1;
  const int lag_steps = static_cast<int>(std::lround(log.dt_s / sim.dt_s));
  const double rho = rho_for_acf(r1, taps, lag_steps);
  f.noise_tau_s = -sim.dt_s / std::log(std::max(rho, 1e-9));
  if (f.noise_tau_s < 0.01 || f.noise_tau_s > 3600) {
    const double lim = f.noise_tau_s < 0.01 ? 0.01 : 3600;
    f.warnings.push_back(
        strprintf("hetero.noise_tau_s held at its limit %.2f s (fitted %.3g s from a "
                  "lag-0.5 s autocorrelation of %.2f)",
                  lim, f.noise_tau_s, r1));
    f.noise_tau_s = lim;
  }
  if (read_var > 0) {
    f.noise_sd_frac = std::sqrt(read_var / box_ar1_var_factor(rho, taps)) / gpu.tdp_w;
  } else {
    f.noise_sd_frac = 0;
    f.notes.push_back("hetero.noise_sd 0: the model's own swing holds the log's variance");
  }
  if (f.noise_sd_frac > 0.5) {
    f.warnings.push_back(
        strprintf("hetero.noise_sd held at its limit 0.5 of TDP (fitted %.2f)", f.noise_sd_frac));
    f.noise_sd_frac = 0.5;
  }
  if (n > 1 && common_ap > 0.2 * (common_ap + dyn.indep_var_w2)) {
    f.notes.push_back(strprintf(
        "%.0f %% of the in-training variance per GPU is common to the GPUs; "
        "the twin's noise is independent per GPU, sized to keep the node's "
        "variance (its per-GPU sd is %.1fx the log's)",
        100 * common_ap / (common_ap + dyn.indep_var_w2),
        std::sqrt((read_var + var_sw) / std::max(1e-9, dyn.common_var_w2 + dyn.indep_var_w2))));
  }
  if (f.long_phases > 0) {
    const double it_s = f.iter_s;  // iteration time at full clock (jitter's mean ≈ 1)
    f.checkpoint_every_iters = std::max(1, static_cast<int>(std::lround(f.long_every_s / it_s)));
  }
  f.notes.push_back("from preset " + base_workload + ": " + (mem_from_log ? "" : "mix.mem, ") +
                    "mix.compute_bound" +
                    (f.period_s > 0 ? std::string() : std::string(", mix.comm_share")) +
                    " (a power log without caps holds no cap response; fit a cap sweep for "
                    "them)");
  // F6: the written budget: the log's peak trailing 30 s node mean, rounded up to 10 W.
  const PowerLog span = slice_log(log, f.first_sample, f.samples);
  const LogStats st = log_stats(span, 0);
  f.budget_w = std::ceil(st.peak30_w / 10) * 10;
  f.budget_reason = strprintf(
      "the log's peak trailing 30 s mean (%.0f W) rounded up to 10 W (%.0f W): the job as "
      "measured stays within it at the 30 s window",
      st.peak30_w, f.budget_w);
  return f;
}

namespace {
// Tensor-parallel degree of the twin: the largest divisor of the GPU count up to 8.
int tp_for(int gpus) {
  for (int tp = std::min(8, gpus); tp > 1; --tp)
    if (gpus % tp == 0) return tp;
  return 1;
}
}  // namespace

std::string trace_fit_yaml(const TraceFit& f, const GpuPreset& gpu, const std::string& name) {
  // Without pauses their level, spacing and length are not measured: the header says "no
  // regular pauses" rather than quote the zeros the fit holds for them.
  std::string head =
      "# Fitted by `flexwatt fit` to a measured uncapped power log (simulated twin).\n" +
      (f.low_phases > 0
           ? strprintf("# Measured per GPU: training %.1f W, %d regular pauses at %.1f W (median "
                       "%.1f s of\n# training between them, %.1f s long)",
                       f.high_w, f.low_phases, f.low_w, f.every_s, f.length_s)
           : strprintf("# Measured per GPU: training %.1f W, no regular pauses", f.high_w)) +
      (f.long_phases > 0
           ? strprintf(", %d long pauses at %.1f W (%.1f s, every %.0f s of training:\n#"
                       " checkpoints)",
                       f.long_phases, f.long_w, f.long_s, f.long_every_s)
           : std::string()) +
      strprintf("; spread sd %.4f of TDP, noise sd %.4f of TDP.\n", f.offset_sd_frac,
                f.noise_sd_frac) +
      "# Budget: " + f.budget_reason + ".\n";
  for (const auto& w : f.warnings) head += "# warning: " + w + "\n";
  char buf[2400];
  const double every = f.low_phases > 0 ? f.every_s : 0;
  std::snprintf(
      buf, sizeof buf,
      "name: %s\n"
      "duration_s: %.1f\n"
      "sample_period_s: 0.5\n"
      "gpus:\n  - {model: %s, count: %d}\n"
      "budget: {watts: %.0f, scope: node, window_s: 30}\n"
      "jobs:\n"
      "  - name: fitted\n    kind: pretrain\n    workload: %s\n    gpus: %d\n    tp: %d\n"
      "    iter_s: %.4f\n    iter_jitter: %.3f\n    tokens_per_iter: %.0f\n"
      "    checkpoint_every_iters: %d\n    checkpoint_s: %.2f\n"
      "    mix: {sm: %.4f, mem: %.4f, compute_bound: %.4f, comm_share: %.4f}\n"
      "    duty: {every_s: %.2f, length_s: %.2f, jitter: %.3f, length_jitter: %.3f, sm: %.4f, "
      "mem: %.4f}\n"
      "    hetero: {offset_sd: %.4f, noise_sd: %.4f, noise_tau_s: %.3f}\n",
      name.c_str(), f.duration_s, std::string(gpu.name).c_str(), f.gpus, f.budget_w,
      f.base_workload.c_str(), f.gpus, tp_for(f.gpus), f.iter_s, f.iter_jitter, f.tokens_per_iter,
      f.checkpoint_every_iters, f.long_phases > 0 ? f.long_s : 20.0, f.mix.sm, f.mix.mem,
      f.mix.compute_bound, f.mix.comm_share, every, f.length_s, f.jitter, f.length_jitter,
      f.duty_sm, f.duty_mem, f.offset_sd_frac, f.noise_sd_frac, f.noise_tau_s);
  return head + buf;
}

PowerLog slice_log(const PowerLog& log, size_t first, size_t n) {
  PowerLog out;
  out.dt_s = log.dt_s;
  for (const auto& g : log.gpu_w) {
    const size_t a = std::min(first, g.size()), b = std::min(first + n, g.size());
    out.gpu_w.emplace_back(g.begin() + static_cast<std::ptrdiff_t>(a),
                           g.begin() + static_cast<std::ptrdiff_t>(b));
  }
  return out;
}

namespace {
// Trailing 30 s means of the node power (sum over GPUs), one per sample once a window is full.
std::vector<double> trailing30(const PowerLog& log) {
  std::vector<double> node = node_mean(log);
  for (double& x : node) x *= static_cast<double>(log.gpu_w.size());
  const auto w = static_cast<size_t>(std::lround(30.0 / log.dt_s));
  std::vector<double> out;
  double sum = 0;
  for (size_t k = 0; k < node.size(); ++k) {
    sum += node[k];
    if (k >= w) sum -= node[k - w];
    if (k + 1 >= w) out.push_back(sum / static_cast<double>(w));
  }
  return out;
}
}  // namespace

double median_window30_w(const PowerLog& log) {
  std::vector<double> m = trailing30(log);
  if (m.empty()) return 0;
  std::nth_element(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(m.size() / 2), m.end());
  return m[m.size() / 2];
}

LogStats log_stats(const PowerLog& log, double level_w) {
  LogStats s;
  s.level_w = level_w;
  const std::vector<double> node = node_mean(log);
  s.mean_w = mean_of(node) * static_cast<double>(log.gpu_w.size());
  const std::vector<double> m = trailing30(log);
  int64_t above = 0;
  for (double x : m) {
    s.peak30_w = std::max(s.peak30_w, x);
    above += x > level_w;
  }
  s.share_above = m.empty() ? 0 : static_cast<double>(above) / static_cast<double>(m.size());
  return s;
}

}  // namespace fw::sim
