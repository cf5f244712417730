#pragma once
// Internal to rl/train: the environment setup of a `flexwatt train` request (the scenario and
// family loaded and checked, the knob mask, the PlantEnv config with its randomisation and
// family draws, one episode factory per member), shared by PPO training (training.cpp) and
// the imitation session (imitation_session.cpp), so both draw episodes alike.

#include <nlohmann/json.hpp>
#include <vector>

#include "core/status.hpp"
#include "rl/plant_env.hpp"
#include "rl_train/training.hpp"
#include "sim/scenario.hpp"

namespace fw::rl {

struct TrainSetup {
  sim::Scenario scenario;  // the first member, with the request's overrides
  unsigned mask = kAllKnobs;
  PlantEnvConfig ec;
  std::vector<EpisodeFactory> family;  // one per member, the first file first
};

// Checks the flags that do not depend on training (--knobs, --max-period-s, --out's
// directory), loads every member and builds the config. InvalidArgument naming the flag or
// file.
Result<TrainSetup> prepare_train_setup(const TrainRequest& r);

// The policy metadata `flexwatt train` writes (scenario family, randomisation, reward,
// recipe, command), for a policy of this setup.
nlohmann::json train_policy_metadata(const TrainRequest& r, const TrainSetup& setup,
                                     const nlohmann::json& recipe, double nominal_budget_w);
// The family's description (members, shapes, ranges, steps), or null when no family is on.
nlohmann::json train_family_json(const TrainRequest& r, const TrainSetup& setup);

}  // namespace fw::rl
