#include "studies/dr_replay.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/text_table.hpp"
#include "report/sweep_plot.hpp"
#include "studies/dr_fleet_loop.hpp"
#include "studies/dr_plant.hpp"

namespace fw::studies {
namespace {

// Mean of the replay's samples with time in (a, b].
struct Samples {
  double dt = 0;
  std::vector<double> prefix;  // prefix[k] = Σ x[0..k)
  double mean(double a, double b) const {
    const auto n = static_cast<int64_t>(prefix.size()) - 1;
    int64_t i = std::clamp<int64_t>(static_cast<int64_t>(std::floor(a / dt + 1e-9)), 0, n);
    int64_t j = std::clamp<int64_t>(static_cast<int64_t>(std::floor(b / dt + 1e-9)), 0, n);
    if (j <= i) return std::nan("");
    return (prefix[j] - prefix[i]) / static_cast<double>(j - i);
  }
};

Samples make_samples(const std::vector<double>& x, double dt) {
  Samples s;
  s.dt = dt;
  s.prefix.assign(x.size() + 1, 0);
  for (size_t k = 0; k < x.size(); ++k) s.prefix[k + 1] = s.prefix[k] + x[k];
  return s;
}

// RMSE of f(row) against a series' rows inside [from, to] (row windows [t, t + 60)).
template <typename F>
DrSeriesScore compare(const DrSeries& m, double duration_s, double ev0, double ev1, F f) {
  DrSeriesScore sc;
  double se = 0, sm = 0, see = 0, sme = 0;
  int ne = 0;
  for (size_t i = 0; i < m.time_s.size(); ++i) {
    const double t = m.time_s[i];
    if (t + 60 > duration_s + 1e-9) break;
    const double v = f(t);
    if (!std::isfinite(v)) continue;
    const double e = v - m.value_w[i];
    se += e * e;
    sm += m.value_w[i];
    ++sc.rows;
    if (t + 60 > ev0 && t < ev1) {
      see += e * e;
      sme += m.value_w[i];
      ++ne;
    }
  }
  if (sc.rows > 0) {
    sc.mean_w = sm / sc.rows;
    sc.rmse_frac = sc.mean_w > 0 ? std::sqrt(se / sc.rows) / sc.mean_w : 0;
  }
  if (ne > 0 && sme > 0) sc.event_rmse_frac = std::sqrt(see / ne) / (sme / ne);
  return sc;
}

double step_mean(const DrSeries& s, double a, double b) {
  double sum = 0;
  int n = 0;
  for (double t = a + 0.5; t < b; t += 1.0) {
    sum += dr_series_hold_at(s, t);
    ++n;
  }
  return n ? sum / n : std::nan("");
}

nlohmann::json series_json(const DrSeriesScore& s) {
  return {{"rmse_frac", s.rmse_frac},
          {"event_rmse_frac", s.event_rmse_frac},
          {"mean_w", s.mean_w},
          {"rows", s.rows}};
}

// Scores a site power series sampled every dt (sample k at (k + 1)·dt) against the event's
// target below baseline B. dip: per sample, whether a job dips then (none: no sample does).
DrPowerScore score_power(const DrEvent& ev, const std::vector<double>& power, double dt, double B,
                         const std::vector<char>* dip = nullptr) {
  DrPowerScore out;
  const auto n = static_cast<int64_t>(power.size());
  std::vector<double> time(power.size());
  for (int64_t k = 0; k < n; ++k) time[k] = static_cast<double>(k + 1) * dt;
  const double start = ev.steps.front().start_s;
  const double tol = ev.tolerance_frac * B;
  std::vector<double> target(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) target[k] = B * (1 - dr_depth_at(ev, time[k]));
  const Samples P = make_samples(power, dt), T = make_samples(target, dt);
  const double ev0 = start, ev1 = ev.end_s + ev.release_ramp_s;

  // Minutes above target: every window offset, aligned, sliding.
  const auto w = static_cast<int64_t>(std::llround(60 / dt));
  double sum_counts = 0;
  for (int64_t o = 0; o < w; ++o) {
    int count = 0;
    for (int64_t a = o; a + w <= n; a += w) {
      const double ta = static_cast<double>(a) * dt, tb = static_cast<double>(a + w) * dt;
      if (ta < ev0 - 1e-9 || tb > ev1 + 1e-9) continue;
      const double excess =
          (P.prefix[a + w] - P.prefix[a] - T.prefix[a + w] + T.prefix[a]) / static_cast<double>(w);
      out.worst_minute_excess_frac = std::max(out.worst_minute_excess_frac, excess / B);
      if (excess > tol) ++count;
    }
    if (o == 0) out.minutes_above_target_aligned = count;
    sum_counts += count;
  }
  out.minutes_above_target = sum_counts / static_cast<double>(w);
  int64_t sliding = 0;
  std::vector<double> m60(static_cast<size_t>(n), std::nan(""));
  for (int64_t k = w - 1; k < n; ++k) {
    const int64_t a = k + 1 - w;
    m60[k] = (P.prefix[k + 1] - P.prefix[a]) / static_cast<double>(w);
    const double ta = static_cast<double>(a) * dt, tb = time[k];
    if (ta < ev0 - 1e-9 || tb > ev1 + 1e-9) continue;
    const double tm = (T.prefix[k + 1] - T.prefix[a]) / static_cast<double>(w);
    if (m60[k] - tm > tol) ++sliding;
  }
  out.minutes_above_target_sliding = static_cast<double>(sliding) * dt / 60;
  // Rates on 1-minute means, 1 minute apart, from the first start to the end, outside dips.
  std::vector<int64_t> dips(static_cast<size_t>(n) + 1, 0);  // prefix count of dip samples
  for (int64_t k = 0; k < n; ++k) dips[k + 1] = dips[k] + (dip && (*dip)[k] ? 1 : 0);
  for (int64_t k = 2 * w - 1; k < n; ++k) {
    if (time[k] < ev0) continue;
    if (dips[k + 1] - dips[k + 1 - 2 * w] > 0) continue;
    const double now = (P.prefix[k + 1] - P.prefix[k + 1 - w]) / static_cast<double>(w);
    const double before = (P.prefix[k + 1 - w] - P.prefix[k + 1 - 2 * w]) / static_cast<double>(w);
    const double rate = (now - before) / (static_cast<double>(w) * dt);
    out.max_ramp_down_w_per_s = std::max(out.max_ramp_down_w_per_s, -rate);
    out.max_ramp_up_w_per_s = std::max(out.max_ramp_up_w_per_s, rate);
  }
  // Trailing 10 s means (the physical ramp's).
  const auto w10 = std::max<int64_t>(1, std::llround(10 / dt));
  std::vector<double> m10(static_cast<size_t>(n), std::nan(""));
  for (int64_t k = w10 - 1; k < n; ++k) {
    m10[k] = (P.prefix[k + 1] - P.prefix[k + 1 - w10]) / static_cast<double>(w10);
  }

  // Holds: over-cut, power/target, hold performance.
  const auto holds = dr_holds(ev);
  auto in_hold = [&](double t) {
    for (const auto& h : holds) {
      if (t > h.from_s && t <= h.to_s) return true;
    }
    return false;
  };
  double over = 0, hp = 0, ht = 0;
  int64_t nh = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (!in_hold(time[k])) continue;
    ++nh;
    if (std::isfinite(m60[k])) over += std::max(0.0, target[k] - m60[k]) / B;
    hp += power[k];
    ht += target[k];
  }
  if (nh > 0) {
    out.mean_overcut_frac = over / static_cast<double>(nh);
    out.hold_power_over_target = hp / ht;
  }
  for (size_t i = 0; i < ev.steps.size(); ++i) {
    const auto& s = ev.steps[i];
    DrStepScore st;
    st.start_s = s.start_s;
    st.depth = s.depth;
    st.target_w = B * (1 - s.depth);
    const double from_depth = i > 0 ? ev.steps[i - 1].depth : 0;
    const double limit = s.depth >= from_depth ? ev.ramp_down_w_per_s : ev.ramp_up_w_per_s;
    if (limit > 0) st.ramp_limit_s = std::fabs(s.depth - from_depth) * B / limit;
    // 1-minute means, settled: after the last sample of the step's span whose trailing 1-minute
    // mean is above the hold target + tolerance (a dip does not end the ramp early).
    const double to = i + 1 < ev.steps.size() ? ev.steps[i + 1].start_s : ev.end_s;
    double last_above = s.start_s;
    bool reached = false;
    for (int64_t k = 0; k < n; ++k) {
      if (time[k] < s.start_s || !std::isfinite(m60[k])) continue;
      if (time[k] > to) break;
      if (m60[k] > st.target_w + tol) {
        last_above = time[k];
        reached = false;
      } else {
        reached = true;
      }
    }
    if (reached) st.ramp_down_1min_s = last_above - s.start_s;
    // 10 s means: the first time in the band that lasts 30 s.
    double in_band_since = -1;
    for (int64_t k = 0; k < n; ++k) {
      if (time[k] < s.start_s || !std::isfinite(m10[k])) continue;
      if (time[k] > to) break;
      // Within 10 s after a job's dip sample, the 10 s mean is not the site's level.
      const bool dipping = dips[k + 1] - dips[std::max<int64_t>(0, k + 1 - w10)] > 0;
      if (m10[k] > st.target_w + tol || dipping) {
        in_band_since = -1;
      } else if (in_band_since < 0) {
        in_band_since = time[k];
      }
      if (in_band_since >= 0 && time[k] - in_band_since >= 30 - 1e-9) {
        st.ramp_down_s = in_band_since - s.start_s;
        break;
      }
    }
    out.steps.push_back(st);
    // The largest over steps; -1 when a step never got there.
    auto worst = [&](double DrPowerScore::*all, double v) {
      if (v < 0) {
        out.*all = -1;
      } else if (out.*all >= 0 || out.steps.size() == 1) {
        out.*all = std::max(out.*all, v);
      }
    };
    worst(&DrPowerScore::ramp_down_s, st.ramp_down_s);
    worst(&DrPowerScore::ramp_down_1min_s, st.ramp_down_1min_s);
  }
  return out;
}

}  // namespace

