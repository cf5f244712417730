#pragma once
// A PPO training session for the meta-controller on a simulated scenario (`flexwatt train`,
// docs/rl.md): the recipe, the domain-randomisation ranges, the environments, checkpoint and
// resume, the training log CSV and the policy file with its metadata.
//
// Files: the policy at out; the checkpoint at <out without .json>.ckpt.json (every
// checkpoint_every iterations and at the end); the log at log_path (default <stem>.train.csv),
// appended to when resuming. A resumed run continues exactly when the recipe (iterations
// aside) matches the checkpoint's; otherwise InvalidArgument.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "rl/ppo_config.hpp"

namespace fw::rl {

// The shipped PPO settings: 64x64 tanh layers, 4 minibatches, 10 epochs, lr 1e-3, entropy
// coefficient 0.01 (CleanRL's discrete-action default, docs/rl.md), gamma 0.99.
rl::PpoConfig default_train_ppo_config();

// Every field is a `flexwatt train` flag; the defaults are the shipped policy's recipe.
struct TrainRequest {
  std::string scenario_path;
  // More scenario files: with scenario_path, a family; each episode draws one member
  // (docs/rl.md "Training over a family"). Every member gets `sets`.
  std::vector<std::string> family;
  std::vector<std::string> sets;  // scenario overrides, key.path=value
  std::string out;                // policy file (JSON)
  std::string log_path;           // empty: <stem>.train.csv
  std::string resume;             // checkpoint to continue from; empty: a fresh run
  int iterations = 400, checkpoint_every = 10;
  int64_t seed = 1;
  int envs = 8;
  double decision_period_s = 5;
  double episode_s = 900;
  double budget_jitter = 0.15;  // budgets drawn in nominal x [1 - j, 1 + j]
  double violation_penalty = 12;
  double excess_penalty = -1;  // < 0: 10 x violation_penalty
  double margin = 0;
  std::string window_rule = "tumbling";  // or sliding
  std::string actions = "step";          // or level
  std::string knobs = "all";             // rl::parse_knob_mask()
  std::string decide_on = "period";      // or phase
  double max_period_s = 60;
  double churn_penalty = 0.02;
  // Drift randomisation per episode (rl/plant_env.hpp), off by default: completion-length
  // curve shapes ("growing,u,declining"; empty: none), their factor range "LO,HI", and up to
  // budget_steps unannounced budget steps with factors in budget_step_range "LO,HI".
  std::string len_curves;
  std::string len_range = "0.5,2.5";
  int budget_steps = 0;
  std::string budget_step_range = "0.85,1.1";
  rl::PpoConfig ppo = default_train_ppo_config();  // seed and num_steps are set by the session
  std::string command_line;                        // recorded in the policy's metadata
};

// After each iteration, for the progress line.
struct TrainProgress {
  int iteration = 0, iterations = 0;  // iteration counts from 1
  double mean_return = 0, violation_rate = 0, approx_kl = 0, entropy = 0, wall_s = 0;
};

struct TrainSummary {
  std::string scenario_name, policy, log, checkpoint;
  int iterations = 0;
  long total_steps = 0;
  double last_mean_return = 0, last_violation_rate = 0, wall_s = 0;  // NaN when none
  std::vector<int> family_draws;  // episodes finished per family member (this process)
  // The JSON of `flexwatt train --json`.
  nlohmann::json to_json() const;
};

Result<TrainSummary> run_training(const TrainRequest& req,
                                  const std::function<void(const TrainProgress&)>& progress = {});

// An argument quoted for a POSIX shell when it holds anything beyond [A-Za-z0-9_./=:,+-].
std::string shell_quote(const std::string& arg);

}  // namespace fw::rl
