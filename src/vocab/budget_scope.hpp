#pragma once
// What a power budget applies to: each GPU, each job's GPUs summed, the node's GPUs summed, or
// a fleet's. One enum for the control loop's budgets and the trace analysis.

#include <string_view>

namespace fw {

enum class BudgetScope { kGpu, kJob, kNode, kFleet };
// "gpu", "job", "node", "fleet".
std::string_view scope_name(BudgetScope s);
// The scope named `name`; false (out unchanged) for any other name.
bool scope_from_name(std::string_view name, BudgetScope& out);

}  // namespace fw
