#pragma once
// PpoTrainer: collects num_steps transitions from each of its environments, then updates
// the ActorCritic with PPO (docs/rl.md). Knows environments only through rl::Env.
//
// Determinism: the same config (seed included) and the same environments give the same
// parameters bit for bit; everything runs on the calling thread. Sampling and shuffling
// streams are derived per iteration (Rng::stream(seed, name).child(iteration)) and episode
// reset seeds per (environment, episode index), so a trainer restored from a checkpoint
// taken when every episode had just ended (e.g. num_steps a multiple of a fixed episode
// length) continues exactly as the uninterrupted one. Episodes in progress at checkpoint
// time cannot be restored: they are abandoned and new ones started.

#include <Eigen/Dense>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/status.hpp"
#include "rl/actor_critic.hpp"
#include "rl/adam.hpp"
#include "rl/env.hpp"
#include "rl/obs_normalizer.hpp"
#include "rl/policy.hpp"
#include "rl/ppo_config.hpp"
#include "rl/reward_scaler.hpp"
#include "rl/rollout_buffer.hpp"

namespace fw::rl {

struct IterationStats {
  int iteration = 0;       // 0-based index of the iteration just finished
  long total_steps = 0;    // environment steps so far, all environments
  int episodes = 0;        // episodes that ended during this iteration's rollout
  double mean_return = 0;  // their mean raw (unscaled) return; NaN when episodes == 0
  double mean_length = 0;  // their mean length in steps; NaN when episodes == 0
  double pg_loss = 0, v_loss = 0, entropy = 0;  // means over the last epoch's minibatches
  double approx_kl = 0, clip_frac = 0;          // idem
  double explained_variance = 0;                // of the rollout's value predictions
  double grad_norm = 0;                         // mean pre-clip norm, last epoch
  double lr = 0;
  int epochs = 0;  // epochs run (fewer than update_epochs after a KL stop)
};

class PpoTrainer {
 public:
  // All environments must share obs and action specs; the trainer owns them.
  static Result<std::unique_ptr<PpoTrainer>> create(std::vector<std::unique_ptr<Env>> envs,
                                                    const PpoConfig& config);

  // One iteration: collect() then update().
  Result<IterationStats> iterate();
  // Fills the rollout buffer (num_steps from each environment) and computes GAE.
  Status collect();
  // PPO epochs over the buffer filled by the last collect().
  IterationStats update();

  // The current actor as a deployable policy. Metadata gets training_seed, iterations and
  // total_steps added to `metadata` (an object).
  Policy policy(nlohmann::json metadata = nlohmann::json::object()) const;

  // Everything needed to continue training: parameters, Adam, normalisers, counters.
  nlohmann::json checkpoint() const;
  // REQUIRES: a trainer created with the same config and environment specs.
  Status restore(const nlohmann::json& checkpoint);

  const PpoConfig& config() const { return config_; }
  const ActorCritic& model() const { return model_; }
  const Eigen::VectorXd& theta() const { return theta_; }
  const ObsNormalizer& obs_normalizer() const { return obs_norm_; }
  const RolloutBuffer& buffer() const { return buf_; }
  int iteration() const { return iteration_; }
  long total_steps() const { return total_steps_; }

 private:
  PpoTrainer(std::vector<std::unique_ptr<Env>> envs, const PpoConfig& config);
  // Observation from an environment: updates the normaliser, writes the normalised copy.
  void take_obs(const double* raw, double* normalized);
  double value_of(const double* normalized);
  // Starts episode `episode` of environment e. observe = false when resuming at an episode
  // boundary: the normaliser has seen that first observation and cur_obs_ holds it,
  // normalised as it was then.
  Status reset_env(int e, long episode, bool observe);

  PpoConfig config_;
  std::vector<std::unique_ptr<Env>> envs_;
  ObsSpec obs_spec_;
  ActionSpec action_spec_;
  ActorCritic model_;
  Eigen::VectorXd theta_, grad_;
  Adam adam_;
  ObsNormalizer obs_norm_;
  RewardScaler reward_scaler_;
  RolloutBuffer buf_;
  int iteration_ = 0;
  long total_steps_ = 0;

  // Per-environment state carried across iterations.
  bool started_ = false;
  Eigen::MatrixXd cur_obs_;  // obs_dim x num_envs, normalised
  std::vector<double> ep_return_;
  std::vector<int> ep_length_;
  std::vector<long> episode_;  // index of each environment's current episode; -1 before any
  // Episodes finished in the current rollout.
  double done_return_sum_ = 0, done_length_sum_ = 0;
  int done_count_ = 0;

  // Buffers for acting and updating.
  Mlp::Workspace actor_ws_, critic_ws_;
  Eigen::VectorXd raw_obs_, out_buf_, action_buf_;
  ActorCritic::Batch batch_;
  ActorCritic::Scratch scratch_;
  std::vector<int> perm_;
};

}  // namespace fw::rl
