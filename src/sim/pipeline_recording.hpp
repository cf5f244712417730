#pragma once
// The simulator's adapter for `flexwatt pipeline profile`: runs a simulated pipeline job
// (sim/pipeline_job.hpp's physics) under a cap schedule and records what a real job and the
// agent would give — the pipeline hook's records per rank (pipeline/timing_log.hpp) and the
// agent's 2 Hz per-GPU trace rows (pipeline/gpu_samples.hpp). Everything it records is
// simulated.
//
// Execution (as sim::PipelineRun, op by op): every pipeline's 1F1B DAG; an op starts when its
// predecessor on the stage and its dependency on the neighbour stage have ended; its time is
// its work at f_max × op_slow of pipeline_iteration() at the caps in force at its start (×
// the straggler factor in force then); the GPU draws that iteration's compute_w while it runs
// and blocking_w while it waits. The next iteration starts when every pipeline has ended (the
// all-reduce takes no time). Caps take effect at once (the profile drops settle_s after each
// change anyway). One rank and one GPU per stage of each pipeline: gpu = p · stages + s
// (the scenario's numbering); the tp GPUs of a stage are alike and not repeated.
// Trace rows every sample_period_s: energy_j the GPU's exact energy since t = 0, power_w its
// mean power over the last period + Normal(0, noise_w) (seeded), power_limit_w the cap in
// force, sm_clock_mhz its compute clock (clock_x · f_max, rounded to 1 MHz).

#include <cstdint>
#include <vector>

#include "core/status.hpp"
#include "pipeline/gpu_samples.hpp"
#include "pipeline/profile_acquisition.hpp"
#include "pipeline/timing_log.hpp"
#include "sim/pipeline_job.hpp"

namespace fw::sim {

struct CapPhase {
  double start_s = 0;  // in force from here (simulated s since the run's start)
  double cap_w = 0;    // every GPU of the job
};

struct PipelineRecordingOptions {
  double duration_s = 600;
  double sample_period_s = 0.5;  // the agent's 2 Hz
  double noise_w = 0;
  uint64_t seed = 1;
  double start_unix_s = 1.7e9;  // the hook's clock at t = 0; trace time_s starts at 0
};

struct PipelineRecording {
  std::vector<pipeline::RankTimings> ranks;  // p · stages + s
  std::vector<pipeline::GpuSample> samples;  // time order, GPUs in order within a time
  int iterations = 0;
};

// REQUIRES: phases sorted by start_s, the first at 0. InvalidArgument otherwise or for a spec
// pipeline_iteration() refuses.
Result<PipelineRecording> record_pipeline_run(const PipelineJobSpec& spec,
                                              const std::vector<CapPhase>& phases,
                                              const PipelineRecordingOptions& opt);

// The probe plan (pipeline/profile_acquisition.hpp) run on the simulated job: its steps as
// cap phases, then the maximum cap put back; the run lasts the plan's total_s.
Result<PipelineRecording> record_probe_run(const PipelineJobSpec& spec,
                                           const pipeline::ProbePlan& plan,
                                           PipelineRecordingOptions opt);

// Writes the recording as a job and the agent would: `dir`/rank-NNN.jsonl per rank (the hook's
// format) and `dir`/gpus.csv (the trace's columns) with meta.json's start_unix_s. `dir` is
// created if needed.
Status write_recording(const std::string& dir, const PipelineRecording& rec, double start_unix_s);

// The simulator's check of an acquired profile: `pipeline plan`'s defaults on the job (its
// micro-batches unless microbatches > 0, tp, dp pipelines, blocking power, the GPU's cap range,
// segments of at least kCapSettlingS) for the job's offline profile (profile_from_spec) and for
// `acquired`; the best plan's energy_saved of each.
struct OfflineCheck {
  double offline_energy_saved = 0, acquired_energy_saved = 0;
  int microbatches = 0;
};
Result<OfflineCheck> check_against_offline(const PipelineJobSpec& spec,
                                           const pipeline::StageProfile& acquired,
                                           int microbatches = 0);

}  // namespace fw::sim
