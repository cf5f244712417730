#pragma once
// One tick of measurements from a plant (simulator or real node): what the sensors
// say, never the simulator's hidden truth. SI units throughout.

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "vocab/actuator_table.hpp"
#include "vocab/units.hpp"

namespace fw {

// What a job is doing at the moment of the reading.
enum class Phase : int {
  kIdle = 0,
  kGenerate,  // GRPO rollout generation (decode, with prefill bursts)
  kScore,     // GRPO scoring (prefill-like)
  kUpdate,    // GRPO policy update (forward/backward over the rollouts)
  kSync,      // GRPO weight sync
  kForward,   // pretraining
  kBackward,
  kAllReduce,  // gradient all-reduce (communication)
  kAllToAll,   // MoE expert exchange
  kOptimizer,
  kCheckpoint,
  kDataStall,
};
inline constexpr int kNumPhases = 12;
std::string_view phase_name(Phase p);
// Phase from its name; returns false when unknown.
bool phase_from_name(std::string_view name, Phase& out);

struct GpuReading {
  int gpu = 0;
  double power_w = kUnset;          // the sensor's power reading (Hopper: trailing 1 s mean)
  double power_instant_w = kUnset;  // instantaneous field where the device has one
  double energy_j = kUnset;         // cumulative energy counter; NaN without one
  double cap_w = kUnset;            // enforced power cap (gpus.csv column power_limit_w)
  double sm_util = kUnset;          // 0..1
  double mem_util = kUnset;         // 0..1
  double sm_clock_mhz = kUnset;
  double temp_c = kUnset;
};

struct JobReading {
  int job = 0;
  Phase phase = Phase::kIdle;
  double tokens_total = 0;      // cumulative progress (generated or trained tokens)
  double steps_total = 0;       // cumulative training steps / iterations
  KnobValues knobs = kNoKnobs;  // per kActuatorTable's per-job rows
  // Announcements the job's client sends ahead of the meter (NaN: none): its processes start
  // in / exit in this many s (the scheduled start and end), and the next checkpoint follows
  // the all-reduce of this many more iterations (1: the one under way) and lasts
  // checkpoint_s. Sent by the site simulator's plant (sim/site_plant.hpp) and, in the agent, by
  // the job's client with its progress reports: as of the read there (aged since the report,
  // agent/job_registry.hpp), on hardware and laid over the simulated job on the sim backend.
  double starts_in_s = kUnset, ends_in_s = kUnset;
  double checkpoint_in_iters = kUnset, checkpoint_s = kUnset;
  // Seconds since the job's iteration under way began (its last step boundary), as of the read
  // (NaN: not announced): from the job's client in the agent (aged since the report, growing;
  // the pipeline hook sends it at every step's end), where a step-keyed cap schedule anchors
  // (controllers/plan_controller.hpp). The simulator's jobs do not send it: their step count
  // is the signal there.
  double step_age_s = kUnset;
};

struct Snapshot {
  double time_s = 0;
  std::vector<GpuReading> gpus;
  std::vector<JobReading> jobs;
};

}  // namespace fw
