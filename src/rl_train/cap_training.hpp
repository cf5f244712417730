#pragma once
// `flexwatt train --task caps`: learns the capnet policy (rl/capnet_controller.hpp), one MLP
// shared by every GPU, for reward = energy_saved − α · throughput_lost against the uncapped
// run of the same scenario and seed (eval/cap_episode.hpp states the normalisation).
//
// Method: evolution strategies (OpenAI-ES: antithetic Gaussian perturbations of the
// parameters, centred-rank fitness, Adam ascent). Why not PPO here: every GPU's action
// affects one job-level reward (the job runs at its slowest GPU), so a per-GPU PPO agent
// gets one scalar for 1–64 actions and no per-action credit; ES scores the whole shared
// policy on the exact episode objective, which is what the operator's α trades. docs/caps.md.
//
// Each iteration draws `variants` scenarios from the base scenario (GPU count 1–64, workload
// dense/MoE, work imbalance, duty cycle; plant seeds ≥ 2^41) and runs every perturbed
// policy on all of them (common random numbers). Every validate_every iterations the mean
// policy is scored on the validation set (fixed variants, seeds 500000+); the best is saved.
// Deterministic for a seed and thread count-independent.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace fw::rl {

struct CapTrainRequest {
  std::string scenario_path;
  std::vector<std::string> sets;
  std::string out;
  std::string log_path;  // default: OUT without .json + .train.csv
  double alpha = 1.0;
  int iterations = 120;
  int pairs = 8;  // antithetic pairs per iteration
  int variants = 2;
  double sigma = 0.1;
  double lr = 0.05;
  double weight_decay = 0.005;
  uint64_t seed = 1;
  double episode_s = 600;
  double period_s = 10;
  double step_frac = 0.05;
  int max_gpus = 64;
  std::vector<int> hidden = {16, 16};
  int validate_every = 10;
  int validation_seeds = 2;
  int threads = 2;
  std::string command_line;
};

struct CapTrainProgress {
  int iteration = 0, iterations = 0;
  double mean_reward = 0, validation = 0, wall_s = 0;
};

struct CapTrainSummary {
  std::string policy, log;
  int iterations = 0, best_iteration = 0;
  double best_validation = 0, wall_s = 0;
  int64_t episodes = 0;
  nlohmann::json to_json() const;
};

Result<CapTrainSummary> run_cap_training(const CapTrainRequest& req,
                                         const std::function<void(const CapTrainProgress&)>& cb);

// The validation/evaluation variants used for selection (names and --set lists), for docs.
std::vector<std::pair<std::string, std::vector<std::string>>> cap_validation_variants(
    double episode_s);

}  // namespace fw::rl
