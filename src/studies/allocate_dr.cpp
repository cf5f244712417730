#include "studies/allocate_dr.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>

#include "report/sweep_plot.hpp"
#include "sim/scenario.hpp"
#include "studies/sweep.hpp"

namespace fw::studies {
namespace {

struct JobCurve {
  allocation::Job job;
  std::vector<SweepRow> rows;  // by cap ascending
  std::vector<int> gpus;
};

// Per-GPU cap at which the job draws power_w (linear between sweep points, clamped).
double cap_for(const JobCurve& c, double power_w) {
  const auto& r = c.rows;
  if (power_w <= r.front().power_w) return r.front().cap_w;
  for (size_t k = 1; k < r.size(); ++k) {
    if (power_w <= r[k].power_w && r[k].power_w > r[k - 1].power_w) {
      const double f = (power_w - r[k - 1].power_w) / (r[k].power_w - r[k - 1].power_w);
      return r[k - 1].cap_w + f * (r[k].cap_w - r[k - 1].cap_w);
    }
  }
  return r.back().cap_w;
}

double event_factor(const DrOptions& o, double t) {
  const double a = o.start_s, b = a + o.ramp_s, c = b + o.hold_s, d = c + o.ramp_s;
  if (t <= a || t >= d) return 0;
  if (t < b) return (t - a) / o.ramp_s;
  if (t <= c) return 1;
  return (d - t) / o.ramp_s;
}

struct Run {
  std::vector<double> power_w, target_w;  // per sample
  std::vector<double> tokens_start, tokens_end;
  bool feasible = true;
};

// Reason for length: one closed-loop run (read, allocate every period, write caps, record).
Result<Run> run_once(const sim::Scenario& sc, const DrOptions& o, const std::vector<JobCurve>& jc,
                     double baseline_w, const allocation::Method* method) {
  auto plant = sim::make_plant(sc, o.seed);
  const double dt = sc.sample_period_s;
  const double end_s = o.start_s + 2 * o.ramp_s + o.hold_s;
  const double stop_s = end_s + 60;
  const size_t ng = plant->info().gpus.size();
  Run run;
  Snapshot snap;
  std::vector<allocation::Job> jobs;
  for (const auto& c : jc) jobs.push_back(c.job);
  double next_alloc = 0;
  // Site feedback: the split target is lowered by the integrated excess of the trailing 30 s
  // power mean over the trailing 30 s target mean (the curves are steady-state means; phases
  // and noise put the draw above them at times).
  double correction_w = 0;
  const size_t w = static_cast<size_t>(o.window_s / dt + 0.5);
  double sum_p = 0, sum_t = 0;
  const int64_t n = static_cast<int64_t>(stop_s / dt + 0.5);
  for (int64_t k = 1; k <= n; ++k) {
    const double t = static_cast<double>(k) * dt;
    if (method && t >= next_alloc) {
      // The schedule is known ahead: split the lowest target of the coming period.
      const double f = std::max(event_factor(o, t), event_factor(o, t + o.period_s));
      Command cmd;
      cmd.power_cap_w.assign(ng, std::nan(""));
      const size_t m = std::min(run.power_w.size(), w);
      if (f > 0 && m > 0) {
        const double excess = (sum_p - (1 - o.feedback_margin) * sum_t) / static_cast<double>(m);
        correction_w = std::clamp(correction_w + o.feedback_gain * excess, -0.3 * baseline_w,
                                  0.5 * baseline_w);
      } else if (f == 0) {
        correction_w = 0;
      }
      if (f > 0) {
        auto a = allocation::allocate(jobs, baseline_w * (1 - o.drop * f) - correction_w, *method);
        run.feasible = run.feasible && a.feasible;
        for (size_t j = 0; j < jc.size(); ++j) {
          const double cap = cap_for(jc[j], a.power_w[j]);
          for (int g : jc[j].gpus) cmd.power_cap_w[g] = cap;
        }
      } else {
        for (size_t j = 0; j < jc.size(); ++j) {
          for (int g : jc[j].gpus) cmd.power_cap_w[g] = jc[j].rows.back().cap_w;
        }
      }
      FW_RETURN_IF_ERROR(plant->write(cmd));
      next_alloc += o.period_s;
    }
    FW_RETURN_IF_ERROR(plant->read(t, snap));
    double p = 0;
    for (const auto& g : snap.gpus) p += g.power_w;
    run.power_w.push_back(p);
    run.target_w.push_back(baseline_w * (1 - o.drop * event_factor(o, t)));
    sum_p += run.power_w.back();
    sum_t += run.target_w.back();
    if (run.power_w.size() > w) {
      sum_p -= run.power_w[run.power_w.size() - 1 - w];
      sum_t -= run.target_w[run.target_w.size() - 1 - w];
    }
    auto tokens = [&] {
      std::vector<double> v;
      for (const auto& j : snap.jobs) v.push_back(j.tokens_total);
      return v;
    };
    if (std::fabs(t - o.start_s) < dt / 2) run.tokens_start = tokens();
    if (std::fabs(t - end_s) < dt / 2) run.tokens_end = tokens();
  }
  if (run.tokens_start.empty() || run.tokens_end.empty()) {
    return Status::InvalidArgument("demand response: the event must lie on the sample grid");
  }
  return run;
}

std::vector<double> trailing(const std::vector<double>& x, size_t w);

// A cap sweep of job j (all its GPUs at each cap, same seed): throughput = mean tokens/s over
// measure_s; power = the job's power at quantile q of its trailing window_s means (q = 0: the
// plain mean), so that a split of 30 s means holds through the job's high phases.
Result<std::vector<SweepRow>> job_sweep(const sim::Scenario& s, size_t j,
                                        const std::vector<double>& caps, const DrOptions& o,
                                        double* mean_top_w) {
  const auto& spec = s.jobs[j];
  const double dt = s.sample_period_s, warmup_s = 60, measure_s = 300;
  const size_t w = static_cast<size_t>(o.window_s / dt + 0.5);
  std::vector<SweepRow> rows;
  Snapshot snap;
  for (double cap : caps) {
    sim::Scenario sc = s;
    for (int g : spec.gpus) sc.gpus[g].power_cap_w = cap;
    auto plant = sim::make_cluster(sc, o.seed + 1000);
    const double t0 = spec.start_s + warmup_s;
    FW_RETURN_IF_ERROR(plant->read(t0, snap));
    const double tokens0 = snap.jobs[j].tokens_total;
    const int64_t n = static_cast<int64_t>(measure_s / dt + 0.5);
    std::vector<double> p;
    for (int64_t k = 1; k <= n; ++k) {
      FW_RETURN_IF_ERROR(plant->read(t0 + static_cast<double>(k) * dt, snap));
      double sum = 0;
      for (int g : spec.gpus) sum += snap.gpus[g].power_w;
      p.push_back(sum);
    }
    double power = 0, mean = 0;
    for (double v : p) mean += v / static_cast<double>(p.size());
    if (o.power_quantile > 0) {
      std::vector<double> m = trailing(p, w);
      m.erase(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(std::min(w, m.size() - 1)));
      std::sort(m.begin(), m.end());
      power = m[static_cast<size_t>(o.power_quantile * static_cast<double>(m.size() - 1))];
    } else {
      power = mean;
    }
    rows.push_back({cap, power, (snap.jobs[j].tokens_total - tokens0) / measure_s});
    if (mean_top_w) *mean_top_w = mean;  // the last (highest) cap's mean
  }
  return rows;
}

std::vector<double> trailing(const std::vector<double>& x, size_t w) {
  std::vector<double> out(x.size());
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    s += x[i];
    if (i >= w) s -= x[i - w];
    out[i] = s / static_cast<double>(std::min(i + 1, w));
  }
  return out;
}

}  // namespace

