#include "controllers/cap_arms.hpp"

#include <algorithm>
#include <cmath>

namespace fw {
namespace {
bool busy(Phase p) {
  return p == Phase::kForward || p == Phase::kBackward || p == Phase::kAllToAll ||
         p == Phase::kAllReduce || p == Phase::kOptimizer;
}
}  // namespace

void PerGpuStaticController::reset(const PlantInfo& info) {
  first_busy_s_ = -1;
  done_ = false;
  sum_w_.assign(info.gpus.size(), 0.0);
  n_.assign(info.gpus.size(), 0);
}

Command PerGpuStaticController::update(const Observation& obs) {
  Command c;
  if (done_) return c;
  const PlantInfo& info = *obs.plant;
  const Snapshot& s = obs.latest();
  bool any = false;
  for (size_t j = 0; j < info.jobs.size() && j < s.jobs.size(); ++j) {
    if (!busy(s.jobs[j].phase)) continue;
    any = true;
    for (int g : info.jobs[j].gpus) {
      if (static_cast<size_t>(g) >= s.gpus.size() || !std::isfinite(s.gpus[g].power_w)) continue;
      sum_w_[g] += s.gpus[g].power_w;
      ++n_[g];
    }
  }
  if (any && first_busy_s_ < 0) first_busy_s_ = obs.time_s;
  if (first_busy_s_ < 0 || obs.time_s - first_busy_s_ < calib_s_) return c;
  done_ = true;
  c.power_cap_w.assign(info.gpus.size(), kUnset);
  for (size_t g = 0; g < info.gpus.size(); ++g) {
    if (n_[g] == 0) continue;
    const double p0 = idle_frac_ * info.gpus[g].tdp_w;
    const double pk = sum_w_[g] / n_[g];
    c.power_cap_w[g] =
        std::clamp(p0 + ratio_ * (pk - p0), info.gpus[g].min_cap_w, info.gpus[g].max_cap_w);
  }
  return c;
}

}  // namespace fw
