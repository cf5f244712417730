#pragma once
// Helpers for the pipeline controller tests (frontier, capnet online): one closed-loop episode
// of a simulated scenario, seed 1, with the budget's 30 s window. Simulated.

#include <gtest/gtest.h>

#include <optional>

#include "../sim/sim_test_util.hpp"  // source_path
#include "control/control_loop.hpp"
#include "sim/scenario.hpp"

namespace fw::testing {

using sim::testing::source_path;

struct PipelineEpisode {
  double energy_j = 0, tokens = 0;
};

// SM utilisation as NVML reports it on a pipeline job: a rank blocked in a collective (NCCL)
// runs a kernel, so every GPU with a context reads `util` whether it computes or waits (1:
// busy throughout; NaN: no reading). The rest of the reading is the wrapped plant's.
class NvmlUtilPlant : public Plant {
 public:
  NvmlUtilPlant(Plant& inner, double util) : inner_(inner), util_(util) {}
  const PlantInfo& info() const override { return inner_.info(); }
  Status read(double now_s, Snapshot& out) override {
    Status st = inner_.read(now_s, out);
    for (GpuReading& r : out.gpus)
      if (r.sm_util > 0) r.sm_util = util_;
    return st;
  }
  Status write(const Command& cmd) override { return inner_.write(cmd); }

 private:
  Plant& inner_;
  double util_;
};

// Runs `s` for its duration with controller `c` (nullptr: uncontrolled); history_s > 0 sets the
// span of snapshots the controller observes (else the loop's default). With nvml_util the
// plant reports SM utilisation as NvmlUtilPlant does.
inline PipelineEpisode run_pipeline_episode(const sim::Scenario& s, Controller* c,
                                            double history_s = 0,
                                            std::optional<double> nvml_util = std::nullopt) {
  auto cluster = sim::make_cluster(s, 1);
  NvmlUtilPlant nvml(*cluster, nvml_util.value_or(0.0));
  Plant* plant = nvml_util ? static_cast<Plant*>(&nvml) : cluster.get();
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
