#include "rl/ppo_trainer.hpp"

#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "core/version.hpp"

namespace fw::rl {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> to_vec(const Eigen::VectorXd& v) {
  return std::vector<double>(v.data(), v.data() + v.size());
}
}  // namespace

Result<std::unique_ptr<PpoTrainer>> PpoTrainer::create(std::vector<std::unique_ptr<Env>> envs,
                                                       const PpoConfig& c) {
  if (envs.empty()) return Status::InvalidArgument("ppo: no environments");
  const ObsSpec& obs = envs[0]->obs_spec();
  const ActionSpec& act = envs[0]->action_spec();
  if (obs.dim() <= 0) return Status::InvalidArgument("ppo: observation size is 0");
  FW_RETURN_IF_ERROR(act.validate());
  for (const auto& e : envs) {
    if (e->obs_spec().names != obs.names)
      return Status::InvalidArgument("ppo: environments disagree on the observation spec");
    if (to_json(e->action_spec()) != to_json(act))
      return Status::InvalidArgument("ppo: environments disagree on the action spec");
  }
  const long batch = static_cast<long>(c.num_steps) * static_cast<long>(envs.size());
  if (c.num_steps <= 0 || c.num_minibatches <= 0 || c.update_epochs <= 0)
    return Status::InvalidArgument("ppo: num_steps, num_minibatches, update_epochs must be > 0");
  if (batch % c.num_minibatches != 0 || batch / c.num_minibatches < 2)
    return Status::InvalidArgument("ppo: num_minibatches (" + std::to_string(c.num_minibatches) +
                                   ") must divide num_steps * num_envs (" + std::to_string(batch) +
                                   ") into minibatches of >= 2");
  for (int h : c.hidden)
    if (h <= 0) return Status::InvalidArgument("ppo: hidden sizes must be > 0");
  if (!(c.gamma >= 0 && c.gamma <= 1) || !(c.gae_lambda >= 0 && c.gae_lambda <= 1))
    return Status::InvalidArgument("ppo: gamma and gae_lambda must be in [0, 1]");
  if (!(c.adam.lr > 0)) return Status::InvalidArgument("ppo: learning rate must be > 0");
  return std::unique_ptr<PpoTrainer>(new PpoTrainer(std::move(envs), c));
}

PpoTrainer::PpoTrainer(std::vector<std::unique_ptr<Env>> envs, const PpoConfig& c)
    : config_(c),
      envs_(std::move(envs)),
      obs_spec_(envs_[0]->obs_spec()),
      action_spec_(envs_[0]->action_spec()),
      model_(obs_spec_.dim(), action_spec_, c.hidden),
      obs_norm_(obs_spec_.dim(), c.obs_clip),
      reward_scaler_(static_cast<int>(envs_.size()), c.gamma, c.reward_clip),
      buf_(c.num_steps, static_cast<int>(envs_.size()), obs_spec_.dim(), action_spec_.dim()) {
  Rng init_rng = Rng::stream(c.seed, "ppo.init");
  theta_ = model_.init(init_rng, c.init_log_std);
  grad_ = Eigen::VectorXd::Zero(theta_.size());
  adam_ = Adam(static_cast<int>(theta_.size()), c.adam);
  const int n_env = static_cast<int>(envs_.size());
  cur_obs_.resize(obs_spec_.dim(), n_env);
  ep_return_.assign(n_env, 0.0);
  ep_length_.assign(n_env, 0);
  episode_.assign(n_env, -1);
  actor_ws_ = model_.actor().make_workspace();
  critic_ws_ = model_.critic().make_workspace();
  raw_obs_.resize(obs_spec_.dim());
  out_buf_.resize(model_.actor().out_dim());
  action_buf_.resize(action_spec_.dim());
  perm_.resize(buf_.size());
}

void PpoTrainer::take_obs(const double* raw, double* normalized) {
  if (config_.norm_obs) {
    obs_norm_.observe(raw);
    obs_norm_.normalize(raw, normalized);
  } else {
    std::copy(raw, raw + obs_spec_.dim(), normalized);
  }
}

double PpoTrainer::value_of(const double* normalized) {
  double v = 0;
  model_.critic().forward_one(theta_.data() + model_.critic_offset(), normalized, critic_ws_, &v);
  return v;
}

Status PpoTrainer::reset_env(int e, long episode, bool observe) {
  const uint64_t slot = (static_cast<uint64_t>(e) << 40) ^ static_cast<uint64_t>(episode);
  const uint64_t seed = Rng::stream(config_.seed, "ppo.env").child(slot).next_u64();
  FW_RETURN_IF_ERROR(
      envs_[e]->reset(seed, {raw_obs_.data(), static_cast<size_t>(raw_obs_.size())}));
  if (observe) take_obs(raw_obs_.data(), cur_obs_.col(e).data());
  episode_[e] = episode;
  ep_return_[e] = 0;
  ep_length_[e] = 0;
  return Status::Ok();
}

