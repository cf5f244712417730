#pragma once
// The units a budget judges, as sets of plant GPU indices: one unit per GPU (scope gpu),
// one per job (scope job, over the job's GPUs), one for the whole plant (node, fleet).
// A unit's power is the sum of its GPUs' power_w readings (missing readings count as 0).

#include <cmath>
#include <vector>

#include "control/plant.hpp"
#include "vocab/budget.hpp"
#include "vocab/snapshot.hpp"

namespace fw {

struct BudgetUnits {
  std::vector<std::vector<int>> units;  // GPU indices per unit
  std::vector<int> unit_of_gpu;         // per GPU: its unit, -1 when in none
  // Units that contain at least one of a job's GPUs, per job.
  std::vector<std::vector<int>> units_of_job;

  size_t size() const { return units.size(); }
};

BudgetUnits make_budget_units(const PlantInfo& info, BudgetScope scope);

// Sum of power_w over `gpus` in one snapshot (NaN readings count as 0). Inline: called per
// history sample when features are built.
inline double unit_power_w(const Snapshot& s, const std::vector<int>& gpus) {
  double sum = 0;
  for (int g : gpus) {
    if (g < 0 || g >= static_cast<int>(s.gpus.size())) continue;
    const double p = s.gpus[g].power_w;
    if (std::isfinite(p)) sum += p;
  }
  return sum;
}

}  // namespace fw
