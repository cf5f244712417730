#pragma once
// HistoryRing: the agent's recent past for the dashboard (GET /v1/history). A bounded ring of
// compact samples taken from the published states: at most one sample per spacing_s of wall
// time (the rest are skipped), at most `capacity` samples (the oldest drop out), so with the
// defaults (7200, 0.5 s) it holds the last hour at 2 samples/s whatever the loop period.
//
// A sample: wall time, node power, the budget as node watts (a per-GPU budget times the GPU
// count), the trailing mean and violation count of the first judging window, the fallback
// reason, each GPU's power and cap, and each registered job's progress (tokens_total,
// steps_total) and the knobs in force. Watts are answered to the milliwatt; NaN is "not
// measured" (JSON null).
//
// Thread-safety: add() and to_json() may be called from any thread (one mutex).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/agent_state.hpp"

namespace fw::agent {

class HistoryRing {
 public:
  static constexpr size_t kDefaultCapacity = 7200;
  static constexpr double kDefaultSpacingS = 0.5;
  static constexpr size_t kMaxPoints = 3600;  // the most samples one answer carries

  explicit HistoryRing(size_t capacity = kDefaultCapacity, double spacing_s = kDefaultSpacingS);

  // Records `s` unless the last kept sample is less than spacing_s older (wall time).
  void add(const AgentState& s);
  // The samples of the last `span_s` seconds before the newest one, thinned to at most
  // `max_points` (1..kMaxPoints; every k-th sample, the newest always kept), as columns:
  // {"span_s", "spacing_s", "capacity", "count", "t_unix_s": [...], "node_power_w": [...],
  //  "budget_w": [...], "mean_w": [...], "window_s", "violations_total": [...],
  //  "fallback_reason": [...], "gpus": [{"index", "power_w": [...], "cap_w": [...]}],
  //  "jobs": [{"id", "name", "tokens_total": [...], "steps_total": [...],
  //            "knobs": {"<knob>": [...]}}]}: jobs by id in the order first seen, null where
  //  the job was not registered; a knob column only for knobs set in some answered sample.
  nlohmann::json to_json(double span_s, size_t max_points) const;
  size_t size() const;

 private:
  struct JobSample {
    std::string id, name;
    double tokens_total, steps_total;
    KnobValues knobs;
  };
  struct Sample {
    double t_unix_s;
    double node_w, budget_w, mean_w;
    int64_t violations_total;
    std::string fallback;
    std::vector<int> gpu_index;
    std::vector<float> gpu_power_w, gpu_cap_w;
    std::vector<JobSample> jobs;
  };
  // Adds out["jobs"] from the picked samples (caller holds mu_).
  nlohmann::json with_jobs(nlohmann::json out, const std::vector<size_t>& picked) const;

  size_t capacity_;
  double spacing_s_;
  double window_s_ = kUnset;  // the first judging window's length (last seen)
  mutable std::mutex mu_;
  std::deque<Sample> ring_;
};

}  // namespace fw::agent
