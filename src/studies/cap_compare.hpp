#pragma once
// `flexwatt caps`: the per-GPU cap comparison on one scenario (docs/caps.md). Every arm runs
// on the same evaluation seeds and is scored against the uncapped run of the same seed
// (eval/cap_episode.hpp): energy saved per token, throughput lost, EDP change, and the
// energy over the same wall time. Arms: uncapped; the uniform static sweep (one cap for every
// GPU, from the highest settable cap down to half of it) and its frontier; the per-GPU static
// sweep (cap_arms.hpp) and its frontier; Zeus (eta 0.5), and "zeus:held" (the cap Zeus chose on
// that seed held from t = 0: Zeus without its profiling); PID on caps tracking a share of the
// nameplate; capnet for each policy given; on a scenario with a pipeline job, `frontier`
// (frontier_controller.hpp) on the first pipeline job's offline profile, "envpipe-like" (the
// same at a planned slowdown of 0: slack only) and "capnet:online" (capnet_online_controller.hpp:
// an online search, no profile, family capnet). Each arm that is not on a
// frontier is compared with the uniform frontier at its own throughput loss: the upper concave
// envelope of the uniform points and the uncapped origin (two caps mixed over time reach any point
// between them), so the static reference is never weaker than a sweep point.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "sim/scenario.hpp"

namespace fw::studies {

struct CapCompareRequest {
  sim::Scenario scenario;
  int seeds = 5;
  uint64_t seed_base = 1;
  std::vector<std::string> policies;  // capnet policy files
  double sweep_step_frac = 0.025;     // uniform sweep stride, share of the max cap
  int threads = 2;
  bool quick = false;  // fewer sweep points (tests)
  // Called after each finished episode with (done, total), from the worker that ran it
  // (serialised; done may arrive out of order).
  std::function<void(size_t, size_t)> progress;
};

struct CapArmResult {
  std::string name, family;  // uncapped, uniform, per-gpu, frontier, envpipe, zeus, pid, capnet
  double energy_saved = 0, throughput_lost = 0, edp_change = 0, energy_saved_same_time = 0;
  double saved_sd = 0, lost_sd = 0;  // across seeds
  bool on_uniform_frontier = false, on_per_gpu_frontier = false;
  double uniform_frontier_at_loss = 0;  // the uniform frontier's energy saved at this loss
  double per_gpu_frontier_at_loss = 0;  // the per-GPU static frontier's
  // What the arm needs before or inside its run, beside its savings: the episodes that pick a
  // static point (a sweep on these same seeds: hindsight), the per-GPU static's uncapped
  // calibration span, Zeus's in-run profiling, capnet's training episodes; "-" for none.
  std::string cost = "-";
};

// The low-loss target (docs/caps.md "Targets"): throughput lost at most this.
inline constexpr double kTargetLossMax = 0.012;

struct CapCompareResult {
  std::string scenario;
  std::vector<uint64_t> seeds;
  std::vector<CapArmResult> arms;
  // The arm saving the most energy per token with a mean throughput lost ≤ kTargetLossMax
  // (index into arms; 0, uncapped, when none saves anything there).
  size_t best_low_loss = 0;
  nlohmann::json to_json() const;
  std::string table() const;
  std::string svg() const;
};

Result<CapCompareResult> run_cap_compare(const CapCompareRequest& req);

// The frontier of `family` at throughput loss `lost`: the upper concave envelope of its points
// and the origin (uncapped) evaluated there (the best point at or below `lost`, or the best
// chord between a point at or below and one above). 0 when none.
double frontier_at(const std::vector<CapArmResult>& arms, const std::string& family, double lost);

// The index of the arm with the largest energy_saved among those with throughput_lost ≤
// max_lost (the first such arm on ties); 0 when arms is empty or none qualifies.
size_t best_within_loss(const std::vector<CapArmResult>& arms, double max_lost);

}  // namespace fw::studies