Status PpoTrainer::collect() {
  Rng sample_rng = Rng::stream(config_.seed, "ppo.sample").child(iteration_);
  const int n_env = static_cast<int>(envs_.size());
  if (!started_) {
    for (int e = 0; e < n_env; ++e) {
      // Resuming at an episode boundary replays that episode's start (already observed).
      const bool at_boundary = episode_[e] >= 0 && ep_length_[e] == 0;
      FW_RETURN_IF_ERROR(at_boundary ? reset_env(e, episode_[e], false)
                                     : reset_env(e, episode_[e] + 1, true));
    }
    started_ = true;
  }
  done_return_sum_ = done_length_sum_ = 0;
  done_count_ = 0;
  const double* extra = theta_.data() + model_.extra_offset();
  const std::span<double> raw{raw_obs_.data(), static_cast<size_t>(raw_obs_.size())};
  for (int t = 0; t < config_.num_steps; ++t) {
    for (int e = 0; e < n_env; ++e) {
      const int i = buf_.index(t, e);
      buf_.obs.col(i) = cur_obs_.col(e);
      model_.actor().forward_one(theta_.data(), cur_obs_.col(e).data(), actor_ws_, out_buf_.data());
      buf_.logp[i] = model_.head().sample(out_buf_.data(), extra, sample_rng, action_buf_.data());
      buf_.actions.col(i) = action_buf_;
      buf_.values[i] = value_of(cur_obs_.col(e).data());

      FW_ASSIGN_OR_RETURN(
          const StepResult step,
          envs_[e]->step({action_buf_.data(), static_cast<size_t>(action_buf_.size())}, raw));
      ++total_steps_;
      ep_return_[e] += step.reward;
      ++ep_length_[e];
      double reward =
          config_.norm_reward ? reward_scaler_.scale(e, step.reward, step.done()) : step.reward;
      take_obs(raw_obs_.data(), cur_obs_.col(e).data());
      if (step.truncated && !step.terminated && config_.bootstrap_truncated)
        reward += config_.gamma * value_of(cur_obs_.col(e).data());
      buf_.rewards[i] = reward;
      buf_.dones[i] = step.done() ? 1.0 : 0.0;
      if (step.done()) {
        done_return_sum_ += ep_return_[e];
        done_length_sum_ += ep_length_[e];
        ++done_count_;
        FW_RETURN_IF_ERROR(reset_env(e, episode_[e] + 1, true));
      }
    }
  }
  Eigen::VectorXd last_values(n_env);
  for (int e = 0; e < n_env; ++e) last_values[e] = value_of(cur_obs_.col(e).data());
  buf_.compute_gae(last_values, config_.gamma, config_.gae_lambda);
  return Status::Ok();
}

IterationStats PpoTrainer::update() {
  IterationStats s;
  s.iteration = iteration_;
  Rng shuffle_rng = Rng::stream(config_.seed, "ppo.shuffle").child(iteration_);
  double lr = config_.adam.lr;
  if (config_.anneal_iterations > 0)
    lr *= std::max(0.0, 1.0 - static_cast<double>(iteration_) / config_.anneal_iterations);
  adam_.set_lr(lr);
  s.lr = lr;

  const int n = buf_.size();
  const int mb = n / config_.num_minibatches;
  std::iota(perm_.begin(), perm_.end(), 0);
  for (int epoch = 0; epoch < config_.update_epochs; ++epoch) {
    for (int k = n - 1; k > 0; --k) std::swap(perm_[k], perm_[shuffle_rng.below(k + 1)]);
    PpoLossTerms sum;
    double grad_norm_sum = 0;
    for (int start = 0; start < n; start += mb) {
      batch_.obs.resize(buf_.obs.rows(), mb);
      batch_.actions.resize(buf_.actions.rows(), mb);
      batch_.logp_old.resize(mb);
      batch_.advantages.resize(mb);
      batch_.returns.resize(mb);
      batch_.values_old.resize(mb);
      for (int j = 0; j < mb; ++j) {
        const int i = perm_[start + j];
        batch_.obs.col(j) = buf_.obs.col(i);
        batch_.actions.col(j) = buf_.actions.col(i);
        batch_.logp_old[j] = buf_.logp[i];
        batch_.advantages[j] = buf_.advantages[i];
        batch_.returns[j] = buf_.returns[i];
        batch_.values_old[j] = buf_.values[i];
      }
      const PpoLossTerms t = model_.loss_and_grad(theta_, batch_, config_.loss, grad_, scratch_);
      grad_norm_sum += clip_grad_norm(grad_, config_.max_grad_norm);
      adam_.step(theta_, grad_);
      sum.pg_loss += t.pg_loss;
      sum.v_loss += t.v_loss;
      sum.entropy += t.entropy;
      sum.approx_kl += t.approx_kl;
      sum.clip_frac += t.clip_frac;
    }
    const double k = config_.num_minibatches;
    s.pg_loss = sum.pg_loss / k;
    s.v_loss = sum.v_loss / k;
    s.entropy = sum.entropy / k;
    s.approx_kl = sum.approx_kl / k;
    s.clip_frac = sum.clip_frac / k;
    s.grad_norm = grad_norm_sum / k;
    s.epochs = epoch + 1;
    if (config_.target_kl > 0 && s.approx_kl > config_.target_kl) break;
  }
  const double var_ret = (buf_.returns.array() - buf_.returns.mean()).square().mean();
  const Eigen::VectorXd resid = buf_.returns - buf_.values;
  const double var_res = (resid.array() - resid.mean()).square().mean();
  s.explained_variance = var_ret > 0 ? 1.0 - var_res / var_ret : kNaN;
  s.episodes = done_count_;
  s.mean_return = done_count_ > 0 ? done_return_sum_ / done_count_ : kNaN;
  s.mean_length = done_count_ > 0 ? done_length_sum_ / done_count_ : kNaN;
  ++iteration_;
  s.total_steps = total_steps_;
  return s;
}

