#include "controllers/oracle_controller.hpp"

#include <algorithm>
#include <cmath>

#include "controllers/uncontrolled_controller.hpp"

namespace fw {

// Stepped by control/stepper.hpp from the decision's tick (imagined tick i at t0 + i·dt),
// judged by control/window_judge.hpp: with the tumbling rule, the open window is fed the
// samples of it already seen, newest first, then the imagined ones; with the sliding rule,
// the trailing window is seeded with up to n − 1 samples already seen, oldest first.
OracleController::Outcome OracleController::imagine(const Observation& obs, const Command& cmd) {
  Outcome out;
  std::unique_ptr<Plant> clone = plant_->clone();
  const BudgetUnits& units = *obs.units;
  const double w_s = obs.budget->window_s;
  const double b_now = obs.budget->watts;
  auto budget_at = [&](double t) {
    if (cfg_.schedule.entries.empty()) return b_now;
    const double w = cfg_.schedule.at(t).watts;
    return w > 0 ? w : b_now;
  };
  const double dt = obs.sample_period_s;
  const double t0 = obs.time_s;
  const double limit = 1.0 - cfg_.margin;
  const size_t n_win = WindowJudge::samples_per_window(w_s, dt);
  auto feed = [&](const Snapshot& s) {
    const double b = budget_at(s.time_s);
    for (size_t u = 0; u < units.size(); ++u) judge_.set(u, unit_power_w(s, units.units[u]) / b);
    if (!judge_.advance()) return;
    for (size_t u = 0; u < units.size(); ++u) {
      const double mean = judge_.mean(u);
      out.worst_ratio = std::max(out.worst_ratio, mean);
      if (mean > limit) out.feasible = false;
    }
  };
  const SnapshotRing& h = *obs.history;
  if (cfg_.sliding) {
    judge_.reset(WindowJudge::Rule::kSliding, units.size(), n_win);
    const size_t seed_n = std::min(h.size(), n_win - 1);
    for (size_t a = seed_n; a-- > 0;) feed(h.at_age(a));
  } else {
    // The open tumbling window (aligned to t = 0): its samples seen so far, newest first.
    const double window_start = std::floor(t0 / w_s + 1e-9) * w_s;
    size_t seen = 0;
    while (seen < h.size() && h.at_age(seen).time_s >= window_start - 1e-9) ++seen;
    const auto so_far =
        static_cast<size_t>(std::max(1LL, std::llround((t0 - window_start) / dt) + 1));
    judge_.reset(WindowJudge::Rule::kTumbling, units.size(), n_win,
                 so_far > seen ? std::min(so_far - seen, n_win - 1) : 0);
    for (size_t a = 0; a < seen; ++a) feed(h.at_age(a));
  }
  Stepper& stepper = *stepper_;
  stepper.begin(*clone, nullptr, t0, 1);
  if (!stepper.write(cmd).ok()) {
    out.feasible = false;
    out.worst_ratio = 1e9;
    return out;
  }
  const double tokens0 = [&] {
    double s = 0;
    for (const JobReading& j : obs.latest().jobs) s += j.tokens_total;
    return s;
  }();
  const int steps = std::max(1, static_cast<int>(std::lround(cfg_.horizon_s / dt)));
  double tokens1 = tokens0;
  for (int i = 1; i <= steps; ++i, stepper.advance()) {
    if (!stepper.sense().ok()) {
      out.feasible = false;
      break;
    }
    const Snapshot& s = stepper.latest();
    feed(s);
    double total_w = 0;
    for (const GpuReading& g : s.gpus) total_w += std::isfinite(g.power_w) ? g.power_w : 0;
    out.energy_j += total_w * dt;
    tokens1 = 0;
    for (const JobReading& j : s.jobs) tokens1 += j.tokens_total;
  }
  if (!cfg_.sliding && judge_.open_judged()) {  // the trailing partial window
    for (size_t u = 0; u < units.size(); ++u) {
      const double mean = judge_.open_mean(u);
      out.worst_ratio = std::max(out.worst_ratio, mean);
      if (mean > limit) out.feasible = false;
    }
  }
  out.tokens = tokens1 - tokens0;
  return out;
}

// Long by design: candidate generation, look-ahead and selection share the imagined plants and
// their scores.
Command OracleController::update(const Observation& obs) {
  const PlantInfo& info = *obs.plant;
  Command base = UncontrolledController().update(obs);
  if (!stepper_ || stepper_->sample_period_s() != obs.sample_period_s) {
    stepper_.emplace(obs.sample_period_s, /*history_s=*/0);
  }
  if (plant_ == nullptr) {
    ++blind_;
    return Command{};
  }
  {
    std::unique_ptr<Plant> probe = plant_->clone();
    if (!probe) {
      ++blind_;
      return Command{};
    }
  }
  const int n = std::max(2, cfg_.candidates);
  const size_t na = cfg_.actuators.size();
  size_t combos = 1;
  for (size_t a = 0; a < na; ++a) combos *= static_cast<size_t>(n);
  Command best_cmd = base;
  Outcome best;
  bool have = false;
  std::vector<double> best_f(na, 1.0);
  std::vector<std::vector<double>> seen;
  std::vector<double> values;
  // Evaluates the setting with ladder fractions f (one per actuator); keeps the best.
  auto consider = [&](const std::vector<double>& f) {
    Command cmd = base;
    values.clear();
    for (size_t a = 0; a < na; ++a) {
      for (size_t j = 0; j < info.jobs.size(); ++j) {
        const double v = job_ladder(info, j, cfg_.actuators[a]).at_fraction(f[a]);
        values.push_back(v);
        set_job_setting(info, j, cfg_.actuators[a], v, cmd);
      }
    }
    for (const auto& s : seen) {
      if (s == values) return false;  // same rungs as an earlier candidate
    }
    seen.push_back(values);
    const Outcome o = imagine(obs, cmd);
    bool better;
    if (!have) {
      better = true;
    } else if (o.feasible != best.feasible) {
      better = o.feasible;
    } else if (o.feasible) {
      better = o.tokens > best.tokens || (o.tokens == best.tokens && o.energy_j < best.energy_j);
    } else {
      better = o.worst_ratio < best.worst_ratio;
    }
    if (better) best = o, best_cmd = cmd, best_f = f, have = true;
    return o.feasible;
  };
  std::vector<double> f(na);
  for (size_t combo = 0; combo < combos; ++combo) {
    // Digit a of `combo` in base n picks actuator a's fraction, highest first.
    size_t rest = combo;
    for (size_t a = 0; a < na; ++a) {
      f[a] = static_cast<double>(n - 1 - static_cast<int>(rest % n)) / (n - 1);
      rest /= n;
    }
    consider(f);
  }
  // Refinement, one actuator at a time: between the best feasible fraction and the next
  // coarse one above it, bisect (feasibility assumed monotone there) on the rungs.
  if (have && best.feasible) {
    for (size_t a = 0; a < na; ++a) {
      double lo = best_f[a], hi = std::min(1.0, best_f[a] + 1.0 / (n - 1));
      for (int it = 0; it < 6 && hi - lo > 1e-6; ++it) {
        std::vector<double> g = best_f;
        g[a] = 0.5 * (lo + hi);
        const size_t before = seen.size();
        const bool ok = consider(g);
        if (seen.size() == before) break;  // no new rung left between lo and hi
        (ok ? lo : hi) = g[a];
      }
    }
  }
  return best_cmd;
}

}  // namespace fw
