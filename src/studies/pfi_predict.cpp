#include "studies/pfi_predict.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "sim/cluster.hpp"
#include "sim/gpu_model.hpp"
#include "studies/population.hpp"
#include "telemetry/trace_reader.hpp"

namespace fw::studies {

const std::array<const char*, kPfiFeatures>& pfi_feature_names() {
  static const std::array<const char*, kPfiFeatures> n{"sm_util",        "mem_util", "mem_x_sm",
                                                       "power_frac_tdp", "power_cv", "low_share"};
  return n;
}

void TraceFeatureAccumulator::add(const GpuReading& r) {
  if (std::isfinite(r.power_w)) power_w_.push_back(r.power_w);
  if (std::isfinite(r.sm_util) && std::isfinite(r.mem_util)) {
    sm_ += r.sm_util;
    mem_ += r.mem_util;
    mem_x_sm_ += r.sm_util * r.mem_util;
    ++n_util_;
  }
}

Result<PfiFeatures> TraceFeatureAccumulator::features(double tdp_w) const {
  if (power_w_.empty() || n_util_ == 0) {
    return Status::InvalidArgument("PFI features need power_w, sm_util and mem_util readings");
  }
  const double n = static_cast<double>(power_w_.size());
  double mean = 0, sq = 0;
  for (double p : power_w_) mean += p;
  mean /= n;
  for (double p : power_w_) sq += (p - mean) * (p - mean);
  std::vector<double> sorted = power_w_;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  const double median = sorted[sorted.size() / 2];
  double low = 0;
  for (double p : power_w_) low += p < 0.6 * median ? 1 : 0;
  const double nu = static_cast<double>(n_util_);
  return PfiFeatures{
      sm_ / nu, mem_ / nu, mem_x_sm_ / nu, mean / tdp_w, std::sqrt(sq / n) / std::max(mean, 1e-9),
      low / n};
}

Result<PfiFeatures> trace_features(const std::string& path, double tdp_w) {
  auto reader = TraceReader::open(path);
  if (!reader.ok()) return reader.status();
  TraceFeatureAccumulator acc;
  TraceRow row;
  while ((*reader)->next(row)) acc.add(row.reading);
  if (!(*reader)->status().ok()) return (*reader)->status();
  auto f = acc.features(tdp_w);
  if (!f.ok()) return Status::InvalidArgument(path + ": " + f.status().message());
  return f;
}

double PfiModel::predict(const PfiFeatures& x) const {
  double y = intercept;
  for (int k = 0; k < kPfiFeatures; ++k) {
    if (sd[k] > 0) y += coef[k] * (x[k] - mean[k]) / sd[k];
  }
  return y;
}

nlohmann::json pfi_model_json(const PfiModel& m) {
  return {{"kind", "flexwatt-pfi-ridge"},
          {"gpu", m.gpu},
          {"features", pfi_feature_names()},
          {"mean", m.mean},
          {"sd", m.sd},
          {"coef", m.coef},
          {"intercept", m.intercept},
          {"lambda", m.lambda}};
}

Result<PfiModel> pfi_model_from_json(const nlohmann::json& j, const std::string& where) {
  try {
    if (j.at("kind") != "flexwatt-pfi-ridge") {
      return Status::InvalidArgument(where + ": kind: not a flexwatt-pfi-ridge model");
    }
    PfiModel m;
    m.gpu = j.at("gpu").get<std::string>();
    m.mean = j.at("mean").get<PfiFeatures>();
    m.sd = j.at("sd").get<PfiFeatures>();
    m.coef = j.at("coef").get<PfiFeatures>();
    m.intercept = j.at("intercept").get<double>();
    m.lambda = j.at("lambda").get<double>();
    return m;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(where + ": " + e.what());
  }
}

// Reason for length: one simulated run per job (scenario built by hand, features accumulated).
Result<std::vector<PfiSample>> simulate_pfi_samples(int jobs, const std::string& gpu_name,
                                                    uint64_t seed, double trace_s) {
  const sim::GpuPreset* gpu = sim::find_gpu_preset(gpu_name);
  if (!gpu) return Status::InvalidArgument("unknown gpu '" + gpu_name + "'");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<PfiSample> out;
  for (int i = 0; i < jobs; ++i) {
    auto shape = draw_shape(rng, gpu_name);
    if (!shape.ok()) return shape.status();
    sim::JobSpec j;
    j.name = "job";
    j.kind = sim::JobKind::kPretrain;
    j.gpus = {0};
    j.pretrain.model = sim::apply_mix(*sim::find_pretrain_model(shape->cls), shape->mix);
    j.pretrain.tokens_per_iter = 1;
    if (u(rng) < 0.5) {
      j.duty.every_s = 20 + 60 * u(rng);
      j.duty.length_s = 2 + 8 * u(rng);
    }
    sim::Cluster c(sim::SimParams{}, {{gpu, std::string(gpu->name), gpu->max_cap_w}}, {j},
                   seed + static_cast<uint64_t>(i));
    Snapshot snap;
    TraceFeatureAccumulator acc;
    for (double t = 0.5; t <= 10 + trace_s; t += 0.5) {
      FW_RETURN_IF_ERROR(c.read(t, snap));
      if (t > 10) acc.add(snap.gpus[0]);
    }
    auto f = acc.features(gpu->tdp_w);
    if (!f.ok()) return f.status();
    out.push_back({*f, shape->pfi, shape->cls});
  }
  return out;
}

PfiModel fit_pfi_model(const std::vector<PfiSample>& s, const std::string& gpu, double lambda,
                       uint64_t mask) {
  PfiModel m;
  m.gpu = gpu;
  m.lambda = lambda;
  const double n = static_cast<double>(s.size());
  for (const auto& x : s) m.intercept += x.pfi / n;
  std::vector<int> cols;
  for (int k = 0; k < kPfiFeatures; ++k) {
    double mean = 0, sq = 0;
    for (const auto& x : s) mean += x.x[k] / n;
    for (const auto& x : s) sq += (x.x[k] - mean) * (x.x[k] - mean);
    m.mean[k] = mean;
    m.sd[k] = std::sqrt(sq / n);
    if ((mask >> k & 1) && m.sd[k] > 0) cols.push_back(k);
  }
  const int p = static_cast<int>(cols.size());
  if (p == 0) return m;
  Eigen::MatrixXd X(s.size(), p);
  Eigen::VectorXd y(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    for (int c = 0; c < p; ++c) X(i, c) = (s[i].x[cols[c]] - m.mean[cols[c]]) / m.sd[cols[c]];
    y(i) = s[i].pfi - m.intercept;
  }
  Eigen::MatrixXd A = X.transpose() * X + lambda * Eigen::MatrixXd::Identity(p, p);
  Eigen::VectorXd w = A.ldlt().solve(X.transpose() * y);
  for (int c = 0; c < p; ++c) m.coef[cols[c]] = w(c);
  return m;
}

double loo_r2(const std::vector<PfiSample>& s, double lambda, uint64_t mask) {
  double mean = 0;
  for (const auto& x : s) mean += x.pfi / static_cast<double>(s.size());
  double ss_res = 0, ss_tot = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    std::vector<PfiSample> rest;
    rest.reserve(s.size() - 1);
    for (size_t k = 0; k < s.size(); ++k) {
      if (k != i) rest.push_back(s[k]);
    }
    const double e = fit_pfi_model(rest, "", lambda, mask).predict(s[i].x) - s[i].pfi;
    ss_res += e * e;
    ss_tot += (s[i].pfi - mean) * (s[i].pfi - mean);
  }
  return ss_tot > 0 ? 1 - ss_res / ss_tot : std::nan("");
}

