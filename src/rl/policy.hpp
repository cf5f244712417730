#pragma once
// Policy: a trained actor ready to deploy — observation normaliser (frozen statistics),
// actor network and head, observation and action specs, free-form metadata — and its
// JSON file format (docs/rl.md, "Policy file").
//
// act() is the deployed path: deterministic (Gaussian mean, categorical argmax), and it
// allocates nothing (buffers are made once, at construction). A Policy is not thread-safe
// (act() writes its buffers); copy it per thread.

#include <Eigen/Dense>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "core/rng.hpp"
#include "core/status.hpp"
#include "rl/action_head.hpp"
#include "rl/mlp.hpp"
#include "rl/obs_normalizer.hpp"
#include "rl/spec.hpp"

namespace fw::rl {

class Policy {
 public:
  // 2: meter-blind observation (trailing-window entries only, rl/plant_features.hpp).
  // 1: observation entries that reveal the scorer's window phase; refused with a message.
  static constexpr int kFormatVersion = 2;

  // theta: actor parameters followed by the head's extra parameters (actor.num_params() +
  // head extra values). flexwatt_version is recorded as given (fw::kVersion when trained).
  // REQUIRES: sizes consistent (from_json() checks them for files).
  Policy(ObsSpec obs, ActionSpec action, Mlp actor, Eigen::VectorXd theta, ObsNormalizer normalizer,
         nlohmann::json metadata, std::string flexwatt_version);

  const ObsSpec& obs_spec() const { return obs_; }
  const ActionSpec& action_spec() const { return action_; }
  const nlohmann::json& metadata() const { return metadata_; }
  const std::string& flexwatt_version() const { return flexwatt_version_; }
  const ObsNormalizer& normalizer() const { return normalizer_; }
  const Mlp& actor() const { return actor_; }
  const Eigen::VectorXd& theta() const { return theta_; }

  // Deterministic action for a raw observation. REQUIRES: obs.size() == obs_spec().dim(),
  // action.size() == action_spec().dim(). No allocation.
  void act(std::span<const double> obs, std::span<double> action);
  // Stochastic action (as in training); returns its log-prob. No allocation.
  double sample(std::span<const double> obs, Rng& rng, std::span<double> action);

  nlohmann::json to_json() const;
  // Validates every field; messages name the field ("actor.params: expected 4419 values").
  // A document that is not an object with "format": "flexwatt-policy" is refused before any
  // of its values can appear in a message.
  static Result<Policy> from_json(const nlohmann::json& j);
  Status save(const std::string& path) const;
  // Errors are prefixed with the path.
  static Result<Policy> load(const std::string& path);
  // A policy file's text, as read by the caller (the agent reads it confined to its
  // policy_dirs). Errors are prefixed with `name` and never quote the text: a file that is not
  // JSON is "not a flexwatt policy (JSON parse error at byte N)".
  static Result<Policy> parse(const std::string& text, const std::string& name);

 private:
  void forward(std::span<const double> obs);

  ObsSpec obs_;
  ActionSpec action_;
  Mlp actor_;
  ActionHead head_;
  Eigen::VectorXd theta_;
  ObsNormalizer normalizer_;
  nlohmann::json metadata_;
  std::string flexwatt_version_;
  // Inference buffers.
  Mlp::Workspace ws_;
  Eigen::VectorXd obs_buf_, out_buf_;
};

}  // namespace fw::rl