// DrReplayOptions::field_actions at time t: the caps whose curve power is each job's level.
DrCommand field_command(const DrEvent& ev, const std::vector<DrNode>& nodes,
                        const std::vector<DrSeries>& actions, double t) {
  DrCommand c;
  c.job_pause.assign(ev.jobs.size(), false);
  std::vector<double> cap(ev.jobs.size());
  for (size_t j = 0; j < ev.jobs.size(); ++j) {
    const DrJobSpec& job = ev.jobs[j];
    const double per_gpu = dr_series_hold_at(actions[j], t) / std::max(1, job.gpus);
    c.job_pause[j] = per_gpu < 0.05 * job.curve.back().power_w;
    cap[j] = dr_cap_for(job, per_gpu);
  }
  for (const DrNode& n : nodes) c.node_cap_w.push_back(cap[size_t(n.job)]);
  return c;
}

Result<DrReplayResult> run_dr_replay(const DrEvent& ev, const DrReplayOptions& opt) {
  if (!opt.field_actions.empty() && opt.field_actions.size() != ev.jobs.size()) {
    return Status::InvalidArgument("field actions: need one series per job (" +
                                   std::to_string(ev.jobs.size()) + ")");
  }
  const bool control = opt.method != "uncapped";
  DrLoopOptions lo = opt.loop;
  if (control && opt.field_actions.empty()) {
    auto m = allocation::parse_method(opt.method);
    if (!m.ok()) {
      return Status::InvalidArgument("--method: '" + opt.method +
                                     "': expected uncapped or an allocation method (" +
                                     m.status().message() + ")");
    }
    lo.method = *m;
  }
  DrReplayPlant plant(ev);
  FW_ASSIGN_OR_RETURN(std::unique_ptr<DrFleetLoop> loop_box,
                      DrFleetLoop::Make(ev, plant.nodes(), lo));
  DrFleetLoop& loop = *loop_box;
  const double dt = ev.sample_period_s;
  const auto n = static_cast<int64_t>(std::floor(ev.duration_s / dt + 1e-9));
  const size_t nj = ev.jobs.size();
  std::vector<double> power(static_cast<size_t>(n)), time(static_cast<size_t>(n));
  std::vector<std::vector<double>> t_rel(nj, std::vector<double>(static_cast<size_t>(n)));
  std::vector<double> paused_s(nj, 0);
  std::vector<char> dip(static_cast<size_t>(n), 0);
  // The loop's holdable target and shortfall and its commanded target's moves
  // (dr_fleet_loop.hpp), as it goes.
  const size_t ns = ev.steps.size();
  std::vector<double> step_holdable(ns, std::nan("")), step_shortfall(ns, 0), step_ramp(ns, 0);
  double holdable_start = std::nan(""), shortfall = 0, ramp_shortfall = 0, infeasible_s = 0;
  for (int64_t k = 0; k < n; ++k) {
    const double t = static_cast<double>(k + 1) * dt;
    plant.step(t);
    const DrReadings& r = plant.read();
    double site = 0;
    for (double p : r.node_power_w) site += p;
    power[k] = site;
    time[k] = t;
    for (size_t j = 0; j < nj; ++j) {
      t_rel[j][k] = r.job_t_rel[j];
      if (r.job_paused[j]) paused_s[j] += dt;
    }
    for (const auto& job : ev.jobs) dip[k] = dip[k] || dr_in_dip(job, t);
    if (!opt.field_actions.empty()) {
      plant.write(field_command(ev, plant.nodes(), opt.field_actions, t), t);
    } else {
      DrCommand cmd = loop.update(r);
      if (control) plant.write(cmd, t);
      const double held = loop.holdable_rule_w();
      if (std::isfinite(held)) {
        if (std::isnan(holdable_start)) holdable_start = held;
        shortfall = std::max(shortfall, loop.shortfall_w());
        if (control) ramp_shortfall = std::max(ramp_shortfall, loop.ramp_shortfall_w());
        const bool short_now = loop.shortfall_w() > 0 || (control && loop.ramp_shortfall_w() > 0);
        if (short_now) infeasible_s += dt;
        for (size_t i = ns; i-- > 0;) {
          if (t < ev.steps[i].start_s) continue;
          if (std::isnan(step_holdable[i])) step_holdable[i] = held;
          step_shortfall[i] = std::max(step_shortfall[i], loop.shortfall_w());
          if (control) step_ramp[i] = std::max(step_ramp[i], loop.ramp_shortfall_w());
          break;
        }
      }
    }
    if (opt.progress && ((k + 1) % 1000 == 0 || k + 1 == n)) {
      opt.progress(static_cast<size_t>(k + 1), static_cast<size_t>(n));
    }
  }

  DrReplayResult res;
  res.event_path = ev.path;
  res.method = opt.field_actions.empty() ? opt.method : "field-actions";
  res.seed = ev.seed;
  res.sample_period_s = dt;
  res.duration_s = ev.duration_s;
  res.tolerance_frac = ev.tolerance_frac;
  const double start = ev.steps.front().start_s;
  if (ev.baseline_measured) {
    double s = 0;
    int64_t c = 0;
    for (int64_t k = 0; k < n && time[k] <= start; ++k, ++c) s += power[k];
    res.baseline_w = c ? s / static_cast<double>(c) : 0;
  } else {
    res.baseline_w = ev.baseline_w;
  }
  const double B = res.baseline_w;
  static_cast<DrPowerScore&>(res) = score_power(ev, power, dt, B, &dip);
  res.ramp_down_limit_w_per_s = ev.ramp_down_w_per_s;
  res.ramp_up_limit_w_per_s = ev.ramp_up_w_per_s;
  if (control && opt.field_actions.empty()) {
    res.commanded_max_ramp_down_w_per_s = loop.commanded_max_fall_w_per_s();
    res.commanded_max_ramp_up_w_per_s = loop.commanded_max_rise_w_per_s();
  }
  res.holdable_computed = opt.field_actions.empty() && std::isfinite(holdable_start);
  if (res.holdable_computed) {
    res.holdable_target_w = holdable_start;
    res.shortfall_w = shortfall;
    res.ramp_shortfall_w = ramp_shortfall;
    res.infeasible_s = infeasible_s;
    res.feasible = !(shortfall > 0) && !(ramp_shortfall > 0);
    for (size_t i = 0; i < ns && i < res.steps.size(); ++i) {
      res.steps[i].holdable_target_w = std::isfinite(step_holdable[i]) ? step_holdable[i] : 0;
      res.steps[i].shortfall_w = step_shortfall[i];
      res.steps[i].ramp_shortfall_w = step_ramp[i];
    }
  }
  const auto holds = dr_holds(ev);
  int64_t nh = 0;
  std::vector<double> hold_perf(nj, 0);
  for (int64_t k = 0; k < n; ++k) {
    bool in = false;
    for (const auto& h : holds) in = in || (time[k] > h.from_s && time[k] <= h.to_s);
    if (!in) continue;
    ++nh;
    for (size_t j = 0; j < nj; ++j) hold_perf[j] += t_rel[j][k];
  }
  const Samples P = make_samples(power, dt);
  std::vector<double> target(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) target[k] = B * (1 - dr_depth_at(ev, time[k]));
  const Samples T = make_samples(target, dt);
  const auto w = static_cast<int64_t>(std::llround(60 / dt));
  const double ev0 = ev.steps.front().start_s, ev1 = ev.end_s + ev.release_ramp_s;
  double wsum = 0, tsum = 0;
  for (size_t j = 0; j < nj; ++j) {
    DrJobScore js;
    js.name = ev.jobs[j].name;
    js.tier_min = ev.jobs[j].tier_min;
    js.pausable = ev.jobs[j].pausable;
    js.paused_s = paused_s[j];
    double s = 0;
    for (double x : t_rel[j]) s += x;
    js.performance = n ? s / static_cast<double>(n) : 0;
    js.hold_performance = nh ? hold_perf[j] / static_cast<double>(nh) : 1;
    if (js.performance < js.tier_min - 1e-12) res.all_jobs_at_tier = false;
    wsum += js.tier_min * js.performance;
    tsum += js.tier_min;
    res.jobs.push_back(js);
  }
  if (tsum > 0) {
    res.weighted_performance = wsum / tsum;
  } else {
    for (const auto& j : res.jobs) res.weighted_performance += j.performance / nj;
  }
  res.pauses = loop.pauses();
  res.final_sigma_w = loop.sigma_w();
  res.final_margin_w = loop.margin_w();
  res.infeasible_samples = loop.infeasible_samples();
  for (int64_t a = 0; a + w <= n; a += w) {
    res.minute_s.push_back(static_cast<double>(a) * dt);
    res.minute_power_w.push_back((P.prefix[a + w] - P.prefix[a]) / static_cast<double>(w));
    res.minute_target_w.push_back((T.prefix[a + w] - T.prefix[a]) / static_cast<double>(w));
  }
  if (opt.measured_total) {
    res.measured_total = opt.measured_total;
    // The measured rows as a series on the replay's samples: row i holds over (t_i, t_i + 60].
    const DrSeries& m = *opt.measured_total;
    std::vector<double> mp;
    for (int64_t k = 0; k < n; ++k) {
      const double t = time[k];
      if (t > m.time_s.back() + 60) break;
      mp.push_back(dr_series_hold_at(m, t - 1e-9));
    }
    double sum = 0;
    int c = 0;
    for (size_t i = 0; i < m.time_s.size() && m.time_s[i] + 60 <= ev0 + 1e-9; ++i, ++c) {
      sum += m.value_w[i];
    }
    if (c > 0 && !mp.empty()) {
      res.measured_baseline_w = sum / c;
      res.measured_score = score_power(ev, mp, dt, res.measured_baseline_w);
    }
    res.vs_measured = compare(*opt.measured_total, ev.duration_s, ev0, ev1,
                              [&](double t) { return P.mean(t, t + 60); });
    if (opt.field_projection) {
      res.field_vs_measured = compare(*opt.measured_total, ev.duration_s, ev0, ev1, [&](double t) {
        return step_mean(*opt.field_projection, t, t + 60);
      });
      res.field_vs_measured_point =
          compare(*opt.measured_total, ev.duration_s, ev0, ev1,
                  [&](double t) { return dr_series_hold_at(*opt.field_projection, t); });
    }
  }
  if (opt.field_projection) {
    res.field_projection = opt.field_projection;
    DrSeries grid;
    for (size_t i = 0; i < res.minute_s.size(); ++i) {
      grid.time_s.push_back(res.minute_s[i]);
      grid.value_w.push_back(
          step_mean(*opt.field_projection, res.minute_s[i], res.minute_s[i] + 60));
    }
    res.vs_field_projection =
        compare(grid, ev.duration_s, ev0, ev1, [&](double t) { return P.mean(t, t + 60); });
  }
  return res;
}

