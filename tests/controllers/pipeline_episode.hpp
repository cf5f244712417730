#pragma once
// Helpers for the pipeline controller tests (frontier, capnet online): one closed-loop episode
// of a simulated scenario, seed 1, with the budget's 30 s window. Simulated.

#include <gtest/gtest.h>

#include "../sim/sim_test_util.hpp"  // source_path
#include "control/control_loop.hpp"
#include "sim/scenario.hpp"

namespace fw::testing {

using sim::testing::source_path;

struct PipelineEpisode {
  double energy_j = 0, tokens = 0;
};

// Runs `s` for its duration with controller `c` (nullptr: uncontrolled); history_s > 0 sets the
// span of snapshots the controller observes (else the loop's default).
inline PipelineEpisode run_pipeline_episode(const sim::Scenario& s, Controller* c,
                                            double history_s = 0) {
  auto plant = sim::make_cluster(s, 1);
  LoopConfig cfg;
  cfg.duration_s = s.duration_s;
  cfg.windows_s = {30};
  if (history_s > 0) cfg.history_s = history_s;
  ControlLoop loop(*plant, s.budget, cfg);
  if (c) loop.add_controller(c);
  EXPECT_TRUE(loop.run().ok());
  const EpisodeResult r = loop.result();
  return {r.energy_j, r.tokens};
}

}  // namespace fw::testing
