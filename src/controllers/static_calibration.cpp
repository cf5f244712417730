#include "controllers/static_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "control/control_loop.hpp"
#include "controllers/static_controller.hpp"

namespace fw {

Result<double> worst_window_ratio(const PlantFactory& make_plant, const BudgetSchedule& budget,
                                  const StaticCalibrationConfig& cfg, double fraction,
                                  uint64_t seed) {
  FW_ASSIGN_OR_RETURN(CalibrationEpisode e,
                      calibration_episode(make_plant, budget, cfg, fraction, seed));
  return e.worst_ratio;
}

Result<CalibrationEpisode> calibration_episode(const PlantFactory& make_plant,
                                               const BudgetSchedule& budget,
                                               const StaticCalibrationConfig& cfg, double fraction,
                                               uint64_t seed) {
  std::unique_ptr<Plant> plant = make_plant(seed);
  if (!plant) return Status::Internal("static calibration: the plant factory returned nothing");
  StaticController ctrl(cfg.actuator, fraction, kUnset, 10, cfg.hold);
  LoopConfig lc;
  lc.sample_period_s = cfg.sample_period_s;
  lc.duration_s = cfg.duration_s;
  lc.history_s = 1;
  lc.windows_s = {budget.entries.front().budget.window_s};
  ControlLoop loop(*plant, budget, lc, cfg.limiter);
  loop.add_controller(&ctrl);
  FW_RETURN_IF_ERROR(loop.run().with_context("static calibration"));
  const EpisodeResult& r = loop.result();
  // Meter-blind safety: the worst trailing window (every tumbling window, at any phase, is
  // one of them); runs shorter than a window fall back to the tumbling judge.
  const double worst =
      r.worst_sliding_ratio > 0 ? r.worst_sliding_ratio : r.worst_window_ratio.front();
  return CalibrationEpisode{worst, r.completed_tokens};
}

std::vector<int> coarse_rungs(int n, int candidates) {
  const int m = std::clamp(candidates, 2, std::max(2, n));
  std::vector<int> out;
  for (int i = 0; i < m; ++i) {
    const int rung =
        n == 1 ? 0 : static_cast<int>(std::lround(static_cast<double>(i) * (n - 1) / (m - 1)));
    if (out.empty() || out.back() != rung) out.push_back(rung);
  }
  return out;
}

Result<StaticCalibration> calibrate_static(const PlantFactory& make_plant,
                                           const BudgetSchedule& budget,
                                           const StaticCalibrationConfig& cfg) {
  if (cfg.seeds.empty()) return Status::InvalidArgument("static calibration: no seeds");
  if (budget.entries.empty()) return Status::InvalidArgument("static calibration: no budget");
  std::unique_ptr<Plant> probe = make_plant(cfg.seeds.front());
  if (!probe) return Status::Internal("static calibration: the plant factory returned nothing");
  const Ladder ladder = job_ladder(probe->info(), 0, cfg.actuator);
  probe.reset();
  const int n = ladder.size();
  auto fraction_of = [&](int rung) {
    return ladder.max > ladder.min ? (ladder.value(rung) - ladder.min) / (ladder.max - ladder.min)
                                   : 1.0;
  };
  StaticCalibration out;
  std::map<int, double> worst;   // rung → worst ratio over the seeds
  std::map<int, double> tokens;  // rung → mean completed-step tokens (safe rungs)
  auto evaluate = [&](int rung) -> Result<double> {
    auto it = worst.find(rung);
    if (it != worst.end()) return it->second;
    double w = 0, tok = 0;
    for (uint64_t seed : cfg.seeds) {
      FW_ASSIGN_OR_RETURN(CalibrationEpisode e,
                          calibration_episode(make_plant, budget, cfg, fraction_of(rung), seed));
      ++out.episodes;
      w = std::max(w, e.worst_ratio);
      tok += e.completed_tokens / static_cast<double>(cfg.seeds.size());
      if (w > 1.0) break;  // already unsafe
    }
    worst[rung] = w;
    tokens[rung] = w <= 1.0 ? tok : 0;
    return w;
  };
  // Coarse scan, top down.
  const std::vector<int> coarse = coarse_rungs(n, cfg.max_candidates);
  int safe = -1, unsafe_above = -1;
  for (auto it = coarse.rbegin(); it != coarse.rend(); ++it) {
    const int rung = *it;
    FW_ASSIGN_OR_RETURN(double w, evaluate(rung));
    if (w <= 1.0) {
      safe = rung;
      break;
    }
    unsafe_above = rung;
  }
  if (safe >= 0 && unsafe_above > safe + 1) {
    int lo = safe, hi = unsafe_above;  // lo safe, hi unsafe
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      FW_ASSIGN_OR_RETURN(double w, evaluate(mid));
      (w <= 1.0 ? lo : hi) = mid;
    }
    safe = lo;
  }
  out.found = safe >= 0;
  const int rung = out.found ? safe : 0;
  FW_ASSIGN_OR_RETURN(out.worst_ratio, evaluate(rung));
  out.fraction = fraction_of(rung);
  out.value = ladder.value(rung);
  out.completed_tokens = tokens[rung];
  return out;
}

