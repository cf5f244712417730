#pragma once
// Observation and action specifications shared by environments, the trainer and policy files.
//
// Observations are fixed-size vectors of doubles, one named entry each. Actions are
// fixed-size vectors of doubles too, so every environment takes the same type:
// - Gaussian: one unbounded real per entry. The environment clips to [low, high] when it
//   applies the action; the trainer stores and scores the unclipped sample.
// - Categorical: one independent factor per entry (e.g. one per knob with the options
//   {down, stay, up}); the entry holds the chosen option's index 0..categories[i]-1.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace fw::rl {

struct ObsSpec {
  std::vector<std::string> names;  // one per observation entry
  int dim() const { return static_cast<int>(names.size()); }
};

struct ActionSpec {
  enum class Kind { kGaussian, kCategorical };
  Kind kind = Kind::kCategorical;
  std::vector<std::string> names;  // one per action entry
  std::vector<int> categories;     // categorical: options per factor (each >= 2)
  std::vector<double> low, high;   // gaussian: range the environment clips to (low < high)

  int dim() const { return static_cast<int>(names.size()); }
  static ActionSpec gaussian(std::vector<std::string> names, std::vector<double> low,
                             std::vector<double> high);
  static ActionSpec categorical(std::vector<std::string> names, std::vector<int> categories);
  // Checks sizes and ranges; the message names the offending field.
  Status validate() const;
};

nlohmann::json to_json(const ObsSpec& spec);
nlohmann::json to_json(const ActionSpec& spec);
Result<ObsSpec> obs_spec_from_json(const nlohmann::json& j);
Result<ActionSpec> action_spec_from_json(const nlohmann::json& j);

// Placeholder names "<prefix>0", "<prefix>1", ... for specs without meaningful names.
std::vector<std::string> numbered_names(const std::string& prefix, int n);

}  // namespace fw::rl
