#pragma once
// Run-time PFI prediction from an uncapped trace (docs/sources.md §1b: telemetry predicts
// PFI; the paper's best single feature, a DRAM-copy activity product, gives leave-one-out
// R² ≈ 0.52 on real H200 runs). Features of the trace's GPU readings, a ridge regression on
// standardized features, trained on a simulated population (population.hpp's workload space).
// A simulator-only R² is weak evidence: the simulator's PFI and its utilisation counters come
// from the same model.

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "vocab/snapshot.hpp"

namespace fw::studies {

inline constexpr int kPfiFeatures = 6;
// Names, in order: sm_util, mem_util, mem_x_sm (memory activity × SM activity), power_frac_tdp
// (mean power / TDP), power_cv (sd/mean of power: phase structure), low_share (share of samples
// below 0.6 × the median power: low phases).
const std::array<const char*, kPfiFeatures>& pfi_feature_names();
using PfiFeatures = std::array<double, kPfiFeatures>;

// Accumulates GPU readings of an uncapped run (any GPUs, any order).
class TraceFeatureAccumulator {
 public:
  void add(const GpuReading& r);
  // Errors: no reading with power, sm_util and mem_util.
  Result<PfiFeatures> features(double tdp_w) const;

 private:
  std::vector<double> power_w_;
  double sm_ = 0, mem_ = 0, mem_x_sm_ = 0;
  int64_t n_util_ = 0;
};

// Features of a trace (flexwatt trace directory or gpus.csv with sm_util and mem_util).
Result<PfiFeatures> trace_features(const std::string& path, double tdp_w);

struct PfiModel {
  std::string gpu;
  PfiFeatures mean{}, sd{}, coef{};  // standardized-feature ridge coefficients
  double intercept = 0, lambda = 1.0;
  double predict(const PfiFeatures& x) const;
};
nlohmann::json pfi_model_json(const PfiModel& m);
Result<PfiModel> pfi_model_from_json(const nlohmann::json& j, const std::string& where);

struct PfiSample {
  PfiFeatures x{};
  double pfi = 0;
  std::string cls;
};
// A simulated population: job shapes drawn as in the population study, each run uncapped for
// trace_s (one GPU; a duty cycle in half of them) for the features; the target is the PFI of its
// steady-state sweep.
Result<std::vector<PfiSample>> simulate_pfi_samples(int jobs, const std::string& gpu, uint64_t seed,
                                                    double trace_s = 120);

PfiModel fit_pfi_model(const std::vector<PfiSample>& s, const std::string& gpu, double lambda,
                       uint64_t feature_mask = ~0ull);
// Leave-one-out R² of the ridge model using the features in feature_mask (bit k: feature k).
double loo_r2(const std::vector<PfiSample>& s, double lambda, uint64_t feature_mask = ~0ull);

struct PfiTrainReport {
  PfiModel model;
  int samples = 0;
  double loo_r2_all = 0, in_sample_r2 = 0;
  PfiFeatures loo_r2_single{};  // each feature alone
  double pfi_mean = 0, pfi_sd = 0;
};
Result<PfiTrainReport> train_pfi(int jobs, const std::string& gpu, uint64_t seed, double lambda);
nlohmann::json pfi_train_json(const PfiTrainReport& r);
std::string pfi_train_table(const PfiTrainReport& r);

}  // namespace fw::studies
