#pragma once
// The units a budget judges, as sets of plant GPU indices: one unit per GPU (scope gpu),
// one per job (scope job, over the job's GPUs), one for the whole plant (node, fleet).
// A unit's power is the sum of its GPUs' power_w readings (missing readings count as 0).

#include <vector>

#include "control/budget.hpp"
#include "control/plant.hpp"
#include "telemetry/snapshot.hpp"

namespace fw {

struct BudgetUnits {
  std::vector<std::vector<int>> units;  // GPU indices per unit
  std::vector<int> unit_of_gpu;         // per GPU: its unit, -1 when in none
  // Units that contain at least one of a job's GPUs, per job.
  std::vector<std::vector<int>> units_of_job;

  size_t size() const { return units.size(); }
};

BudgetUnits make_budget_units(const PlantInfo& info, BudgetScope scope);

// Sum of power_w over `gpus` in one snapshot (NaN readings count as 0).
double unit_power_w(const Snapshot& s, const std::vector<int>& gpus);

}  // namespace fw