// Reason for length: sweeps, the uncapped reference and one run per method, then the metrics.
Result<DrReport> run_demand_response(const DrOptions& o,
                                     const std::vector<allocation::Method>& methods) {
  auto sc = sim::load_scenario(o.scenario_path, {});
  if (!sc.ok()) return sc.status();
  DrReport rep;
  rep.options = o;
  std::vector<JobCurve> jc;
  for (size_t j = 0; j < sc->jobs.size(); ++j) {
    const auto* gpu = sc->gpus[sc->jobs[j].gpus.front()].preset;
    std::vector<double> caps;
    for (int i = 0; i <= 10; ++i)
      caps.push_back(gpu->min_cap_w + (gpu->max_cap_w - gpu->min_cap_w) * i / 10);
    double mean_top_w = 0;
    auto rows = job_sweep(*sc, j, caps, o, &mean_top_w);
    if (!rows.ok()) return rows.status();
    auto r = sweep_result(sc->jobs[j].name, *rows);
    if (!r.ok()) return r.status();
    jc.push_back({to_alloc_job(*r, 1.0), r->rows, sc->jobs[j].gpus});
    rep.baseline_w += mean_top_w;
    rep.jobs.push_back(sc->jobs[j].name);
    rep.job_pfi.push_back(r->pfi);
  }
  auto ref = run_once(*sc, o, jc, rep.baseline_w, nullptr);
  if (!ref.ok()) return ref.status();
  const size_t w = static_cast<size_t>(o.window_s / sc->sample_period_s + 0.5);
  const double dt = sc->sample_period_s;
  const size_t a = static_cast<size_t>(o.start_s / dt + 0.5) - 1;
  const size_t b = static_cast<size_t>((o.start_s + 2 * o.ramp_s + o.hold_s) / dt + 0.5) - 1;
  const std::vector<double> target30 = trailing(ref->target_w, w);
  const size_t stride = static_cast<size_t>(5 / dt + 0.5);
  for (size_t i = 0; i < target30.size(); i += stride) {
    rep.time_s.push_back(static_cast<double>(i + 1) * dt);
    rep.target_w.push_back(target30[i]);
  }
  std::vector<const allocation::Method*> ms{nullptr};
  for (const auto& m : methods) ms.push_back(&m);
  for (const auto* m : ms) {
    Result<Run> run = m ? run_once(*sc, o, jc, rep.baseline_w, m) : ref;
    if (!run.ok()) return run.status();
    DrMethodResult res;
    res.method = m ? allocation::method_name(*m) : "uncapped";
    res.feasible = run->feasible;
    const auto p30 = trailing(run->power_w, w);
    int ok = 0;
    for (size_t i = a; i <= b; ++i) {
      const double ex = p30[i] / target30[i] - 1;
      res.worst_excess = std::max(res.worst_excess, ex);
      ok += ex <= 0.01 ? 1 : 0;
    }
    res.adherence = static_cast<double>(ok) / static_cast<double>(b - a + 1);
    double used = 0, asked = 0;
    for (size_t i = a; i <= b; ++i) used += run->power_w[i], asked += run->target_w[i];
    res.power_used = used / asked;
    double num = 0, den = 0;
    for (size_t j = 0; j < jc.size(); ++j) {
      const double got = run->tokens_end[j] - run->tokens_start[j];
      const double full = ref->tokens_end[j] - ref->tokens_start[j];
      res.job_retained.push_back(full > 0 ? got / full : std::nan(""));
      num += got;
      den += full;
    }
    res.retained = den > 0 ? num / den : std::nan("");
    rep.methods.push_back(res);
    std::vector<double> series;
    for (size_t i = 0; i < p30.size(); i += stride) series.push_back(p30[i]);
    rep.power_w.push_back(series);
  }
  return rep;
}

