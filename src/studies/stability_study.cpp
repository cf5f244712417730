#include "studies/stability_study.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <thread>

#include "analysis/power_series.hpp"
#include "analysis/spectrum.hpp"
#include "analysis/stability.hpp"
#include "analysis/stability_limits.hpp"
#include "control/control_loop.hpp"
#include "sim/site_plant.hpp"

namespace fw::studies {
namespace {

constexpr const char* kFixedArms[] = {"caps", "smoothing", "fill", "stagger", "combined"};

bool is_fixed_arm(const std::string& a) {
  for (const char* f : kFixedArms) {
    if (a == f) return true;
  }
  return false;
}

double ratio(double value, double limit) {
  if (std::isnan(value)) return 0;
  if (limit <= 0) return value > 0 ? 1e9 : 0;
  return value / limit;
}

// Iterations done by time t (fractional: linear between the end times).
double progress_at(const std::vector<double>& ends, double t) {
  const size_t k =
      static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), t) - ends.begin());
  if (k == 0 || k == ends.size()) return static_cast<double>(k);
  return static_cast<double>(k) + (t - ends[k - 1]) / (ends[k] - ends[k - 1]);
}

// Variance of x about its least-squares line.
double detrended_variance(const std::vector<double>& x) {
  const double n = static_cast<double>(x.size());
  if (x.size() < 3) return 0;
  double st = 0, sx = 0, stt = 0, stx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = static_cast<double>(i);
    st += t;
    sx += x[i];
    stt += t * t;
    stx += t * x[i];
  }
  const double slope = (n * stx - st * sx) / (n * stt - st * st);
  const double icept = (sx - slope * st) / n;
  double v = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double r = x[i] - (icept + slope * static_cast<double>(i));
    v += r * r;
  }
  return v / n;
}

std::vector<double> ramp_windows(const StabilityLimitSpec& l) {
  std::vector<double> w = l.ramp_windows_s;
  if (std::find(w.begin(), w.end(), l.ramp_window_s) == w.end()) w.push_back(l.ramp_window_s);
  std::sort(w.begin(), w.end());
  return w;
}

// Runs fn(i) for i in [0, n) on `threads` threads; reports each completion.
void parallel_for(size_t n, int threads, const std::function<void(size_t)>& fn,
                  const std::function<void()>& done_one) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) {
      fn(i);
      std::lock_guard<std::mutex> lock(mu);
      done_one();
    }
  };
  const int t = std::max(1, std::min<int>(threads, static_cast<int>(n)));
  std::vector<std::thread> pool;
  for (int k = 1; k < t; ++k) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
}

struct Summary {
  double mean_cost = 0, worst_ratio = 0;
  bool meets_all = true;
};

Summary summarise(const std::vector<StabilityRunMetrics>& runs) {
  Summary s;
  for (const auto& r : runs) {
    s.mean_cost += r.cost_pct / static_cast<double>(runs.size());
    s.worst_ratio = std::max(s.worst_ratio, r.worst_ratio);
    s.meets_all = s.meets_all && r.meets;
  }
  return s;
}

void aggregate(StabilityArmResult& a) {
  const size_t n = a.runs.size();
  if (n == 0) return;
  a.ramp_pct_per_s.assign(a.runs[0].ramp_pct_per_s.size(), 0.0);
  a.meets = true;
  a.band_steady_frac = a.runs[0].band_steady_frac;
  a.osc_steady_pct = a.runs[0].osc_steady_pct;
  a.steady_energy_pct = 0;
  a.steady_throughput_loss_pct = 0;
  for (const auto& r : a.runs) {
    a.osc_steady_pct = std::max(a.osc_steady_pct, r.osc_steady_pct);
    a.steady_energy_pct += r.steady_energy_pct / static_cast<double>(n);
    a.steady_throughput_loss_pct += r.steady_throughput_loss_pct / static_cast<double>(n);
    for (size_t k = 0; k < r.ramp_pct_per_s.size(); ++k) {
      a.ramp_pct_per_s[k] = std::max(a.ramp_pct_per_s[k], r.ramp_pct_per_s[k]);
    }
    a.ramp_limit_pct_per_s = std::max(a.ramp_limit_pct_per_s, r.ramp_limit_pct_per_s);
    a.band_frac = std::max(a.band_frac, r.band_frac);
    if (!std::isnan(r.band_steady_frac)) {
      a.band_steady_frac = std::max(a.band_steady_frac, r.band_steady_frac);
    }
    a.energy_overhead_pct += r.energy_overhead_pct / static_cast<double>(n);
    a.throughput_loss_pct += r.throughput_loss_pct / static_cast<double>(n);
    a.cost_pct += r.cost_pct / static_cast<double>(n);
    a.meets = a.meets && r.meets;
  }
}

}  // namespace

