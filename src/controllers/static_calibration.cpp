#include "controllers/static_calibration.hpp"

#include <algorithm>
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

}  // namespace fw
