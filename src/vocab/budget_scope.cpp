#include "vocab/budget_scope.hpp"

namespace fw {

std::string_view scope_name(BudgetScope s) {
  switch (s) {
    case BudgetScope::kGpu:
      return "gpu";
    case BudgetScope::kJob:
      return "job";
    case BudgetScope::kNode:
      return "node";
    case BudgetScope::kFleet:
      return "fleet";
  }
  return "node";
}

bool scope_from_name(std::string_view name, BudgetScope& out) {
  for (BudgetScope s :
       {BudgetScope::kGpu, BudgetScope::kJob, BudgetScope::kNode, BudgetScope::kFleet}) {
    if (scope_name(s) == name) {
      out = s;
      return true;
    }
  }
  return false;
}

}  // namespace fw
