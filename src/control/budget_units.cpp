#include "control/budget_units.hpp"

#include <cmath>

namespace fw {

BudgetUnits make_budget_units(const PlantInfo& info, BudgetScope scope) {
  BudgetUnits u;
  const int n_gpus = static_cast<int>(info.gpus.size());
  u.unit_of_gpu.assign(n_gpus, -1);
  switch (scope) {
    case BudgetScope::kGpu:
      for (int g = 0; g < n_gpus; ++g) u.units.push_back({g});
      break;
    case BudgetScope::kJob:
      for (const JobInfo& j : info.jobs) u.units.push_back(j.gpus);
      break;
    case BudgetScope::kNode:
    case BudgetScope::kFleet: {
      std::vector<int> all;
      for (int g = 0; g < n_gpus; ++g) all.push_back(g);
      u.units.push_back(std::move(all));
      break;
    }
  }
  for (size_t k = 0; k < u.units.size(); ++k) {
    for (int g : u.units[k]) {
      if (g >= 0 && g < n_gpus && u.unit_of_gpu[g] < 0) u.unit_of_gpu[g] = static_cast<int>(k);
    }
  }
  u.units_of_job.resize(info.jobs.size());
  for (size_t j = 0; j < info.jobs.size(); ++j) {
    for (int g : info.jobs[j].gpus) {
      if (g < 0 || g >= n_gpus) continue;
      const int k = u.unit_of_gpu[g];
      bool seen = k < 0;
      for (int x : u.units_of_job[j]) seen = seen || x == k;
      if (!seen) u.units_of_job[j].push_back(k);
    }
  }
  return u;
}

}  // namespace fw