nlohmann::json dr_json(const DrReport& r) {
  nlohmann::json ms = nlohmann::json::array();
  for (const auto& m : r.methods) {
    ms.push_back({{"method", m.method},
                  {"feasible", m.feasible},
                  {"adherence_30s", m.adherence},
                  {"worst_excess_30s", m.worst_excess},
                  {"power_used", m.power_used},
                  {"throughput_retained", m.retained},
                  {"job_retained", m.job_retained}});
  }
  const auto& o = r.options;
  return {{"simulated", true},
          {"scenario", o.scenario_path},
          {"seed", o.seed},
          {"event",
           {{"start_s", o.start_s},
            {"ramp_s", o.ramp_s},
            {"hold_s", o.hold_s},
            {"drop", o.drop},
            {"period_s", o.period_s}}},
          {"baseline_w", r.baseline_w},
          {"jobs", r.jobs},
          {"job_pfi", r.job_pfi},
          {"methods", ms}};
}

std::string dr_table(const DrReport& r) {
  std::string out;
  char b[200];
  const auto& o = r.options;
  std::snprintf(b, sizeof b,
                "demand response (simulated): target -%.0f %% of %.0f W for %.0f s, ramps %.0f s, "
                "from t = %.0f s\nmethod        adherence(30 s)  worst excess  power/target  "
                "throughput retained\n",
                100 * o.drop, r.baseline_w, o.hold_s, o.ramp_s, o.start_s);
  out += b;
  for (const auto& m : r.methods) {
    std::snprintf(b, sizeof b, "%-12s  %13.1f %%  %10.1f %%  %10.1f %%  %12.1f %%%s\n",
                  m.method.c_str(), 100 * m.adherence, 100 * m.worst_excess, 100 * m.power_used,
                  100 * m.retained, m.feasible ? "" : "  (infeasible)");
    out += b;
  }
  return out;
}

std::string dr_svg(const DrReport& r) {
  report::XyPlot p;
  p.title = "Demand response (simulated): site power, trailing 30 s mean";
  p.x_label = "time (s)";
  p.y_label = "site power (W)";
  p.x0 = 0;
  p.x1 = r.time_s.empty() ? 1 : r.time_s.back();
  p.y0 = 0.5 * r.baseline_w;
  p.y1 = 1.1 * r.baseline_w;
  p.series.push_back({"target (30 s mean)", r.time_s, r.target_w, true, {}, {}});
  for (size_t m = 0; m < r.methods.size(); ++m) {
    p.series.push_back({r.methods[m].method, r.time_s, r.power_w[m], false, {}, {}});
  }
  std::string svg = report::render_xy_svg(p);
  // Markers at every 5 s sample make the lines unreadable; drop them.
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t c = svg.find("<circle", pos);
    if (c == std::string::npos) break;
    out += svg.substr(pos, c - pos);
    pos = svg.find('\n', c) + 1;
  }
  return out + svg.substr(pos);
}

}  // namespace fw::studies