Status validate(const StabilityScenario& s, const StabilityStudyOptions& o) {
  if (o.eval_seeds < 1 || o.eval_seeds > 10000) {
    return Status::InvalidArgument("--eval-seeds: must be 1..10000");
  }
  if (o.calib_seeds < 1 || o.calib_seeds > 10000) {
    return Status::InvalidArgument("--calib-seeds: must be 1..10000");
  }
  if (o.threads < 1 || o.threads > 1024)
    return Status::InvalidArgument("--threads: must be 1..1024");
  for (const std::string& a : o.arms) {
    if (a != "none" && !is_fixed_arm(a)) {
      return Status::InvalidArgument(
          "--arms: '" + a + "' is not one of none, caps, smoothing, fill, stagger, combined");
    }
    if (a == "smoothing" && s.site.smoothing == nullptr) {
      return Status::InvalidArgument("--arms: smoothing: GPU model " + s.site.gpu_model +
                                     " has no power smoothing (site.smoothing_model)");
    }
  }
  for (const auto& c : o.controllers) {
    bool makers = static_cast<bool>(c.make);
    for (const auto& k : c.candidates) makers = makers && static_cast<bool>(k.make);
    if (!makers) return Status::InvalidArgument("controller arm '" + c.name + "': no controller");
    if (!(c.sample_period_s >= s.site.dt_s)) {
      return Status::InvalidArgument("controller arm '" + c.name +
                                     "': sample period below the simulator's step");
    }
    FW_RETURN_IF_ERROR(
        sim::validate(s.site, c.base).with_context("controller arm '" + c.name + "'"));
  }
  return Status::Ok();
}

Result<sim::SiteRun> run_stability_arm(const StabilityScenario& s, const sim::SiteMitigations& m,
                                       const StabilityControllerArm* controller, uint64_t seed,
                                       StabilityRunMetrics* decisions) {
  if (controller == nullptr) return sim::simulate_site(s.site, m, seed);
  sim::SitePlant plant(s.site, m, seed);
  // A budget at the plant's nameplate (its rows, per GPU): never binding; the arm is judged on
  // stability, not on a budget.
  BudgetSchedule budget;
  budget.entries.push_back({0, Budget{plant.info().nameplate_w(), BudgetScope::kNode, 30}});
  LoopConfig cfg;
  cfg.sample_period_s = controller->sample_period_s;
  cfg.duration_s = s.site.duration_s;
  cfg.history_s = std::max(10.0, 20 * controller->sample_period_s);
  cfg.track_metrics = false;
  std::unique_ptr<Controller> c = controller->make(seed);
  if (!c)
    return Status::InvalidArgument("controller arm '" + controller->name + "': no controller");
  ControlLoop loop(plant, budget, cfg);
  loop.add_controller(c.get());
  FW_RETURN_IF_ERROR(loop.run().with_context("controller arm '" + controller->name + "'"));
  if (loop.write_failures() > 0) {
    return loop.first_write_error().with_context("controller arm '" + controller->name +
                                                 "': " + std::to_string(loop.write_failures()) +
                                                 " writes refused; the first");
  }
  if (decisions != nullptr) {
    decisions->decisions = loop.decision_cost().calls;
    decisions->decision_wall_s = loop.decision_cost().wall_sum_s;
    decisions->decision_max_s = loop.decision_cost().wall_max_s;
  }
  return plant.finish();
}

