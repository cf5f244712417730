#include "sim/fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

#include "core/csv.hpp"
#include "sim/nelder_mead.hpp"
#include "telemetry/trace_reader.hpp"

namespace fw::sim {
namespace {

// Runs one GPU with `model` at cap_w; mean power over whole iterations and iterations/s.
PfiPoint simulate_point(const GpuPreset& gpu, const PretrainModel& model, double cap_w,
                        const SimParams& sim) {
  JobSpec j;
  j.name = "fit";
  j.kind = JobKind::kPretrain;
  j.gpus = {0};
  j.pretrain.model = model;
  j.pretrain.iter_jitter = 0;
  j.pretrain.tokens_per_iter = 1;
  Cluster c(sim, {{&gpu, std::string(gpu.name), cap_w}}, {j}, 1);
  Snapshot snap;
  const double dt = sim.dt_s;
  const double warmup_s = 10 + 3 * model.iter_s, span_s = std::max(40.0, 25 * model.iter_s);
  double t = 0, last_steps = 0, t_a = -1, steps_a = 0, sum_w = 0;
  int64_t n_w = 0;
  for (int64_t k = 1;; ++k) {
    t = static_cast<double>(k) * dt;
    (void)c.read(t, snap);
    const double steps = snap.jobs[0].steps_total;
    if (t_a >= 0) {
      sum_w += c.true_power_w(0);
      ++n_w;
    }
    if (steps != last_steps && t >= warmup_s) {
      if (t_a < 0) {
        t_a = t;
        steps_a = steps;
      } else if (t - t_a >= span_s) {
        return {cap_w, (steps - steps_a) / (t - t_a), sum_w / static_cast<double>(n_w)};
      }
    }
    last_steps = steps;
    if (t > 10 * (warmup_s + span_s)) break;  // no progress (cannot happen with duty > 0)
  }
  return {cap_w, 1e-9, n_w > 0 ? sum_w / static_cast<double>(n_w) : 0};
}

const char* base_for_job(const std::string& job) {
  const std::string j = ascii_lower(job);
  if (j.find("moe") != std::string::npos) return j.rfind("ft", 0) == 0 ? "moe-ft" : "moe-pt";
  if (j.rfind("ft", 0) == 0 || j.find("finetune") != std::string::npos) return "llama-8b-ft";
  if (j.rfind("infer", 0) == 0) return "llama-8b-ft";
  return "mpt-13b-pt";
}

// Sanity limits of a sweep row. Per GPU: the largest GPUs' caps are ~1.2-1.4 kW, so a cap or a
// per-GPU draw above 5 kW is a node total or a unit mistake (assumption: no single GPU reaches
// it). Throughput: any unit a user would log stays far below 1e15.
constexpr double kMaxSweepGpuW = 5000;
constexpr double kMaxSweepThroughput = 1e15;
// Search box of the sweep fit's mix: physical values (activity and traffic fractions of the
// peak at f_max ≤ 1, shares in [0, 1]), comm_share below 0.6.
constexpr std::array<double, 4> kMixLo = {0.2, 0.05, 0.05, 0.0};
constexpr std::array<double, 4> kMixHi = {1.0, 1.0, 1.0, 0.6};

}  // namespace

Result<std::vector<MeasuredSweep>> read_sweep_csv(const std::string& path,
                                                  const std::string& only_job) {
  FW_ASSIGN_OR_RETURN(auto r, CsvReader::open(path));
  if (!r->next()) {
    FW_RETURN_IF_ERROR(r->status());
    return Status::InvalidArgument(path + ": empty file");
  }
  std::vector<std::string> h;
  for (auto f : r->fields()) h.push_back(ascii_lower(f));
  // Column indices: job, cap, per-GPU power, throughput.
  int ij = -1, ic = -1, ip = -1, it = -1, itot = -1, ig = -1;
  for (int i = 0; i < static_cast<int>(h.size()); ++i) {
    const std::string& x = h[i];
    if (x == "total gpu power") itot = i;
    if (x == "gpus") ig = i;
    if (x == "workload" || x == "job") ij = i;
    if (x == "gpu power cap" || x == "cap_w") ic = i;
    if (x == "power per gpu" || x == "power_w") ip = i;
    if (x == "throughput") it = i;
  }
  if (ij < 0 || ic < 0 || ip < 0 || it < 0) {
    return Status::InvalidArgument(
        path +
        ":1: header: expected job,cap_w,power_w,throughput or the A100 sweep's "
        "Workload,GPU power cap,throughput,...,power per GPU");
  }
  std::map<std::string, MeasuredSweep> by_job;
  std::map<std::string, std::map<double, int64_t>> cap_line;  // job -> cap -> its first line
  std::vector<std::string> order;
  const std::array<std::pair<int, const char*>, 3> cols = {
      {{ic, "cap"}, {ip, "power"}, {it, "throughput"}}};
  while (r->next()) {
    const auto& f = r->fields();
    if (static_cast<int>(f.size()) <= std::max({ij, ic, ip, it})) {
      return Status::InvalidArgument(r->where() + ": too few fields");
    }
    SweepPoint p;
    double* out[3] = {&p.cap_w, &p.power_w, &p.throughput};
    for (int k = 0; k < 3; ++k) {
      if (!parse_double(f[cols[k].first], *out[k]) || !(*out[k] > 0)) {
        return Status::InvalidArgument(r->where() + ": " + cols[k].second +
                                       ": expected a positive number, got '" +
                                       std::string(f[cols[k].first]) + "'");
      }
      const double limit = k < 2 ? kMaxSweepGpuW : kMaxSweepThroughput;
      if (*out[k] > limit) {
        return Status::InvalidArgument(
            r->where() + ": " + cols[k].second + ": '" + std::string(f[cols[k].first]) +
            (k < 2 ? "' W is beyond any GPU's cap or draw (a node's total, or another unit?)"
                   : "' is beyond a sane throughput"));
      }
    }
    const std::string job(f[ij]);
    const auto [first, fresh] = cap_line[job].emplace(p.cap_w, r->line_number());
    if (!fresh) {
      return Status::InvalidArgument(r->where() + ": cap: " + std::string(f[ic]) + " W: job '" +
                                     job + "' has this cap already on line " +
                                     std::to_string(first->second) + " (one row per cap)");
    }
    if (!by_job.count(job)) order.push_back(job);
    by_job[job].job = job;
    by_job[job].points.push_back(p);
    // Job size: a gpus column, or total over per-GPU power (the A100 sweep's columns).
    double total = 0, gpus = 0;
    if (ig >= 0 && static_cast<int>(f.size()) > ig) {
      if (!parse_double(f[ig], gpus) || !(gpus >= 1) || gpus > 100000) {
        return Status::InvalidArgument(r->where() + ": gpus: expected a GPU count, got '" +
                                       std::string(f[ig]) + "'");
      }
    } else if (itot >= 0 && static_cast<int>(f.size()) > itot && parse_double(f[itot], total) &&
               total > 0) {
      gpus = total / p.power_w;
    }
    if (gpus >= 1) by_job[job].gpus = static_cast<int>(std::lround(gpus));
  }
  FW_RETURN_IF_ERROR(r->status());
  std::vector<MeasuredSweep> out;
  for (const auto& j : order) {
    if (!only_job.empty() && j != only_job) continue;
    MeasuredSweep m = by_job[j];
    std::sort(m.points.begin(), m.points.end(),
              [](const SweepPoint& a, const SweepPoint& b) { return a.cap_w < b.cap_w; });
    if (m.points.size() < 2) {
      return Status::InvalidArgument(path + ": job " + j + ": a sweep needs at least two caps");
    }
    out.push_back(std::move(m));
  }
  if (out.empty() && only_job.empty()) return Status::InvalidArgument(path + ": no data rows");
  return out;
}

PretrainModel apply_mix(const PretrainModel& base, const JobMix& mix) {
  PretrainModel m = base;
  const double fb = base.share[0] + base.share[1];
  for (int k = 0; k < 2; ++k) {
    m.load[k] = {mix.sm, mix.mem, mix.compute_bound};
    m.share[k] = base.share[k] * (1 - mix.comm_share) / fb;
  }
  for (int k = 2; k < 5; ++k) m.share[k] = fb < 1 ? base.share[k] * mix.comm_share / (1 - fb) : 0;
  return m;
}

std::vector<PfiPoint> simulate_sweep(const GpuPreset& gpu, const PretrainModel& model,
                                     const std::vector<double>& caps_w, const SimParams& sim) {
  std::vector<PfiPoint> out;
  for (double cap : caps_w) {
    out.push_back(simulate_point(gpu, model, std::clamp(cap, gpu.min_cap_w, gpu.max_cap_w), sim));
  }
  return out;
}

// Reason for length: one objective (residuals of the sweep) and its report, kept together.
Result<SweepFit> fit_sweep(const MeasuredSweep& m, const GpuPreset& gpu,
                           const std::string& base_workload, const SimParams& sim) {
  const std::string base_name = base_workload.empty() ? base_for_job(m.job) : base_workload;
  const PretrainModel* base = find_pretrain_model(base_name);
  if (!base) return Status::InvalidArgument("unknown workload preset '" + base_name + "'");
  std::vector<double> caps;
  for (const auto& p : m.points) caps.push_back(p.cap_w);
  const SweepPoint& top = m.points.back();
  SimParams sp = sim;
  sp.noise_w = 0;
  auto residuals = [&](const std::vector<PfiPoint>& s, double* dp, double* dt, double* dmax) {
    const PfiPoint& st = s.back();
    double err = 0;
    *dp = *dt = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      const double ep = s[i].power_w / st.power_w - m.points[i].power_w / top.power_w;
      const double et = s[i].throughput / st.throughput - m.points[i].throughput / top.throughput;
      // Also the power against the measured P_max (the absolute level: the margin below the cap).
      const double ea = (s[i].power_w - m.points[i].power_w) / top.power_w;
      *dp = std::max(*dp, std::fabs(ep));
      *dt = std::max(*dt, std::fabs(et));
      err += ep * ep + et * et + ea * ea;
    }
    *dmax = (st.power_w - top.power_w) / top.power_w;
    return err + *dmax * *dmax;
  };
  std::vector<PfiPoint> meas;
  for (const auto& p : m.points) meas.push_back({p.cap_w, p.throughput, p.power_w});
  auto pm = compute_pfi(meas, 0.002);
  const double pfi_meas = pm.ok() ? *pm : 0;
  // Objective: squared residuals of P/P_max and T/T_max, the worst of them again (favours a
  // small worst point), P_max and PFI as relative errors.
  auto eval = [&](const std::array<double, 4>& x) {
    const auto s = simulate_sweep(gpu, apply_mix(*base, {x[0], x[1], x[2], x[3]}), caps, sp);
    double dp, dt, dmax;
    double e = residuals(s, &dp, &dt, &dmax) + 3 * dmax * dmax;
    auto hinge = [](double r, double tol) {
      return std::pow(std::max(0.0, std::fabs(r) - tol), 2);
    };
    e += 50 * (hinge(dp, 0.02) + hinge(dt, 0.02));
    auto ps = compute_pfi(s, 0.002);
    if (pfi_meas > 0) {
      const double r = (ps.ok() ? *ps : 0) / pfi_meas - 1;
      e += 0.02 * r * r + 50 * hinge(r, 0.03);
    }
    return e;
  };
  std::array<double, 4> x = {base->load[1].u, base->load[1].m, base->load[1].c,
                             1 - base->share[0] - base->share[1]};
  for (size_t i = 0; i < 4; ++i) x[i] = std::clamp(x[i], kMixLo[i], kMixHi[i]);
  SweepFit out;
  for (int round = 0; round < 3; ++round) {  // restarts from the best point
    int evals = 0;
    x = nelder_mead<4>(eval, x, {0.15, 0.15, 0.15, 0.08}, kMixLo, kMixHi, 300, &evals);
    out.evaluations += evals;
  }
  out.job = m.job;
  out.base_workload = base_name;
  out.mix = {x[0], x[1], x[2], x[3]};
  out.gpus = m.gpus;
  static const char* kNames[4] = {"mix.sm", "mix.mem", "mix.compute_bound", "mix.comm_share"};
  static const char* kWhy[4] = {"SM activity is at most 1 at f_max",
                                "memory traffic is at most 1 of the peak", "a share is at most 1",
                                "the search's upper bound"};
  for (size_t i = 0; i < 4; ++i) {
    char buf[240];
    if (x[i] >= kMixHi[i] - 1e-3) {
      std::snprintf(buf, sizeof buf,
                    "%s held at its limit %.2f (%s): the measured power or cap response asks "
                    "for more",
                    kNames[i], kMixHi[i], kWhy[i]);
      out.warnings.push_back(buf);
    } else if (x[i] <= kMixLo[i] + 1e-3) {
      std::snprintf(buf, sizeof buf,
                    "%s held at its lower limit %.2f: the measured power or cap response asks "
                    "for less",
                    kNames[i], kMixLo[i]);
      out.warnings.push_back(buf);
    }
  }
  out.notes.push_back("from preset " + base_name +
                      ": the phase shares and loads outside forward/backward, iter_s; the "
                      "sweep measures steady training (no pauses, per-GPU spread or noise)");
  const auto s = simulate_sweep(gpu, apply_mix(*base, out.mix), caps, sp);
  double dmax;
  residuals(s, &out.max_dp, &out.max_dt, &dmax);
  out.pmax_meas_w = top.power_w;
  out.pmax_sim_w = s.back().power_w;
  for (size_t i = 0; i < s.size(); ++i) {
    const SweepPoint& p = m.points[i];
    out.rows.push_back({p.cap_w, p.power_w / top.power_w, s[i].power_w / s.back().power_w,
                        p.throughput / top.throughput, s[i].throughput / s.back().throughput,
                        s[i].power_w});
    if (p.cap_w >= gpu.min_cap_w && s[i].power_w > p.cap_w + 1e-6) {
      out.power_at_or_below_cap = false;
    }
  }
  auto ps = compute_pfi(s, 0.002);
  out.pfi_meas = pfi_meas;
  out.pfi_sim = ps.ok() ? *ps : 0;
  return out;
}

