#pragma once
// Helpers for the simulator tests: loading shipped scenarios and running them.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/scenario.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::sim::testing {

inline std::string source_path(const std::string& rel) {
  return std::string(FLEXWATT_SOURCE_DIR) + "/" + rel;
}

inline Scenario load_or_die(const std::string& rel, const std::vector<std::string>& sets = {}) {
  auto s = load_scenario(source_path(rel), sets);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return Scenario{};
  return *s;
}

// One sample of a run: readings of every GPU and job at a time.
struct Run {
  std::vector<Snapshot> samples;
};

// Runs `s` for duration_s from seed, sampling every sample_period_s (no controller).
inline Run run_scenario(const Scenario& s, uint64_t seed, double duration_s) {
  Run r;
  auto plant = make_cluster(s, seed);
  const int64_t n = static_cast<int64_t>(duration_s / s.sample_period_s + 1e-9);
  r.samples.resize(n);
  for (int64_t k = 0; k < n; ++k) {
    Status st = plant->read(static_cast<double>(k + 1) * s.sample_period_s, r.samples[k]);
    EXPECT_TRUE(st.ok()) << st.message();
  }
  return r;
}

inline double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

}  // namespace fw::sim::testing
