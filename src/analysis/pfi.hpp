#pragma once
// Power Flexibility Index (PFI) of a job from a power-cap sweep: Colangelo et al.,
// arXiv 2609.11542, Eq. 1 (docs/sources.md §1b):
//   PFI = (1/N) Σ_{i: T_i ≠ T_max} (1 − P_i/P_max) / (1 − T_i/T_max)
// where (T_max, P_max) is the uncapped point (the highest cap in the sweep) and P_i the
// job's realized (aggregate) power at cap i. PFI > 1: throughput falls more slowly than power.

#include <vector>

#include "core/status.hpp"

namespace fw {

struct PfiPoint {
  double cap_w = 0;       // per-GPU cap of this sweep point
  double throughput = 0;  // any unit, same for every point (> 0)
  double power_w = 0;     // realized power, same aggregation for every point (> 0)
};

// PFI of a sweep (any order). Points whose |1 − T_i/T_max| <= min_rel_drop are left out as
// "T_i = T_max" (0: exact equality only, as in the paper; a simulator or noisy measurement
// may pass e.g. 0.005). Errors: fewer than two points, a non-positive value, or no point left.
Result<double> compute_pfi(const std::vector<PfiPoint>& points, double min_rel_drop = 0.0);

}  // namespace fw