Result<PfiTrainReport> train_pfi(int jobs, const std::string& gpu, uint64_t seed, double lambda) {
  if (jobs < 10) return Status::InvalidArgument("pfi train: need at least 10 jobs");
  auto s = simulate_pfi_samples(jobs, gpu, seed);
  if (!s.ok()) return s.status();
  PfiTrainReport r;
  r.samples = jobs;
  r.model = fit_pfi_model(*s, gpu, lambda);
  r.loo_r2_all = loo_r2(*s, lambda);
  for (int k = 0; k < kPfiFeatures; ++k) r.loo_r2_single[k] = loo_r2(*s, lambda, 1ull << k);
  double ss_res = 0, ss_tot = 0, mean = r.model.intercept;
  for (const auto& x : *s) {
    const double e = r.model.predict(x.x) - x.pfi;
    ss_res += e * e;
    ss_tot += (x.pfi - mean) * (x.pfi - mean);
  }
  r.in_sample_r2 = 1 - ss_res / ss_tot;
  r.pfi_mean = mean;
  r.pfi_sd = std::sqrt(ss_tot / jobs);
  return r;
}

nlohmann::json pfi_train_json(const PfiTrainReport& r) {
  nlohmann::json single = nlohmann::json::object();
  for (int k = 0; k < kPfiFeatures; ++k) single[pfi_feature_names()[k]] = r.loo_r2_single[k];
  return {{"simulated", true},
          {"samples", r.samples},
          {"pfi_mean", r.pfi_mean},
          {"pfi_sd", r.pfi_sd},
          {"loo_r2", r.loo_r2_all},
          {"in_sample_r2", r.in_sample_r2},
          {"loo_r2_single_feature", single},
          {"model", pfi_model_json(r.model)}};
}

std::string pfi_train_table(const PfiTrainReport& r) {
  std::string out;
  char b[200];
  std::snprintf(b, sizeof b,
                "%d simulated jobs (%s), PFI %.2f ± %.2f (sd)\nridge (lambda %.2g): "
                "leave-one-out R² %.3f, in-sample %.3f  (simulator-only: weak evidence)\n"
                "feature           coef (standardized)  LOO R² alone\n",
                r.samples, r.model.gpu.c_str(), r.pfi_mean, r.pfi_sd, r.model.lambda, r.loo_r2_all,
                r.in_sample_r2);
  out += b;
  for (int k = 0; k < kPfiFeatures; ++k) {
    std::snprintf(b, sizeof b, "%-16s  %+8.3f             %6.3f\n", pfi_feature_names()[k],
                  r.model.coef[k], r.loo_r2_single[k]);
    out += b;
  }
  return out;
}

}  // namespace fw::studies
