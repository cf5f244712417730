#pragma once
// Test helper: a constant pipeline plan with one stage per cap, the fields the plan reader
// (pipeline/plan_file.hpp) needs, as `flexwatt pipeline plan --json` writes them.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fw::testing_plans {

inline std::string constant_plan(const std::vector<double>& caps_w) {
  nlohmann::json stages = nlohmann::json::array();
  for (size_t s = 0; s < caps_w.size(); ++s) {
    stages.push_back(
        {{"stage", s}, {"cap_w", caps_w[s]}, {"forward_mhz", 1200}, {"backward_mhz", 1200}});
  }
  return nlohmann::json{{"stages", caps_w.size()},
                        {"microbatches", 8},
                        {"mode", "constant"},
                        {"constant", {{"stages", stages}}}}
      .dump();
}

}  // namespace fw::testing_plans