std::string sweep_fit_yaml(const SweepFit& f, const GpuPreset& gpu, int gpus) {
  char buf[2400];
  const double budget = std::ceil(f.pmax_meas_w * gpus / 10) * 10;
  std::string warn;
  for (const auto& w : f.warnings) warn += "# warning: " + w + "\n";
  std::snprintf(
      buf, sizeof buf,
      "# Fitted by `flexwatt fit` to a measured power-cap sweep of job %s (simulated twin).\n"
      "# Measured P_max %.1f W/GPU, PFI %.2f; simulated %.1f W/GPU, PFI %.2f; worst residual\n"
      "# P/Pmax %.3f, T/Tmax %.3f. Job size %d GPUs (the sweep's). No per-GPU spread or noise:\n"
      "# the fit's conditions (a sweep measures neither). Budget: the measured uncapped power\n"
      "# (%.1f W x %d GPUs): the job as measured stays within it.\n"
      "%s"
      "name: fit-%s\n"
      "duration_s: 600\n"
      "gpus:\n  - {model: %s, count: %d}\n"
      "budget: {watts: %.0f, scope: node, window_s: 30}\n"
      "jobs:\n"
      "  - name: %s\n    kind: pretrain\n    workload: %s\n    gpus: %d\n    tp: %d\n"
      "    iter_jitter: 0\n"
      "    mix: {sm: %.4f, mem: %.4f, compute_bound: %.4f, comm_share: %.4f}\n"
      "    duty: {every_s: 0}   # a sweep measures steady training; add low phases if any\n"
      "    hetero: {offset_sd: 0, noise_sd: 0}\n",
      f.job.c_str(), f.pmax_meas_w, f.pfi_meas, f.pmax_sim_w, f.pfi_sim, f.max_dp, f.max_dt, gpus,
      f.pmax_meas_w, gpus, warn.c_str(), f.job.c_str(), std::string(gpu.name).c_str(), gpus, budget,
      f.job.c_str(), f.base_workload.c_str(), gpus, gpus % 8 == 0 ? 8 : 1, f.mix.sm, f.mix.mem,
      f.mix.compute_bound, f.mix.comm_share);
  return buf;
}

}  // namespace fw::sim