namespace {

// The union of the jobs' ladders of knob q (min of the minima, max of the maxima, the finest
// step): a value the same for every job, clamped to each job's range by StaticController.
Ladder union_ladder(const PlantInfo& info, int q) {
  Ladder l;
  bool first = true;
  for (const JobInfo& j : info.jobs) {
    const KnobRange& r = j.knob_ranges[q];
    if (!r.available) continue;
    const double step = r.step > 0 ? r.step : 1;
    l.min = first ? r.min : std::min(l.min, r.min);
    l.max = first ? r.max : std::max(l.max, r.max);
    l.step = first ? step : std::min(l.step, step);
    first = false;
  }
  return l;
}

}  // namespace

Result<JointCalibration> calibrate_static_joint(const PlantFactory& make_plant,
                                                const BudgetSchedule& budget,
                                                const JointCalibrationConfig& cfg) {
  if (cfg.actuators.empty()) return Status::InvalidArgument("static calibration: no actuator");
  if (cfg.base.seeds.empty()) return Status::InvalidArgument("static calibration: no seeds");
  std::unique_ptr<Plant> probe = make_plant(cfg.base.seeds.front());
  if (!probe) return Status::Internal("static calibration: the plant factory returned nothing");
  const PlantInfo info = probe->info();
  probe.reset();
  JointCalibration out;
  // The inner actuator: caps when listed (the largest safe cap is the one with the most
  // tokens at given knobs); the rest are outer knobs. Without caps every knob is outer and a
  // point is run as it is (tokens need not grow with a knob: a large group at a low
  // concurrency may finish no step), the setting held through the last knob (a held actuator
  // knob keeps its hold, StaticController).
  int inner_i = -1;
  for (size_t i = 0; i < cfg.actuators.size(); ++i) {
    if (cfg.actuators[i].kind == Actuator::Kind::kCaps) inner_i = static_cast<int>(i);
  }
  const bool caps_inner = inner_i >= 0;
  out.inner = caps_inner ? cfg.actuators[inner_i] : cfg.actuators.back();
  std::vector<int> outer;  // knob indices
  std::vector<Ladder> ladders;
  for (size_t i = 0; i < cfg.actuators.size(); ++i) {
    if (static_cast<int>(i) == inner_i) continue;
    const int q = cfg.actuators[i].index();
    if (q < 0 || q >= kNumKnobs) continue;
    outer.push_back(q);
    ladders.push_back(union_ladder(info, q));
  }
  // Inner calibrations by outer point (NaN = configured, keyed as -1).
  std::map<std::vector<double>, StaticCalibration> cache;
  JointPoint best;
  bool have_best = false;
  auto key_of = [&](const KnobValues& k) {
    std::vector<double> key;
    for (int q : outer) key.push_back(std::isnan(k[q]) ? -1.0 : k[q]);
    return key;
  };
  auto point = [&](const KnobValues& k) -> Result<StaticCalibration> {
    const std::vector<double> key = key_of(k);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    StaticCalibrationConfig c = cfg.base;
    c.actuator = out.inner;
    for (int q : outer) {
      if (!std::isnan(k[q])) c.hold[q] = k[q];
    }
    StaticCalibration cal;
    if (caps_inner) {
      FW_ASSIGN_OR_RETURN(cal, calibrate_static(make_plant, budget, c));
    } else {                 // the point itself, on every seed while it stays safe
      for (int q : outer) {  // held through a knob it sets (others: configured)
        if (!std::isnan(c.hold[q])) c.actuator = Actuator::of_index(q);
      }
      double w = 0, tok = 0;
      for (uint64_t seed : c.seeds) {
        FW_ASSIGN_OR_RETURN(CalibrationEpisode e,
                            calibration_episode(make_plant, budget, c, 1.0, seed));
        ++cal.episodes;
        w = std::max(w, e.worst_ratio);
        tok += e.completed_tokens / static_cast<double>(c.seeds.size());
        if (w > 1.0) break;
      }
      cal.found = w <= 1.0;
      cal.worst_ratio = w;
      cal.completed_tokens = cal.found ? tok : 0;
      cal.fraction = 1.0;
      cal.value = c.hold[c.actuator.index()];
    }
    out.episodes += cal.episodes;
    ++out.points;
    cache[key] = cal;
    if (cal.found && (!have_best || cal.completed_tokens > best.inner.completed_tokens)) {
      best = {k, cal};
      have_best = true;
    }
    return cal;
  };
  // 1. Each actuator alone (the per-actuator optimum), then as a seed point of the search.
  for (size_t i = 0; i < cfg.actuators.size(); ++i) {
    KnobValues k = kNoKnobs;
    if (static_cast<int>(i) != inner_i) {
      StaticCalibrationConfig c = cfg.base;
      c.actuator = cfg.actuators[i];
      FW_ASSIGN_OR_RETURN(StaticCalibration alone, calibrate_static(make_plant, budget, c));
      out.episodes += alone.episodes;
      if (!alone.found) {
        out.per_actuator.push_back({k, alone});
        out.per_actuator_of.push_back(cfg.actuators[i]);
        continue;
      }
      const int q = cfg.actuators[i].index();  // a knob: only caps can be inner
      if (q >= 0 && q < kNumKnobs) k[q] = alone.value;
    }
    FW_ASSIGN_OR_RETURN(StaticCalibration cal, point(k));
    out.per_actuator.push_back({k, cal});
    out.per_actuator_of.push_back(cfg.actuators[i]);
  }
  // 2. The coarse joint grid of the outer knobs.
  int grid = cfg.grid;
  if (grid <= 0) {  // auto: with the cap 5; knobs alone (≤ 2 episodes a point) every rung
    double n = 1;
    for (const Ladder& l : ladders) n *= l.size();
    grid = caps_inner ? 5 : n <= kExhaustiveKnobPoints ? 1 << 20 : 9;
  }
  out.grid = grid;
  std::vector<std::vector<int>> rungs;
  for (const Ladder& l : ladders) rungs.push_back(coarse_rungs(l.size(), grid));
  const size_t n_outer = outer.size();
  if (n_outer > 0) {
    std::vector<size_t> at(n_outer, 0);
    for (;;) {
      KnobValues k = kNoKnobs;
      for (size_t d = 0; d < n_outer; ++d) k[outer[d]] = ladders[d].value(rungs[d][at[d]]);
      const int before = out.points;
      FW_RETURN_IF_ERROR(point(k).status());
      out.grid_points += out.points - before;
      size_t d = 0;
      while (d < n_outer && ++at[d] == rungs[d].size()) at[d++] = 0;
      if (d == n_outer) break;
    }
  }
  out.grid_best_tokens = have_best ? best.inner.completed_tokens : 0;
  // 3. Pattern search from the best point, on rungs of the outer ladders.
  if (cfg.refine && have_best && n_outer > 0) {
    std::vector<int> x(n_outer);
    int step = 1;
    for (size_t d = 0; d < n_outer; ++d) {
      double v = best.knobs[outer[d]];
      if (std::isnan(v))
        v = info.jobs.empty() ? ladders[d].max : info.jobs[0].default_knobs[outer[d]];
      x[d] = ladders[d].index_of(v);
      const int n = ladders[d].size();
      if (rungs[d].size() > 1)
        step = std::max(step, (n - 1) / static_cast<int>(rungs[d].size() - 1));
    }
    auto knobs_of = [&](const std::vector<int>& r) {
      KnobValues k = kNoKnobs;
      for (size_t d = 0; d < n_outer; ++d) k[outer[d]] = ladders[d].value(r[d]);
      return k;
    };
    FW_RETURN_IF_ERROR(point(knobs_of(x)).status());
    double best_tok = best.inner.completed_tokens;
    while (step >= 1) {
      bool moved = false;
      for (size_t d = 0; d < n_outer && !moved; ++d) {
        for (int dir : {+1, -1}) {
          std::vector<int> y = x;
          y[d] = std::clamp(x[d] + dir * step, 0, ladders[d].size() - 1);
          if (y[d] == x[d]) continue;
          FW_ASSIGN_OR_RETURN(StaticCalibration c, point(knobs_of(y)));
          if (c.found && c.completed_tokens > best_tok) {
            x = y;
            best_tok = c.completed_tokens;
            moved = true;
            break;
          }
        }
      }
      if (!moved) step /= 2;
    }
  }
  out.found = have_best;
  out.hold = cfg.base.hold;
  if (have_best) {
    out.best = best.inner;
    for (int q : outer) {
      if (!std::isnan(best.knobs[q])) {
        out.hold[q] = best.knobs[q];
        if (!caps_inner) out.inner = Actuator::of_index(q);  // a held knob
      }
    }
  } else if (!out.per_actuator.empty()) {
    out.best = out.per_actuator.back().inner;  // the inner alone: its lowest setting
  }
  return out;
}

}  // namespace fw