Result<StabilityRunMetrics> stability_metrics(const StabilityScenario& s, const sim::SiteRun& run,
                                              const sim::SiteRun& none, double energy_weight) {
  const StabilityLimitSpec& l = s.limits;
  PowerSeries ps;
  ps.path = s.name;
  ps.format = "site-sim";
  ps.series = "site";
  ps.time_s = run.time_s;
  ps.power_w = run.power_w;
  StabilityOptions o;
  o.ramp_windows_s = ramp_windows(l);
  o.swing_windows_s = {1};
  o.band_lo_hz = l.band_lo_hz;
  o.band_hi_hz = l.band_hi_hz;
  FW_ASSIGN_OR_RETURN(StabilityReport rep, analyze_stability(ps, o));
  StabilityRunMetrics m;
  m.ref_peak_w = *std::max_element(none.power_w.begin(), none.power_w.end());
  m.peak_w = rep.peak_w;
  m.mean_w = rep.mean_w;
  m.energy_j = rep.energy_j;
  for (const double w : l.ramp_windows_s) {
    for (const RampStats& r : rep.ramps) {
      if (r.window_s == w) m.ramp_pct_per_s.push_back(r.max_abs_w_per_s() / m.ref_peak_w * 100);
    }
  }
  StabilityLimits lim;
  lim.max_ramp_w_per_s = l.max_ramp_frac_per_s * m.ref_peak_w;
  lim.max_band_frac = l.max_band_frac;
  lim.window_s = l.ramp_window_s;
  FW_ASSIGN_OR_RETURN(std::vector<LimitCheck> checks, check_limits(rep, lim));
  m.meets = true;
  for (const LimitCheck& c : checks) {
    if (c.name == "max_ramp_w_per_s") m.ramp_limit_pct_per_s = c.value / m.ref_peak_w * 100;
    m.meets = m.meets && !c.violated;
    m.worst_ratio = std::max(m.worst_ratio, ratio(c.value, c.limit));
  }
  m.band_frac = rep.band.fraction;
  PowerSeries ref;
  ref.time_s = none.time_s;
  ref.power_w = none.power_w;
  const double e_none = ref.energy_j();
  m.energy_overhead_pct = (m.energy_j / e_none - 1) * 100;
  m.throughput_loss_pct = none.tokens > 0 ? (1 - run.tokens / none.tokens) * 100 : 0.0;
  m.trace_cost_pct = m.throughput_loss_pct + energy_weight * m.energy_overhead_pct;
  m.cost_pct = m.trace_cost_pct;
  if (l.steady_to_s > l.steady_from_s) {
    std::vector<double> seg;
    double e = 0, e_ref = 0;
    for (size_t i = 0; i < run.time_s.size() && i < none.power_w.size(); ++i) {
      if (run.time_s[i] > l.steady_from_s && run.time_s[i] <= l.steady_to_s) {
        seg.push_back(run.power_w[i]);
        e += run.power_w[i] * run.output_period_s;
        e_ref += none.power_w[i] * none.output_period_s;
      }
    }
    FW_ASSIGN_OR_RETURN(BandEnergy b,
                        band_energy(seg, run.output_period_s, l.band_lo_hz, l.band_hi_hz));
    m.band_steady_frac = b.fraction;
    m.osc_steady_pct = std::sqrt(b.fraction * detrended_variance(seg)) / m.ref_peak_w * 100;
    const double done = progress_at(run.iteration_end_s, l.steady_to_s) -
                        progress_at(run.iteration_end_s, l.steady_from_s);
    const double done_ref = progress_at(none.iteration_end_s, l.steady_to_s) -
                            progress_at(none.iteration_end_s, l.steady_from_s);
    m.steady_energy_pct = e_ref > 0 ? (e / e_ref - 1) * 100 : kUnset;
    m.steady_throughput_loss_pct = done_ref > 0 ? (1 - done / done_ref) * 100 : kUnset;
    m.steady_cost_pct = m.steady_throughput_loss_pct + energy_weight * m.steady_energy_pct;
    const double span_s = std::min(s.site.job.end_s, s.site.duration_s) - s.site.job.start_s;
    if (std::isfinite(m.steady_cost_pct)) {
      m.cost_pct = m.steady_cost_pct + (m.trace_cost_pct - m.steady_cost_pct) * span_s /
                                           (s.objective.events_every_h * 3600);
    }
  }
  m.smoothing_burn_pct = run.smoothing_burn_j / none.energy_j * 100;
  m.fill_pct = run.fill_j / none.energy_j * 100;
  m.stagger_burn_pct = run.stagger_burn_j / none.energy_j * 100;
  m.tokens = run.tokens;
  m.iterations = run.iterations;
  m.steps = run.steps;
  return m;
}

