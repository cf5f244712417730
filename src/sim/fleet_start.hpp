#pragma once
// Job start strategies for a fleet of jobs sharing one budget: how the jobs' step cycles
// line up at the start of a trace. Each job gets a phase offset (JobSpec::start_offset_s:
// how far into its own run it already is at its start_s):
//   manual    — each job's own start_offset_s (default 0); the default strategy;
//   aligned   — every offset 0: all jobs begin a step together (same phase);
//   random    — offset_j = U_j · period_j, U_j uniform in [0, 1) from the seeded stream
//               "sim.fleet.start" (child j) of the run seed;
//   staggered — offset_j = f_j · period_j with f_j spread over [0, 1): jobs are ranked by
//               GPU count (largest first, then by index) and rank r takes the r-th term of
//               the base-2 van der Corput sequence 0, 1/2, 1/4, 3/4, 1/8, 5/8, … so that the
//               power-heavy phases (prefill at generation start, update) of the biggest jobs
//               are half a period apart, the next ones fall in between, and so on.
// period_j is the job's mean step period estimated by running it alone, unthrottled
// (estimate_step_period_s). Offsets only set the initial phases: steps vary in length
// (random completion lengths), so phases drift apart over a long run.

#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/workload.hpp"

namespace fw::sim {

enum class StartStrategy { kManual, kAligned, kRandom, kStaggered };
std::string_view start_strategy_name(StartStrategy s);
// Returns false for a name that is not manual, aligned, random or staggered.
bool start_strategy_from_name(std::string_view name, StartStrategy& out);

// Mean step (GRPO) or iteration (pretrain) period in seconds of `spec` run alone at full
// clock from its start for `steps` steps (integration step dt_s), from a fixed stream so it is
// a property of the job, not of the run seed. Deterministic. REQUIRES: steps >= 1, dt_s > 0.
double estimate_step_period_s(const JobSpec& spec, double dt_s, int steps = 4);

// The stagger fractions f_j in [0, 1) described above, one per job.
std::vector<double> stagger_fractions(const std::vector<JobSpec>& jobs);

// Phase offsets (seconds) for every job under `strategy`; manual returns each job's own.
std::vector<double> start_offsets_s(const std::vector<JobSpec>& jobs, StartStrategy strategy,
                                    double dt_s, uint64_t seed);

}  // namespace fw::sim
