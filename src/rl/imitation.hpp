#pragma once
// Behaviour cloning (imitation) of a teacher's categorical actions: the PPO actor's network
// (tanh MLP, one categorical factor per action head) fitted by cross-entropy, per head, to
// (observation, teacher action) pairs (docs/rl.md "Imitation of a planner").
//
// Loss of one sample: Σ over factors f of −log p_f(label_f | normalised obs); minibatch mean,
// Adam, global-norm clipping, learning rate annealed linearly to 0 over the epochs. The
// observation normaliser's statistics are those of the training split (frozen in the policy,
// as PPO's are at the end of training). The held-out split is whole episodes (episode id mod
// holdout_every == holdout_every − 1), so a held-out decision's neighbours are never trained on.
//
// Contract: deterministic for a seed (one thread). fit_imitation() never reads files.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/status.hpp"
#include "rl/policy.hpp"
#include "rl/spec.hpp"

namespace fw::rl {

// (observation, teacher action) pairs, row-major.
struct ImitationDataset {
  int obs_dim = 0;
  std::vector<int> categories;  // options per action factor
  std::vector<double> obs;      // size() * obs_dim
  std::vector<int> labels;      // size() * categories.size(): the teacher's option per factor
  std::vector<int> episode;     // size(): the episode each sample came from
  size_t size() const { return episode.size(); }
  // REQUIRES: x.size() == obs_dim, label.size() == categories.size(), each label in range.
  void add(std::span<const double> x, std::span<const int> label, int episode_id);
  void append(const ImitationDataset& other);  // REQUIRES: same obs_dim and categories
};

struct ImitationConfig {
  std::vector<int> hidden = {64, 64};  // the PPO actor's layers (default_train_ppo_config())
  int epochs = 40;
  int batch = 256;
  double lr = 1e-3;  // Adam, annealed linearly to 0
  double max_grad_norm = 1.0;
  int holdout_every = 5;  // every 5th episode held out; 0: none
  uint64_t seed = 1;      // weights (stream imitation.init) and shuffling (imitation.shuffle)
};

// Per epoch: mean training loss; held-out loss, per-factor accuracy and all-factor accuracy
// (argmax == label; NaN without a held-out split).
struct ImitationEpoch {
  int epoch = 0;
  double train_loss = 0, holdout_loss = 0, holdout_exact = 0;
  std::vector<double> holdout_accuracy;
};
struct ImitationReport {
  std::vector<ImitationEpoch> epochs;
  size_t train_samples = 0, holdout_samples = 0;
  nlohmann::json to_json() const;  // the last epoch's figures and the sample counts
};

// Fits a policy with `obs` / `action` specs (categorical; categories as the dataset's) to the
// dataset. epochs == 0 returns the untrained (initialised) actor. InvalidArgument when the
// specs and the dataset disagree or the training split is empty.
Result<Policy> fit_imitation(const ImitationDataset& data, const ObsSpec& obs,
                             const ActionSpec& action, const ImitationConfig& config,
                             nlohmann::json metadata, ImitationReport* report = nullptr);

// Share of samples where the policy's deterministic action equals the label, per factor and
// (last entry) all factors at once. REQUIRES: policy and data agree in sizes.
std::vector<double> imitation_agreement(Policy& policy, const ImitationDataset& data);

}  // namespace fw::rl