Result<StabilityStudyReport> run_stability_study(const StabilityScenario& s,
                                                 const StabilityStudyOptions& o) {
  FW_RETURN_IF_ERROR(validate(s, o));
  const auto t_study = std::chrono::steady_clock::now();
  StabilityStudyReport rep;
  rep.scenario = &s;
  rep.options = o;
  rep.options.progress = nullptr;
  for (int i = 0; i < o.eval_seeds; ++i) rep.eval_seeds.push_back(static_cast<uint64_t>(i + 1));
  for (int i = 0; i < o.calib_seeds; ++i) rep.calib_seeds.push_back(kStabilityCalibrationSeed0 + i);

  std::vector<std::string> fixed;
  bool with_none = false;
  for (const std::string& a : o.arms) {
    if (a == "none") with_none = true;
    if (is_fixed_arm(a) && std::find(fixed.begin(), fixed.end(), a) == fixed.end())
      fixed.push_back(a);
  }
  std::vector<std::vector<sim::SiteMitigations>> cands;
  size_t n_cand = 0;
  for (const std::string& a : fixed) {
    cands.push_back(arm_candidates(s.search, a));
    n_cand += cands.back().size();
  }
  for (const auto& c : o.controllers) n_cand += c.candidates.size();
  const size_t nc = rep.calib_seeds.size(), ne = rep.eval_seeds.size();
  const size_t total = nc * (1 + n_cand) + ne * (1 + fixed.size() + o.controllers.size());
  size_t done = 0;
  std::mutex err_mu;
  Status first_error = Status::Ok();
  auto tick = [&] {
    ++done;
    if (o.progress) o.progress(done, total);
  };
  auto fail = [&](const Status& st) {
    std::lock_guard<std::mutex> lock(err_mu);
    if (first_error.ok()) first_error = st;
  };
  auto timed_run = [&](const sim::SiteMitigations& m, const StabilityControllerArm* c,
                       uint64_t seed, double& wall_s,
                       StabilityRunMetrics* decisions = nullptr) -> Result<sim::SiteRun> {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = run_stability_arm(s, m, c, seed, decisions);
    wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };
  std::mutex speed_mu;
  auto count_speed = [&](double wall_s, int64_t steps) {
    std::lock_guard<std::mutex> lock(speed_mu);
    rep.runs += 1;
    rep.sim_wall_s += wall_s;
    rep.rank_steps += steps;
  };

  // The unmitigated runs of a seed list (kept: every other run is judged against them).
  auto run_none = [&](const std::vector<uint64_t>& seeds) {
    std::vector<sim::SiteRun> out(seeds.size());
    parallel_for(
        seeds.size(), o.threads,
        [&](size_t i) {
          double wall = 0;
          auto r = timed_run(sim::SiteMitigations{}, nullptr, seeds[i], wall);
          if (!r.ok()) return fail(r.status());
          count_speed(wall, r->steps);
          out[i] = std::move(r).value();
        },
        tick);
    return out;
  };

  // Calibration: the unmitigated runs, the cost weight, every candidate on every seed.
  const std::vector<sim::SiteRun> none_cal = run_none(rep.calib_seeds);
  FW_RETURN_IF_ERROR(first_error);
  double mean_w = 0;
  for (const auto& r : none_cal) {
    double e = 0;
    for (double p : r.power_w) e += p;
    mean_w += e / static_cast<double>(r.power_w.size()) / static_cast<double>(nc);
  }
  const double kw_per_gpu = mean_w / static_cast<double>(s.site.gpus) / 1000.0;
  rep.energy_weight = s.objective.usd_per_kwh * kw_per_gpu / s.objective.usd_per_gpu_hour;

  // Controller arms with candidates: each candidate as an arm of its own (arm index
  // cands.size() + controller index; the candidate's maker, the arm's base mitigations).
  std::vector<StabilityControllerArm> ctls = o.controllers;
  std::vector<std::vector<StabilityControllerArm>> ctl_cands(ctls.size());
  for (size_t c = 0; c < ctls.size(); ++c) {
    for (const auto& k : ctls[c].candidates) {
      StabilityControllerArm one = ctls[c];
      one.candidates.clear();
      one.make = k.make;
      one.spec = k.spec;
      ctl_cands[c].push_back(std::move(one));
    }
  }
  struct CalJob {
    size_t arm, cand, seed;
  };
  std::vector<CalJob> jobs;
  for (size_t a = 0; a < cands.size(); ++a) {
    for (size_t c = 0; c < cands[a].size(); ++c) {
      for (size_t k = 0; k < nc; ++k) jobs.push_back({a, c, k});
    }
  }
  for (size_t a = 0; a < ctl_cands.size(); ++a) {
    for (size_t c = 0; c < ctl_cands[a].size(); ++c) {
      for (size_t k = 0; k < nc; ++k) jobs.push_back({cands.size() + a, c, k});
    }
  }
  std::vector<StabilityRunMetrics> cal(jobs.size());
  parallel_for(
      jobs.size(), o.threads,
      [&](size_t i) {
        const CalJob& j = jobs[i];
        double wall = 0;
        const bool ctl = j.arm >= cands.size();
        const StabilityControllerArm* c = ctl ? &ctl_cands[j.arm - cands.size()][j.cand] : nullptr;
        auto r = timed_run(ctl ? c->base : cands[j.arm][j.cand], c, rep.calib_seeds[j.seed], wall);
        if (!r.ok()) return fail(r.status());
        count_speed(wall, r->steps);
        auto m = stability_metrics(s, *r, none_cal[j.seed], rep.energy_weight);
        if (!m.ok()) return fail(m.status());
        cal[i] = std::move(m).value();
      },
      tick);
  FW_RETURN_IF_ERROR(first_error);

  std::vector<StabilityArmResult> arms;
  size_t at = 0;
  // Chooses among n candidates whose calibration runs start at cal[at] (advancing at); fills
  // r's candidate counts; returns the index chosen.
  auto choose = [&](size_t n, StabilityArmResult& r) {
    r.candidates = static_cast<int>(n);
    size_t best = 0;
    bool have_feasible = false;
    Summary best_sum;
    for (size_t c = 0; c < n; ++c) {
      std::vector<StabilityRunMetrics> runs(cal.begin() + static_cast<std::ptrdiff_t>(at),
                                            cal.begin() + static_cast<std::ptrdiff_t>(at + nc));
      at += nc;
      const Summary sum = summarise(runs);
      if (sum.meets_all) r.candidates_meeting += 1;
      // Meeting the limits first, then the lower mean cost; among settings that do not meet
      // them, the smaller worst ratio (ties within 0.1 %: the lower cost).
      const bool tie = std::fabs(sum.worst_ratio - best_sum.worst_ratio) <=
                       1e-3 * std::max(sum.worst_ratio, best_sum.worst_ratio);
      const bool better =
          c == 0 || (sum.meets_all && (!have_feasible || sum.mean_cost < best_sum.mean_cost)) ||
          (!sum.meets_all && !have_feasible &&
           (tie ? sum.mean_cost < best_sum.mean_cost : sum.worst_ratio < best_sum.worst_ratio));
      if (better) {
        best = c;
        best_sum = sum;
        have_feasible = have_feasible || sum.meets_all;
      }
    }
    r.calibration_met = have_feasible;
    return best;
  };
  for (size_t a = 0; a < cands.size(); ++a) {
    StabilityArmResult r;
    r.name = fixed[a];
    r.kind = "fixed";
    const size_t best = choose(cands[a].size(), r);
    r.chosen = cands[a].empty() ? sim::SiteMitigations{} : cands[a][best];
    r.setting = sim::describe(r.chosen);
    arms.push_back(std::move(r));
  }
  std::vector<StabilityArmResult> ctl_arms(ctls.size());
  for (size_t a = 0; a < ctls.size(); ++a) {
    if (ctl_cands[a].empty()) continue;
    const size_t best = choose(ctl_cands[a].size(), ctl_arms[a]);
    ctls[a].make = ctl_cands[a][best].make;
    ctls[a].spec = ctl_cands[a][best].spec;
  }

  // Evaluation: the unmitigated runs, then every arm's chosen setting and the controllers.
  const std::vector<sim::SiteRun> none_ev = run_none(rep.eval_seeds);
  FW_RETURN_IF_ERROR(first_error);
  StabilityArmResult none_arm;
  none_arm.name = "none";
  none_arm.kind = "reference";
  none_arm.setting = "none";
  for (size_t a = 0; a < ctls.size(); ++a) {
    const StabilityControllerArm& c = ctls[a];
    StabilityArmResult r = std::move(ctl_arms[a]);
    r.name = c.name;
    r.kind = "controller";
    r.chosen = c.base;
    r.setting = c.spec + (c.base.any() ? " on " + sim::describe(c.base) : "");
    arms.push_back(std::move(r));
  }
  std::vector<std::pair<size_t, size_t>> ev_jobs;  // (arm, seed)
  for (size_t a = 0; a < arms.size(); ++a) {
    arms[a].runs.resize(ne);
    for (size_t k = 0; k < ne; ++k) ev_jobs.emplace_back(a, k);
  }
  parallel_for(
      ev_jobs.size(), o.threads,
      [&](size_t i) {
        const auto [a, k] = ev_jobs[i];
        const StabilityControllerArm* c =
            arms[a].kind == "controller" ? &ctls[a - fixed.size()] : nullptr;
        double wall = 0;
        StabilityRunMetrics dec;
        auto r = timed_run(arms[a].chosen, c, rep.eval_seeds[k], wall, &dec);
        if (!r.ok()) return fail(r.status());
        count_speed(wall, r->steps);
        auto m = stability_metrics(s, *r, none_ev[k], rep.energy_weight);
        if (!m.ok()) return fail(m.status());
        m->seed = rep.eval_seeds[k];
        m->wall_s = wall;
        m->decisions = dec.decisions;
        m->decision_wall_s = dec.decision_wall_s;
        m->decision_max_s = dec.decision_max_s;
        arms[a].runs[k] = std::move(m).value();
      },
      tick);
  FW_RETURN_IF_ERROR(first_error);
  for (size_t k = 0; k < ne; ++k) {
    auto m = stability_metrics(s, none_ev[k], none_ev[k], rep.energy_weight);
    if (!m.ok()) return m.status();
    m->seed = rep.eval_seeds[k];
    none_arm.runs.push_back(std::move(m).value());
  }
  if (with_none) rep.arms.push_back(std::move(none_arm));
  for (auto& a : arms) rep.arms.push_back(std::move(a));
  for (auto& a : rep.arms) aggregate(a);
  for (size_t a = 0; a < ctls.size(); ++a) {  // decision cost, against the loop's period
    StabilityArmResult& r = rep.arms[(with_none ? 1 : 0) + fixed.size() + a];
    double wall = 0;
    for (const auto& run : r.runs) {
      r.decisions += run.decisions;
      wall += run.decision_wall_s;
      r.decision_max_s = std::max(r.decision_max_s, run.decision_max_s);
    }
    r.decision_mean_s = r.decisions > 0 ? wall / static_cast<double>(r.decisions) : 0;
    r.loop_period_s = ctls[a].sample_period_s;
  }
  rep.study_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_study).count();
  return rep;
}

}  // namespace fw::studies