Result<IterationStats> PpoTrainer::iterate() {
  FW_RETURN_IF_ERROR(collect());
  return update();
}

Policy PpoTrainer::policy(nlohmann::json metadata) const {
  if (!metadata.is_object()) metadata = nlohmann::json::object();
  metadata["training_seed"] = config_.seed;
  metadata["iterations"] = iteration_;
  metadata["total_steps"] = total_steps_;
  const int n_actor = model_.actor().num_params() + model_.head().num_extra_params();
  // Without observation normalisation the policy carries an identity normaliser.
  ObsNormalizer norm = config_.norm_obs ? obs_norm_ : ObsNormalizer(obs_spec_.dim(), 1e300, 0.0);
  return Policy(obs_spec_, action_spec_, model_.actor(), theta_.head(n_actor), std::move(norm),
                std::move(metadata), kVersion);
}

nlohmann::json PpoTrainer::checkpoint() const {
  return {
      {"format", "flexwatt-ppo-checkpoint"},
      {"flexwatt_version", kVersion},
      {"seed", config_.seed},
      {"iteration", iteration_},
      {"total_steps", total_steps_},
      {"theta", to_vec(theta_)},
      {"adam", adam_.to_json()},
      {"obs_normalizer", obs_norm_.to_json()},
      {"reward_scaler", reward_scaler_.to_json()},
      {"episode", episode_},
      {"episode_length", ep_length_},
      {"current_obs", to_vec(Eigen::Map<const Eigen::VectorXd>(cur_obs_.data(), cur_obs_.size()))}};
}

Status PpoTrainer::restore(const nlohmann::json& j) {
  try {
    if (j.value("format", "") != "flexwatt-ppo-checkpoint")
      return Status::InvalidArgument("checkpoint: format: not a flexwatt PPO checkpoint");
    const auto theta = j.at("theta").get<std::vector<double>>();
    if (static_cast<long>(theta.size()) != theta_.size())
      return Status::InvalidArgument("checkpoint: theta: expected " +
                                     std::to_string(theta_.size()) + " values, got " +
                                     std::to_string(theta.size()));
    FW_ASSIGN_OR_RETURN(Adam adam, Adam::from_json(j.at("adam")));
    FW_ASSIGN_OR_RETURN(ObsNormalizer norm, ObsNormalizer::from_json(j.at("obs_normalizer")));
    FW_ASSIGN_OR_RETURN(RewardScaler scaler, RewardScaler::from_json(j.at("reward_scaler")));
    if (norm.dim() != obs_spec_.dim())
      return Status::InvalidArgument("checkpoint: obs_normalizer: wrong size");
    theta_ = Eigen::Map<const Eigen::VectorXd>(theta.data(), theta.size());
    adam_ = std::move(adam);
    obs_norm_ = std::move(norm);
    reward_scaler_ = std::move(scaler);
    const auto episode = j.at("episode").get<std::vector<long>>();
    const auto length = j.at("episode_length").get<std::vector<int>>();
    if (episode.size() != envs_.size() || length.size() != envs_.size())
      return Status::InvalidArgument("checkpoint: episode: expected " +
                                     std::to_string(envs_.size()) + " environments");
    const auto cur = j.at("current_obs").get<std::vector<double>>();
    if (static_cast<long>(cur.size()) != cur_obs_.size())
      return Status::InvalidArgument("checkpoint: current_obs: wrong size");
    episode_ = episode;
    ep_length_ = length;
    cur_obs_ = Eigen::Map<const Eigen::MatrixXd>(cur.data(), cur_obs_.rows(), cur_obs_.cols());
    iteration_ = j.at("iteration").get<int>();
    total_steps_ = j.at("total_steps").get<long>();
    started_ = false;
    return Status::Ok();
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("checkpoint: ") + e.what());
  }
}

}  // namespace fw::rl
