#include "rl/running_stats.hpp"

#include <string>
#include <vector>

namespace fw::rl {

Eigen::VectorXd RunningMeanStd::var() const {
  Eigen::VectorXd v(dim());
  for (int i = 0; i < dim(); ++i) v[i] = var(i);
  return v;
}

void RunningMeanStd::update(const double* x) {
  count_ += 1.0;
  for (int i = 0; i < dim(); ++i) {
    const double d = x[i] - mean_[i];
    mean_[i] += d / count_;
    m2_[i] += d * (x[i] - mean_[i]);
  }
}

nlohmann::json RunningMeanStd::to_json() const {
  const Eigen::VectorXd v = var();
  return {{"count", count_},
          {"mean", std::vector<double>(mean_.data(), mean_.data() + mean_.size())},
          {"var", std::vector<double>(v.data(), v.data() + v.size())},
          {"m2", std::vector<double>(m2_.data(), m2_.data() + m2_.size())}};
}

Result<RunningMeanStd> RunningMeanStd::from_json(const nlohmann::json& j) {
  try {
    const auto mean = j.at("mean").get<std::vector<double>>();
    const auto var = j.at("var").get<std::vector<double>>();
    const double count = j.at("count").get<double>();
    if (mean.size() != var.size())
      return Status::InvalidArgument("normalizer: mean has " + std::to_string(mean.size()) +
                                     " entries, var " + std::to_string(var.size()));
    if (count < 0) return Status::InvalidArgument("normalizer.count: negative");
    RunningMeanStd r(static_cast<int>(mean.size()));
    r.count_ = count;
    for (size_t i = 0; i < mean.size(); ++i) {
      if (var[i] < 0) return Status::InvalidArgument("normalizer.var: negative");
      r.mean_[i] = mean[i];
      r.m2_[i] = count > 0 ? var[i] * count : 0.0;
    }
    if (j.contains("m2")) {  // exact state; "var" alone is enough for hand-written files
      const auto m2 = j.at("m2").get<std::vector<double>>();
      if (m2.size() != mean.size()) return Status::InvalidArgument("normalizer.m2: wrong size");
      for (size_t i = 0; i < m2.size(); ++i) r.m2_[i] = m2[i];
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("normalizer: ") + e.what());
  }
}

}  // namespace fw::rl
