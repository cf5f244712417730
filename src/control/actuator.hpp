#pragma once
// Actuator: what a baseline controller moves — one workload knob of every job, or the
// power caps of every job's GPUs (one cap per job, equal on its GPUs). A Ladder is the
// ascending set of settings one job's actuator can take.

#include <string>
#include <string_view>
#include <vector>

#include "control/plant.hpp"
#include "core/status.hpp"
#include "vocab/command.hpp"

namespace fw {

// One row of kActuatorTable (vocab/actuator_table.hpp) as a baseline controller
// uses it.
struct Actuator {
  enum class Kind { kKnob, kCaps } kind = Kind::kCaps;
  Knob knob = Knob::kGenConcurrency;  // when kind == kKnob
  // The row: the knob's index, or kCapActuator.
  int index() const { return kind == Kind::kKnob ? static_cast<int>(knob) : kCapActuator; }
  static Actuator of_index(int index);  // REQUIRES: 0 <= index < kNumActuators
  std::string name() const;             // the row's flag_name ("caps", "gen_concurrency", ...)
};

// A row's flag name (or canonical or action name), or "auto": the first knob every job
// exposes in the table's auto_rank order (group_size before gen_concurrency: the research's 7B
// baselines act on group size, docs/simulator.md), else caps. Unknown names: InvalidArgument
// listing the valid ones.
Result<Actuator> resolve_actuator(std::string_view name, const PlantInfo& info);
// As resolve_actuator, plus "all": every knob every job exposes (caps when none), and
// "A+B" lists ("gen_concurrency+group_size").
Result<std::vector<Actuator>> resolve_actuators(std::string_view name, const PlantInfo& info);

// Settings min, min+step, …, max (max always included), ascending.
struct Ladder {
  double min = 0, max = 0, step = 1;
  int size() const;                    // >= 1
  double value(int i) const;           // i clamped to [0, size)
  int index_of(double v) const;        // nearest rung
  double at_fraction(double f) const;  // rung nearest min + f·(max − min), f clamped to [0,1]
};

// Default notch of the caps ladder, W: the cap row's ladder step (actuator_table.hpp).
inline constexpr double kCapStepW = kActuatorTable[kCapActuator].ladder.step;

// The ladder of job j for this actuator (caps: the tightest range over the job's GPUs).
Ladder job_ladder(const PlantInfo& info, size_t job, const Actuator& a,
                  double cap_step_w = kCapStepW);

// The setting of job j's actuator in a snapshot (caps: mean enforced limit of its GPUs).
double job_setting(const PlantInfo& info, const Snapshot& s, size_t job, const Actuator& a);

// A Command sized for the plant, everything NaN (unchanged).
Command blank_command(const PlantInfo& info);
// Sets job j's actuator to `value` in `cmd` (REQUIRES: cmd from blank_command()).
void set_job_setting(const PlantInfo& info, size_t job, const Actuator& a, double value,
                     Command& cmd);

}  // namespace fw
