#include "rl/imitation.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

#include "core/rng.hpp"
#include "core/version.hpp"
#include "rl/adam.hpp"
#include "rl/categorical_head.hpp"
#include "rl/mlp.hpp"
#include "rl/obs_normalizer.hpp"

namespace fw::rl {

void ImitationDataset::add(std::span<const double> x, std::span<const int> label, int episode_id) {
  assert(static_cast<int>(x.size()) == obs_dim && label.size() == categories.size());
  obs.insert(obs.end(), x.begin(), x.end());
  labels.insert(labels.end(), label.begin(), label.end());
  episode.push_back(episode_id);
}

void ImitationDataset::append(const ImitationDataset& o) {
  assert(o.obs_dim == obs_dim && o.categories == categories);
  obs.insert(obs.end(), o.obs.begin(), o.obs.end());
  labels.insert(labels.end(), o.labels.begin(), o.labels.end());
  episode.insert(episode.end(), o.episode.begin(), o.episode.end());
}

nlohmann::json ImitationReport::to_json() const {
  nlohmann::json j = {{"train_samples", train_samples}, {"holdout_samples", holdout_samples}};
  if (epochs.empty()) return j;
  const ImitationEpoch& e = epochs.back();
  const auto num = [](double v) {
    return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
  };
  j["epochs"] = e.epoch;
  j["train_loss"] = num(e.train_loss);
  j["holdout_loss"] = num(e.holdout_loss);
  j["holdout_exact"] = num(e.holdout_exact);
  nlohmann::json acc = nlohmann::json::array();
  for (double a : e.holdout_accuracy) acc.push_back(num(a));
  j["holdout_accuracy"] = acc;
  return j;
}

namespace {

// Columns of the normalised observations and the labels of the samples `idx[from, to)`.
void batch_of(const ImitationDataset& d, const ObsNormalizer& norm, const std::vector<size_t>& idx,
              size_t from, size_t to, Eigen::MatrixXd& x, Eigen::MatrixXd& a) {
  const int nf = static_cast<int>(d.categories.size());
  const Eigen::Index b = static_cast<Eigen::Index>(to - from);
  x.resize(d.obs_dim, b);
  a.resize(nf, b);
  for (Eigen::Index c = 0; c < b; ++c) {
    const size_t i = idx[from + static_cast<size_t>(c)];
    norm.normalize(&d.obs[i * d.obs_dim], x.col(c).data());
    for (int f = 0; f < nf; ++f) a(f, c) = d.labels[i * nf + f];
  }
}

// Mean loss, per-factor accuracy and exact-match share over `idx` (argmax == label).
void evaluate(const ImitationDataset& d, const ObsNormalizer& norm, const Mlp& mlp,
              const CategoricalHead& head, const Eigen::VectorXd& theta,
              const std::vector<size_t>& idx, double& loss, std::vector<double>& acc,
              double& exact) {
  const int nf = static_cast<int>(d.categories.size());
  acc.assign(nf, 0.0);
  loss = 0;
  exact = 0;
  if (idx.empty()) {
    loss = exact = NAN;
    acc.assign(nf, NAN);
    return;
  }
  Mlp::Cache cache;
  Eigen::MatrixXd x, a;
  Eigen::VectorXd logp;
  std::vector<double> mode(nf);
  const size_t chunk = 1024;
  for (size_t from = 0; from < idx.size(); from += chunk) {
    const size_t to = std::min(idx.size(), from + chunk);
    batch_of(d, norm, idx, from, to, x, a);
    mlp.forward(theta.data(), x, cache);
    const Eigen::MatrixXd& out = cache.act.back();
    head.log_prob(out, a, logp);
    loss -= logp.sum();
    for (Eigen::Index c = 0; c < out.cols(); ++c) {
      head.mode(out.col(c).data(), mode.data());
      bool all = true;
      for (int f = 0; f < nf; ++f) {
        const bool ok = static_cast<int>(mode[f]) == static_cast<int>(a(f, c));
        acc[f] += ok ? 1 : 0;
        all &= ok;
      }
      exact += all ? 1 : 0;
    }
  }
  const double n = static_cast<double>(idx.size());
  loss /= n;
  exact /= n;
  for (double& v : acc) v /= n;
}

}  // namespace

Result<Policy> fit_imitation(const ImitationDataset& data, const ObsSpec& obs,
                             const ActionSpec& action, const ImitationConfig& cfg,
                             nlohmann::json metadata, ImitationReport* report) {
  if (action.kind != ActionSpec::Kind::kCategorical || action.categories != data.categories) {
    return Status::InvalidArgument(
        "imitation: the action spec must be categorical with the dataset's categories");
  }
  if (obs.dim() != data.obs_dim) {
    return Status::InvalidArgument("imitation: observation spec has " + std::to_string(obs.dim()) +
                                   " entries, the dataset " + std::to_string(data.obs_dim));
  }
  const int nf = static_cast<int>(data.categories.size());
  if (data.obs.size() != data.size() * data.obs_dim || data.labels.size() != data.size() * nf) {
    return Status::InvalidArgument("imitation: dataset sizes disagree");
  }
  for (size_t i = 0; i < data.size(); ++i) {
    for (int f = 0; f < nf; ++f) {
      const int l = data.labels[i * nf + f];
      if (l < 0 || l >= data.categories[f]) {
        return Status::InvalidArgument("imitation: sample " + std::to_string(i) + " factor " +
                                       std::to_string(f) + " label " + std::to_string(l) +
                                       " outside 0.." + std::to_string(data.categories[f] - 1));
      }
    }
  }
  if (cfg.epochs < 0 || cfg.batch < 1 || !(cfg.lr > 0) || cfg.holdout_every < 0) {
    return Status::InvalidArgument("imitation: epochs >= 0, batch >= 1, lr > 0 required");
  }
  std::vector<size_t> train, hold;
  for (size_t i = 0; i < data.size(); ++i) {
    const bool held =
        cfg.holdout_every > 1 && data.episode[i] % cfg.holdout_every == cfg.holdout_every - 1;
    (held ? hold : train).push_back(i);
  }
  if (train.empty()) return Status::InvalidArgument("imitation: the training split is empty");

  ObsNormalizer norm(data.obs_dim);
  for (size_t i : train) norm.observe(&data.obs[i * data.obs_dim]);

  std::vector<int> sizes = {data.obs_dim};
  sizes.insert(sizes.end(), cfg.hidden.begin(), cfg.hidden.end());
  const CategoricalHead head(data.categories);
  sizes.push_back(head.num_logits());
  const Mlp mlp(sizes);
  Eigen::VectorXd theta(mlp.num_params());
  {
    Rng init = Rng::stream(cfg.seed, "imitation.init");
    mlp.init_orthogonal(theta.data(), init, std::sqrt(2.0), 0.01);  // as PPO's actor
  }
  Adam adam(mlp.num_params(), AdamConfig{cfg.lr, 0.9, 0.999, 1e-5});
  Rng shuffle = Rng::stream(cfg.seed, "imitation.shuffle");
  Mlp::Cache cache;
  Eigen::MatrixXd x, a, d_logits;
  Eigen::VectorXd logp, grad(mlp.num_params()), d_logp, d_ent;
  if (report) {
    report->epochs.clear();
    report->train_samples = train.size();
    report->holdout_samples = hold.size();
  }
  const size_t batch = static_cast<size_t>(cfg.batch);
  for (int ep = 0; ep < cfg.epochs; ++ep) {
    adam.set_lr(cfg.lr * (1.0 - static_cast<double>(ep) / cfg.epochs));
    for (size_t i = train.size(); i > 1; --i) std::swap(train[i - 1], train[shuffle.below(i)]);
    double sum = 0;
    for (size_t from = 0; from < train.size(); from += batch) {
      const size_t to = std::min(train.size(), from + batch);
      batch_of(data, norm, train, from, to, x, a);
      mlp.forward(theta.data(), x, cache);
      const Eigen::MatrixXd& out = cache.act.back();
      head.log_prob(out, a, logp);
      sum -= logp.sum();
      const double n = static_cast<double>(to - from);
      d_logp.setConstant(out.cols(), -1.0 / n);  // d(mean −log p)/d log p
      d_ent.setZero(out.cols());
      head.backward(out, a, d_logp, d_ent, d_logits);
      grad.setZero();
      mlp.backward(theta.data(), cache, d_logits, grad.data());
      clip_grad_norm(grad, cfg.max_grad_norm);
      adam.step(theta, grad);
    }
    if (report) {
      ImitationEpoch e;
      e.epoch = ep + 1;
      e.train_loss = sum / static_cast<double>(train.size());
      evaluate(data, norm, mlp, head, theta, hold, e.holdout_loss, e.holdout_accuracy,
               e.holdout_exact);
      report->epochs.push_back(std::move(e));
    }
  }
  return Policy(obs, action, mlp, theta, norm, std::move(metadata), kVersion);
}

std::vector<double> imitation_agreement(Policy& policy, const ImitationDataset& data) {
  const size_t nf = data.categories.size();
  std::vector<double> acc(nf + 1, 0.0), act(nf);
  for (size_t i = 0; i < data.size(); ++i) {
    policy.act(std::span<const double>(&data.obs[i * data.obs_dim], data.obs_dim), act);
    bool all = true;
    for (size_t f = 0; f < nf; ++f) {
      const bool ok = static_cast<int>(act[f]) == data.labels[i * nf + f];
      acc[f] += ok ? 1 : 0;
      all &= ok;
    }
    acc[nf] += all ? 1 : 0;
  }
  for (double& v : acc) v /= std::max<size_t>(1, data.size());
  return acc;
}

}  // namespace fw::rl