nlohmann::json dr_replay_json(const DrReplayResult& r) {
  nlohmann::json jobs = nlohmann::json::array(), hold = nlohmann::json::object();
  for (const auto& j : r.jobs) {
    jobs.push_back({{"name", j.name},
                    {"performance", j.performance},
                    {"hold_performance", j.hold_performance},
                    {"tier_min", j.tier_min},
                    {"pausable", j.pausable},
                    {"paused_s", j.paused_s}});
    hold[j.name] = j.hold_performance;
  }
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : r.steps) {
    nlohmann::json st = {{"start_s", s.start_s},
                         {"depth", s.depth},
                         {"target_w", s.target_w},
                         {"ramp_down_s", s.ramp_down_s},
                         {"ramp_down_1min_s", s.ramp_down_1min_s},
                         {"ramp_limit_s", s.ramp_limit_s}};
    if (r.holdable_computed) {
      st["holdable_target_w"] = s.holdable_target_w;
      st["shortfall_w"] = s.shortfall_w;
      st["ramp_shortfall_w"] = s.ramp_shortfall_w;
    }
    steps.push_back(st);
  }
  auto limit = [](double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
  const nlohmann::json ramp = {
      {"down",
       {{"limit_w_per_s", limit(r.ramp_down_limit_w_per_s)},
        {"max_ramp_w_per_s", r.max_ramp_down_w_per_s},
        {"commanded_max_ramp_w_per_s", r.commanded_max_ramp_down_w_per_s}}},
      {"up",
       {{"limit_w_per_s", limit(r.ramp_up_limit_w_per_s)},
        {"max_ramp_w_per_s", r.max_ramp_up_w_per_s},
        {"commanded_max_ramp_w_per_s", r.commanded_max_ramp_up_w_per_s}}},
      {"rule",
       "limit: the event's (null: none); max_ramp_w_per_s: measured, the fastest change of the "
       "site's trailing 1-minute mean over one minute, from the first step's start to the end "
       "of the replay, outside the jobs' dips; commanded_max_ramp_w_per_s: the loop's commanded "
       "target (the draw its split predicts), round to round"}};
  nlohmann::json pauses = nlohmann::json::array();
  for (const auto& p : r.pauses) {
    pauses.push_back({{"job", r.jobs[p.job].name}, {"from_s", p.from_s}, {"to_s", p.to_s}});
  }
  nlohmann::json j = {
      {"simulated", true},
      {"event", r.event_path},
      {"method", r.method},
      {"seed", r.seed},
      {"sample_period_s", r.sample_period_s},
      {"duration_s", r.duration_s},
      {"baseline_w", r.baseline_w},
      {"tolerance_frac", r.tolerance_frac},
      {"tolerance_w", r.tolerance_frac * r.baseline_w},
      {"minutes_above_target", r.minutes_above_target},
      {"minutes_above_target_rule",
       "1-minute means above the target's 1-minute mean by more than tolerance_w, windows "
       "inside the event [first start, end_s + release_ramp_s], mean over every window offset"},
      {"minutes_above_target_aligned", r.minutes_above_target_aligned},
      {"minutes_above_target_sliding", r.minutes_above_target_sliding},
      {"worst_minute_excess_frac", r.worst_minute_excess_frac},
      {"mean_overcut_frac", r.mean_overcut_frac},
      {"hold_power_over_target", r.hold_power_over_target},
      {"ramp_down_s", r.ramp_down_s},
      {"ramp_down_rule",
       "per step, from its start until the trailing 10 s mean power is at or below the hold "
       "target + tolerance_w for 30 s, windows holding a job's dip not counted (the physical "
       "ramp); the largest over steps; -1: never"},
      {"ramp_down_1min_s", r.ramp_down_1min_s},
      {"max_ramp_down_w_per_s", r.max_ramp_down_w_per_s},
      {"max_ramp_up_w_per_s", r.max_ramp_up_w_per_s},
      {"ramp", ramp},
      {"steps", steps},
      {"per_job", jobs},
      {"hold_performance", hold},
      {"weighted_performance", r.weighted_performance},
      {"all_jobs_at_tier", r.all_jobs_at_tier},
      {"pauses", pauses},
      {"noise_sigma_w", r.final_sigma_w},
      {"margin_w", r.final_margin_w},
      {"infeasible_samples", r.infeasible_samples}};
  if (r.holdable_computed) {
    j["holdable_target_w"] = r.holdable_target_w;
    j["holdable_depth"] = r.baseline_w > 0 ? 1 - r.holdable_target_w / r.baseline_w : 0.0;
    j["shortfall_w"] = r.shortfall_w;
    j["ramp_shortfall_w"] = r.ramp_shortfall_w;
    j["infeasible_s"] = r.infeasible_s;
    j["feasible"] = r.feasible;
    j["holdable_rule"] =
        "holdable_target_w: before the event, the deepest target held through it for sure: "
        "every job at its tier's floor (at least its lowest cap's draw), the pausable jobs "
        "whose tier budgets cover the event paused; a deeper one may hold with pauses taking "
        "turns. shortfall_w: the largest W by which the jobs' floors (as configured, or "
        "pausing what may stay paused) stood above the target from the first start to end_s; "
        "ramp_shortfall_w: the largest W by which the ramp limit kept the loop's split above "
        "the target + tolerance_w then; feasible: both 0 (else exit 1)";
  }
  if (r.measured_score) {
    const auto& m = *r.measured_score;
    nlohmann::json ms = nlohmann::json::array();
    for (const auto& s : m.steps) {
      ms.push_back(nlohmann::json{{"start_s", s.start_s},
                                  {"ramp_down_s", s.ramp_down_s},
                                  {"ramp_down_1min_s", s.ramp_down_1min_s}});
    }
    j["measured"] = {{"baseline_w", r.measured_baseline_w},
                     {"minutes_above_target", m.minutes_above_target},
                     {"mean_overcut_frac", m.mean_overcut_frac},
                     {"hold_power_over_target", m.hold_power_over_target},
                     {"ramp_down_s", m.ramp_down_s},
                     {"ramp_down_1min_s", m.ramp_down_1min_s},
                     {"steps", ms},
                     {"rule",
                      "the replay's scores on the measured rows (each row held for its "
                      "minute), baseline the rows' mean before the first step"}};
  }
  if (r.vs_measured) {
    j["projected_vs_measured_rmse_frac"] = r.vs_measured->rmse_frac;
    j["vs_measured"] = series_json(*r.vs_measured);
    j["measured_total"] = r.measured_total->path;
  }
  if (r.field_vs_measured) {
    j["field_projection_vs_measured_rmse_frac"] = r.field_vs_measured->rmse_frac;
    j["field_vs_measured"] = series_json(*r.field_vs_measured);
    j["field_vs_measured_at_row_time"] = series_json(*r.field_vs_measured_point);
  }
  if (r.vs_field_projection) {
    j["projected_vs_field_projection_rmse_frac"] = r.vs_field_projection->rmse_frac;
    j["field_projection"] = r.field_projection->path;
  }
  return j;
}

