#include "rl/policy.hpp"

#include <cassert>
#include <cmath>
#include <sstream>

#include "core/text_file.hpp"

namespace fw::rl {

Policy::Policy(ObsSpec obs, ActionSpec action, Mlp actor, Eigen::VectorXd theta,
               ObsNormalizer normalizer, nlohmann::json metadata, std::string flexwatt_version)
    : obs_(std::move(obs)),
      action_(std::move(action)),
      actor_(std::move(actor)),
      head_(action_),
      theta_(std::move(theta)),
      normalizer_(std::move(normalizer)),
      metadata_(std::move(metadata)),
      flexwatt_version_(std::move(flexwatt_version)) {
  assert(actor_.in_dim() == obs_.dim() && normalizer_.dim() == obs_.dim());
  assert(actor_.out_dim() == head_.net_out_dim());
  assert(theta_.size() == actor_.num_params() + head_.num_extra_params());
  ws_ = actor_.make_workspace();
  obs_buf_.resize(obs_.dim());
  out_buf_.resize(actor_.out_dim());
}

void Policy::forward(std::span<const double> obs) {
  assert(static_cast<int>(obs.size()) == obs_.dim());
  normalizer_.normalize(obs.data(), obs_buf_.data());
  actor_.forward_one(theta_.data(), obs_buf_.data(), ws_, out_buf_.data());
}

void Policy::act(std::span<const double> obs, std::span<double> action) {
  assert(static_cast<int>(action.size()) == action_.dim());
  forward(obs);
  head_.mode(out_buf_.data(), action.data());
}

double Policy::sample(std::span<const double> obs, Rng& rng, std::span<double> action) {
  assert(static_cast<int>(action.size()) == action_.dim());
  forward(obs);
  return head_.sample(out_buf_.data(), theta_.data() + actor_.num_params(), rng, action.data());
}

nlohmann::json Policy::to_json() const {
  nlohmann::json obs = rl::to_json(obs_);
  obs["normalizer"] = normalizer_.to_json();
  const int n_actor = actor_.num_params();
  nlohmann::json j = {{"format", "flexwatt-policy"},
                      {"format_version", kFormatVersion},
                      {"flexwatt_version", flexwatt_version_},
                      {"metadata", metadata_},
                      {"observation", obs},
                      {"action", rl::to_json(action_)},
                      {"actor",
                       {{"layers", actor_.layer_sizes()},
                        {"activation", "tanh"},
                        {"params", std::vector<double>(theta_.data(), theta_.data() + n_actor)}}}};
  if (head_.num_extra_params() > 0)
    j["log_std"] = std::vector<double>(theta_.data() + n_actor, theta_.data() + theta_.size());
  return j;
}

namespace {
Status bad(const std::string& field, const std::string& what) {
  return Status::InvalidArgument(field + ": " + what);
}
// An integer JSON value in [lo, hi] (a float or an out-of-range number is refused: converting
// it to int would be undefined behaviour).
Result<int> int_in(const nlohmann::json& v, const std::string& field, int64_t lo, int64_t hi) {
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
    return bad(field, "expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return static_cast<int>(v.get<int64_t>());
}
constexpr int64_t kMaxLayerWidth = 65536;
}  // namespace

Result<Policy> Policy::from_json(const nlohmann::json& j) {
  try {
    if (!j.is_object() || j.value("format", "") != "flexwatt-policy")
      return bad("format", "not a flexwatt policy (expected \"flexwatt-policy\")");
    FW_ASSIGN_OR_RETURN(const int version,
                        int_in(j.at("format_version"), "format_version", 0, 1000000));
    if (version == 1)
      return bad("format_version",
                 "1: this policy observes the phase of the meter's windows (window_elapsed, "
                 "window_mean_rel, window_allowance_rel), which a real meter does not reveal; "
                 "retrain it with this build (format 2, trailing-window inputs; policies/README.md "
                 "has the recipes)");
    if (version != kFormatVersion)
      return bad("format_version", std::to_string(version) + " is not supported (expected " +
                                       std::to_string(kFormatVersion) + ")");
    FW_ASSIGN_OR_RETURN(ObsSpec obs, obs_spec_from_json(j.at("observation")));
    FW_ASSIGN_OR_RETURN(ActionSpec action, action_spec_from_json(j.at("action")));
    FW_ASSIGN_OR_RETURN(ObsNormalizer norm,
                        ObsNormalizer::from_json(j.at("observation").at("normalizer")));
    if (norm.dim() != obs.dim())
      return bad("observation.normalizer", "has " + std::to_string(norm.dim()) +
                                               " entries, observation has " +
                                               std::to_string(obs.dim()));
    const auto& a = j.at("actor");
    if (a.value("activation", "tanh") != "tanh")
      return bad("actor.activation", "only tanh is supported");
    const auto& jl = a.at("layers");
    if (!jl.is_array() || jl.size() < 2) return bad("actor.layers", "needs at least 2 entries");
    std::vector<int> layers;
    for (const auto& n : jl) {
      FW_ASSIGN_OR_RETURN(const int size, int_in(n, "actor.layers", 1, kMaxLayerWidth));
      layers.push_back(size);
    }
    const ActionHead head(action);
    if (layers.front() != obs.dim())
      return bad("actor.layers", "input size " + std::to_string(layers.front()) +
                                     " != observation size " + std::to_string(obs.dim()));
    if (layers.back() != head.net_out_dim())
      return bad("actor.layers", "output size " + std::to_string(layers.back()) +
                                     " != " + std::to_string(head.net_out_dim()) +
                                     " required by the action spec");
    // The parameter count before building the network (its size comes from the file).
    int64_t want = 0;
    for (size_t i = 0; i + 1 < layers.size(); ++i) {
      want += static_cast<int64_t>(layers[i + 1]) * (static_cast<int64_t>(layers[i]) + 1);
    }
    const auto& jp = a.at("params");
    const int64_t got = jp.is_array() ? static_cast<int64_t>(jp.size()) : -1;
    if (got != want)
      return bad("actor.params",
                 "expected " + std::to_string(want) + " values, got " + std::to_string(got));
    Mlp actor(layers);
    const auto params = jp.get<std::vector<double>>();
    std::vector<double> log_std;
    if (head.num_extra_params() > 0) {
      log_std = j.at("log_std").get<std::vector<double>>();
      if (static_cast<int>(log_std.size()) != head.num_extra_params())
        return bad("log_std", "expected " + std::to_string(head.num_extra_params()) + " values");
    }
    Eigen::VectorXd theta(params.size() + log_std.size());
    for (size_t i = 0; i < params.size(); ++i) theta[i] = params[i];
    for (size_t i = 0; i < log_std.size(); ++i) theta[params.size() + i] = log_std[i];
    if (!theta.allFinite()) return bad("actor.params", "not all finite");
    return Policy(std::move(obs), std::move(action), std::move(actor), std::move(theta),
                  std::move(norm), j.value("metadata", nlohmann::json::object()),
                  j.value("flexwatt_version", ""));
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(e.what());
  }
}

Status Policy::save(const std::string& path) const {
  return write_text_file(path, to_json().dump(1) + "\n");  // never a torn policy file
}

Result<Policy> Policy::load(const std::string& path) {
  FW_ASSIGN_OR_RETURN(const std::string text, read_text_file(path));
  return parse(text, path);
}

Result<Policy> Policy::parse(const std::string& text, const std::string& name) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // Not e.what(): it quotes the bytes last read, which would read out any file named as a
    // policy (the agent answers PUT /v1/controller with this message).
    return Status::InvalidArgument(name + ": not a flexwatt policy (JSON parse error at byte " +
                                   std::to_string(e.byte) + ")");
  }
  Result<Policy> p = from_json(j);
  if (!p.ok()) return p.status().with_context(name);
  return p;
}

}  // namespace fw::rl
