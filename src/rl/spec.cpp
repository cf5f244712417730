#include "rl/spec.hpp"

#include <string>

namespace fw::rl {

ActionSpec ActionSpec::gaussian(std::vector<std::string> names, std::vector<double> low,
                                std::vector<double> high) {
  ActionSpec s;
  s.kind = Kind::kGaussian;
  s.names = std::move(names);
  s.low = std::move(low);
  s.high = std::move(high);
  return s;
}

ActionSpec ActionSpec::categorical(std::vector<std::string> names, std::vector<int> categories) {
  ActionSpec s;
  s.kind = Kind::kCategorical;
  s.names = std::move(names);
  s.categories = std::move(categories);
  return s;
}

Status ActionSpec::validate() const {
  if (names.empty()) return Status::InvalidArgument("action.names: empty");
  const size_t n = names.size();
  if (kind == Kind::kCategorical) {
    if (categories.size() != n)
      return Status::InvalidArgument("action.categories: expected " + std::to_string(n) +
                                     " entries, got " + std::to_string(categories.size()));
    for (size_t i = 0; i < n; ++i)
      if (categories[i] < 2)
        return Status::InvalidArgument("action.categories[" + std::to_string(i) +
                                       "]: must be >= 2");
  } else {
    if (low.size() != n || high.size() != n)
      return Status::InvalidArgument("action.low/high: expected " + std::to_string(n) +
                                     " entries each");
    for (size_t i = 0; i < n; ++i)
      if (!(low[i] < high[i]))
        return Status::InvalidArgument("action.low/high[" + std::to_string(i) +
                                       "]: low must be < high");
  }
  return Status::Ok();
}

nlohmann::json to_json(const ObsSpec& spec) { return {{"names", spec.names}}; }

nlohmann::json to_json(const ActionSpec& spec) {
  nlohmann::json j;
  j["names"] = spec.names;
  if (spec.kind == ActionSpec::Kind::kCategorical) {
    j["kind"] = "categorical";
    j["categories"] = spec.categories;
  } else {
    j["kind"] = "gaussian";
    j["low"] = spec.low;
    j["high"] = spec.high;
  }
  return j;
}

Result<ObsSpec> obs_spec_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("names") || !j["names"].is_array())
    return Status::InvalidArgument("observation.names: missing or not an array");
  ObsSpec s;
  for (const auto& n : j["names"]) {
    if (!n.is_string()) return Status::InvalidArgument("observation.names: not a string");
    s.names.push_back(n.get<std::string>());
  }
  if (s.names.empty()) return Status::InvalidArgument("observation.names: empty");
  return s;
}

Result<ActionSpec> action_spec_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Status::InvalidArgument("action: not an object");
  try {
    ActionSpec s;
    const std::string kind = j.at("kind").get<std::string>();
    s.names = j.at("names").get<std::vector<std::string>>();
    if (kind == "categorical") {
      s.kind = ActionSpec::Kind::kCategorical;
      for (const auto& c : j.at("categories")) {  // integers only: a float to int is UB
        if (!c.is_number_integer() || c.get<int64_t>() < 1 || c.get<int64_t>() > 1000000) {
          return Status::InvalidArgument("action.categories: expected integers in 1..1000000");
        }
        s.categories.push_back(static_cast<int>(c.get<int64_t>()));
      }
    } else if (kind == "gaussian") {
      s.kind = ActionSpec::Kind::kGaussian;
      s.low = j.at("low").get<std::vector<double>>();
      s.high = j.at("high").get<std::vector<double>>();
    } else {
      return Status::InvalidArgument("action.kind: '" + kind +
                                     "' is not one of categorical, gaussian");
    }
    FW_RETURN_IF_ERROR(s.validate());
    return s;
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("action: ") + e.what());
  }
}

std::vector<std::string> numbered_names(const std::string& prefix, int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

}  // namespace fw::rl