std::string dr_replay_table(const DrReplayResult& r) {
  std::string out;
  char b[512];
  std::snprintf(b, sizeof b, "dr replay %s  (method %s, seed %llu, simulated)\n",
                r.event_path.c_str(), r.method.c_str(), static_cast<unsigned long long>(r.seed));
  out += b;
  std::snprintf(b, sizeof b, "  baseline %.0f W; tolerance %.1f %% of baseline (%.0f W)\n",
                r.baseline_w, 100 * r.tolerance_frac, r.tolerance_frac * r.baseline_w);
  out += b;
  std::snprintf(b, sizeof b,
                "  minutes above target %.2f (mean over window offsets; aligned %.0f, sliding "
                "%.2f)\n",
                r.minutes_above_target, r.minutes_above_target_aligned,
                r.minutes_above_target_sliding);
  out += b;
  std::snprintf(b, sizeof b, "  mean over-cut %.2f %% of baseline; hold power/target %.3f\n",
                100 * r.mean_overcut_frac, r.hold_power_over_target);
  out += b;
  if (r.holdable_computed) {
    const double B = std::max(r.baseline_w, 1e-9);
    double deepest = 0;
    for (const auto& s : r.steps) deepest = std::max(deepest, s.depth);
    const double target_w = B * (1 - deepest);
    if (!r.feasible) {
      std::string why;
      if (r.shortfall_w > 0) {
        std::snprintf(b, sizeof b,
                      "shortfall %.0f W (the most the jobs' tier floors stood above it); ",
                      r.shortfall_w);
        why += b;
      }
      if (r.ramp_shortfall_w > 0) {
        std::snprintf(b, sizeof b,
                      "shortfall %.0f W while ramping (the ramp limit kept the site above it "
                      "beyond the tolerance); ",
                      r.ramp_shortfall_w);
        why += b;
      }
      std::snprintf(b, sizeof b,
                    "  target CANNOT be held: %.0f W (depth %.3f); %s%.0f s of the event; held "
                    "for sure down to %.0f W (depth %.3f); exit 1\n",
                    target_w, deepest, why.c_str(), r.infeasible_s, r.holdable_target_w,
                    1 - r.holdable_target_w / B);
    } else if (target_w >= r.holdable_target_w) {
      std::snprintf(b, sizeof b,
                    "  target holdable: %.0f W (depth %.3f); held for sure down to %.0f W (depth "
                    "%.3f: every job at its tier's floor)\n",
                    target_w, deepest, r.holdable_target_w, 1 - r.holdable_target_w / B);
    } else {
      std::snprintf(b, sizeof b,
                    "  target holdable: %.0f W (depth %.3f), below the %.0f W (depth %.3f) every "
                    "job's tier floor holds: held with pauses taking turns and progress banked\n",
                    target_w, deepest, r.holdable_target_w, 1 - r.holdable_target_w / B);
    }
    out += wrap_text(b, TextStyle{}.width, "    ");
  }
  auto limit_text = [](double v) {
    char t[32];
    if (v > 0) {
      std::snprintf(t, sizeof t, "%.3g W/s", v);
    } else {
      std::snprintf(t, sizeof t, "none");
    }
    return std::string(t);
  };
  std::snprintf(b, sizeof b,
                "  ramp limit down %s: measured max %.1f W/s, commanded max %.1f W/s; up %s: "
                "measured max %.1f W/s, commanded max %.1f W/s (measured: 1-minute means a "
                "minute apart, outside dips)\n",
                limit_text(r.ramp_down_limit_w_per_s).c_str(), r.max_ramp_down_w_per_s,
                r.commanded_max_ramp_down_w_per_s, limit_text(r.ramp_up_limit_w_per_s).c_str(),
                r.max_ramp_up_w_per_s, r.commanded_max_ramp_up_w_per_s);
  out += wrap_text(b, TextStyle{}.width, "    ");
  for (const auto& s : r.steps) {
    std::snprintf(b, sizeof b,
                  "  step at %.0f s, depth %.3f: ramp down %.0f s (10 s means; 1-minute mean %.0f "
                  "s)",
                  s.start_s, s.depth, s.ramp_down_s, s.ramp_down_1min_s);
    out += b;
    if (s.ramp_limit_s > 0) {
      std::snprintf(b, sizeof b, "; the ramp limit needs %.0f s", s.ramp_limit_s);
      out += b;
    }
    out += "\n";
  }
  out += "  job                    tier_min  performance  hold_perf  paused_s\n";
  for (const auto& j : r.jobs) {
    std::snprintf(b, sizeof b, "  %-22s %8.3f  %11.3f  %9.3f  %8.0f%s\n", j.name.c_str(),
                  j.tier_min, j.performance, j.hold_performance, j.paused_s,
                  j.performance < j.tier_min ? "  BELOW TIER" : "");
    out += b;
  }
  std::snprintf(b, sizeof b, "  weighted performance %.4f (weights tier_min / sum)\n",
                r.weighted_performance);
  out += b;
  if (r.vs_measured) {
    std::snprintf(b, sizeof b,
                  "  replay vs measured total: RMSE %.2f %% of the mean (event %.2f %%, %d "
                  "rows)\n",
                  100 * r.vs_measured->rmse_frac, 100 * r.vs_measured->event_rmse_frac,
                  r.vs_measured->rows);
    out += b;
  }
  if (r.measured_score) {
    const auto& m = *r.measured_score;
    std::snprintf(b, sizeof b,
                  "  measured total, same rules: baseline %.0f W, minutes above target %.2f, "
                  "over-cut %.2f %%, ramp down %.0f s\n",
                  r.measured_baseline_w, m.minutes_above_target, 100 * m.mean_overcut_frac,
                  m.ramp_down_s);
    out += b;
  }
  if (r.field_vs_measured) {
    std::snprintf(b, sizeof b,
                  "  field projection vs measured total: RMSE %.2f %% of the mean (minute means; "
                  "%.2f %% at each row's time)\n",
                  100 * r.field_vs_measured->rmse_frac, 100 * r.field_vs_measured_point->rmse_frac);
    out += b;
  }
  if (r.vs_field_projection) {
    std::snprintf(b, sizeof b, "  replay vs field projection: RMSE %.2f %% of its mean\n",
                  100 * r.vs_field_projection->rmse_frac);
    out += b;
  }
  return out;
}

