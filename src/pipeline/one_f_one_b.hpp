#pragma once
// The 1F1B pipeline schedule (PipeDream-flush / Megatron's non-interleaved schedule) as a DAG,
// and its critical path.
//
// Stage s of S with N micro-batches runs w = min(S - 1 - s, N) warm-up forwards, then
// N - w steady-state pairs (forward of micro-batch w + i, backward of micro-batch i), then w
// cool-down backwards. A forward waits for the same micro-batch's forward on stage s - 1; a
// backward waits for the same micro-batch's backward on stage s + 1 (on the last stage, for its
// own forward, which precedes it on that stage). Communication takes no time; a stage that
// waits blocks (its power is the caller's blocking power). The iteration ends when the last op
// of any stage ends: the longest path through the DAG.

#include <array>
#include <vector>

#include "pipeline/stage_profile.hpp"

namespace fw::pipeline {

// A stage's ops by phase. kFill is the first warm-up forward (on the pipeline's fill path) and
// kDrain the last cool-down backward (on its drain path); kWarmup and kCooldown are the other
// warm-up forwards and cool-down backwards. The last stage has no warm-up or cool-down.
enum class Phase { kFill = 0, kWarmup = 1, kSteady = 2, kCooldown = 3, kDrain = 4 };
inline constexpr int kPhases = 5;
const char* phase_name(Phase p);

// Duration of one op by [stage][instruction][phase] (seconds).
using OpDurations = std::vector<std::array<std::array<double, kPhases>, 2>>;

class OneFOneB {
 public:
  struct Op {
    int stage = 0;
    Instr instr = Instr::kForward;
    int microbatch = 0;
    Phase phase = Phase::kSteady;
    int prev = -1;  // index (in ops()) of the previous op on the same stage, -1 for the first
    int dep = -1;   // index of the op on the neighbouring stage it waits for, -1 for none
  };

  // REQUIRES: stages >= 1, microbatches >= 1.
  OneFOneB(int stages, int microbatches);

  int stages() const { return stages_; }
  int microbatches() const { return microbatches_; }
  // Every op, in a topological order (an op comes after its prev and its dep).
  const std::vector<Op>& ops() const { return ops_; }
  // Number of ops of stage s of each instruction in each phase.
  int count(int stage, Instr k, Phase p) const {
    return counts_[stage][static_cast<int>(k)][static_cast<int>(p)];
  }

  // The iteration time (critical path) for op durations `d` (d.size() == stages()). `scratch`
  // is resized to ops().size() and holds each op's end time afterwards.
  double iteration_time(const OpDurations& d, std::vector<double>& scratch) const;
  // The same from a flat table: slot_s[slot(stage, k, p)] is the duration of such an op.
  static int slot(int stage, Instr k, Phase p) {
    return (stage * 2 + static_cast<int>(k)) * kPhases + static_cast<int>(p);
  }
  double iteration_time(const double* slot_s, std::vector<double>& scratch) const;

 private:
  int stages_, microbatches_;
  std::vector<Op> ops_;
  std::vector<int> prev_, dep_, slot_;  // ops_' fields, flat, for the critical-path pass
  std::vector<std::array<std::array<int, kPhases>, 2>> counts_;
};

}  // namespace fw::pipeline
