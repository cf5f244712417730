#pragma once
// A power budget: watts over a scope, judged on the mean over a measurement window.
// A schedule holds budgets that take effect at given times (demand-response events).

#include <string_view>
#include <vector>

#include "vocab/budget_scope.hpp"

namespace fw {

struct Budget {
  double watts = 0;  // > 0
  BudgetScope scope = BudgetScope::kNode;
  double window_s = 30;  // averaging window that judges a violation
  // With scope kGpu the budget applies to each GPU; kJob to each job's GPUs summed;
  // kNode/kFleet to all the plant's GPUs summed.
};

// Budgets over time; entries sorted by start_s, the first starting at 0.
struct BudgetSchedule {
  struct Entry {
    double start_s = 0;
    Budget budget;
  };
  std::vector<Entry> entries;

  // The budget in force at time t (the last entry with start_s <= t).
  // REQUIRES: !entries.empty().
  const Budget& at(double t_s) const {
    size_t i = 0;
    while (i + 1 < entries.size() && entries[i + 1].start_s <= t_s) ++i;
    return entries[i].budget;
  }
};

}  // namespace fw
