#include "controllers/oracle_controller.hpp"

#include <algorithm>
#include <cmath>

#include "controllers/uncontrolled_controller.hpp"

namespace fw {

OracleController::Outcome OracleController::imagine(const Observation& obs, const Command& cmd) {
  Outcome out;
  std::unique_ptr<Plant> clone = plant_->clone();
  const PlantInfo& info = *obs.plant;
  const BudgetUnits& units = *obs.units;
  const double w_s = obs.budget->window_s;
  const double dt = obs.sample_period_s;
  const double t0 = obs.time_s;
  const double limit = 1.0 - cfg_.margin;
  // Open window of every unit: Σ ratio·dt and covered time, from the samples already seen.
  double window_start = std::floor(t0 / w_s + 1e-9) * w_s;
  std::vector<double> sum(units.size(), 0), covered(units.size(), 0);
  const SnapshotRing& h = *obs.history;
  for (size_t a = 0; a < h.size(); ++a) {
    const Snapshot& s = h.at_age(a);
    if (s.time_s < window_start - 1e-9) break;
    const double b = obs.budget->watts;
    for (size_t u = 0; u < units.size(); ++u) {
      sum[u] += unit_power_w(s, units.units[u]) / b * dt;
      covered[u] += dt;
    }
  }
  // Sliding rule: the trailing window of every unit, seeded oldest first from history.
  const auto n_win = static_cast<size_t>(std::max(1L, std::lround(w_s / dt)));
  auto slide = [&](const Snapshot& s, double b) {
    for (size_t u = 0; u < units.size(); ++u) slide_.set(u, unit_power_w(s, units.units[u]) / b);
    slide_.advance();
  };
  if (cfg_.sliding) {
    slide_.reset(units.size(), n_win);
    const size_t seed_n = std::min(h.size(), n_win - 1);
    for (size_t a = seed_n; a-- > 0;) slide(h.at_age(a), obs.budget->watts);
  }
  auto judge = [&](bool trailing) {
    for (size_t u = 0; u < units.size(); ++u) {
      if (covered[u] <= 0 || (trailing && covered[u] < 0.5 * w_s - 1e-9)) continue;
      const double mean = sum[u] / covered[u];
      out.worst_ratio = std::max(out.worst_ratio, mean);
      if (mean > limit) out.feasible = false;
      sum[u] = covered[u] = 0;
    }
  };
  if (!clone->write(cmd).ok()) {
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
  for (int i = 1; i <= steps; ++i) {
    const double t = t0 + i * dt;
    if (!clone->read(t, scratch_).ok()) {
      out.feasible = false;
      break;
    }
    const double b = obs.budget->watts;
    if (cfg_.sliding) {
      slide(scratch_, b);
      if (slide_.full()) {
        for (size_t u = 0; u < units.size(); ++u) {
          const double mean = slide_.mean(u);
          out.worst_ratio = std::max(out.worst_ratio, mean);
          if (mean > limit) out.feasible = false;
        }
      }
    } else if (t >= window_start + w_s - 1e-9) {
      judge(false);
      window_start += w_s;
    }
    double total_w = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      const double p = unit_power_w(scratch_, units.units[u]);
      sum[u] += p / b * dt;
      covered[u] += dt;
    }
    for (const GpuReading& g : scratch_.gpus) total_w += std::isfinite(g.power_w) ? g.power_w : 0;
    out.energy_j += total_w * dt;
    tokens1 = 0;
    for (const JobReading& j : scratch_.jobs) tokens1 += j.tokens_total;
  }
  if (!cfg_.sliding) judge(true);
  out.tokens = tokens1 - tokens0;
  (void)info;
  return out;
}

Command OracleController::update(const Observation& obs) {
  const PlantInfo& info = *obs.plant;
  Command base = UncontrolledController().update(obs);
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