std::string dr_replay_svg(const DrReplayResult& r) {
  report::XyPlot plot;
  plot.title = "dr replay (simulated): site power, 1-minute means, against the target";
  plot.x_label = "time (h)";
  plot.y_label = "power (kW)";
  plot.x0 = 0;
  plot.x1 = r.duration_s / 3600;
  plot.y0 = 0;
  plot.y1 = 1.15 * r.baseline_w / 1000;
  report::XySeries tg{"target", {}, {}, true, {}, {}},
      pw{"replay (" + r.method + ")", {}, {}, false, {}, {}};
  for (size_t i = 0; i < r.minute_s.size(); ++i) {
    tg.x.push_back(r.minute_s[i] / 3600);
    tg.y.push_back(r.minute_target_w[i] / 1000);
    pw.x.push_back(r.minute_s[i] / 3600);
    pw.y.push_back(r.minute_power_w[i] / 1000);
  }
  plot.series.push_back(tg);
  plot.series.push_back(pw);
  if (r.measured_total) {
    report::XySeries m{"measured total", {}, {}, false, {}, {}};
    for (size_t i = 0; i < r.measured_total->time_s.size(); ++i) {
      m.x.push_back(r.measured_total->time_s[i] / 3600);
      m.y.push_back(r.measured_total->value_w[i] / 1000);
    }
    plot.series.push_back(m);
  }
  if (r.field_projection) {
    report::XySeries f{"field projection", {}, {}, true, {}, {}};
    for (size_t i = 0; i < r.field_projection->time_s.size(); ++i) {
      f.x.push_back(r.field_projection->time_s[i] / 3600);
      f.y.push_back(r.field_projection->value_w[i] / 1000);
    }
    plot.series.push_back(f);
  }
  return report::render_xy_svg(plot);
}

}  // namespace fw::studies
