#pragma once
// The PPO meta-controller's observation and action, shared by the training environment
// (rl/plant_env.hpp) and the deployed controller (rl/ppo_controller.hpp): one function
// builds the observation for both, one applies the action for both.
//
// Observation (plant_obs_spec(), docs/rl.md "Plant environment"): built only from what a
// controller measures — the snapshot history (power readings, job phase, token and step
// counters, knob settings), the budget in force, the time, and the knob ranges the plant
// declares. Power terms are the job's budget units' power divided by the budget (1.0 = at
// budget), worst unit first. Meter-blind: every window term is a trailing one (the budget
// window ending now), so no entry reveals where a meter's tumbling windows begin; the
// scorer's window phase is unknown to the policy, as it is on real hardware. Policy files with the
// older, phase-revealing entries (window_elapsed, window_mean_rel, window_allowance_rel; policy
// format 1) are refused with a message.
//
// Action (plant_action_spec()): one categorical factor per actuator the policy acts on
// (gen_concurrency and/or group_size, both by default, and optionally power_cap), each
// {0 down, 1 stay, 2 up} one rung of a geometric ladder over the knob's range (knob_rung()),
// or an absolute level (kLevel). power_cap is one cap for every GPU of the job, a share of
// the GPU's maximum cap (cap_level_w()); step mode moves it one such level from the cap
// measured on the job's first GPU. An actuator outside the policy's subset, or a knob the job
// does not expose, is left alone.

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "control/observation.hpp"
#include "control/plant.hpp"
#include "control/snapshot_ring.hpp"
#include "core/status.hpp"
#include "rl/spec.hpp"
#include "vocab/command.hpp"

namespace fw::rl {

// The observation's knob entries: one per actuator-table row with a `feature` name, in row
// order (gen_concurrency_frac, group_size_frac), after the 10 power terms and before the 8
// phase and timing terms.
inline constexpr int kNumKnobFeatures = [] {
  int n = 0;
  for (int q = 0; q < kNumKnobs; ++q) n += kActuatorTable[q].feature.empty() ? 0 : 1;
  return n;
}();
inline constexpr int kObsKnobBase = 10;
inline constexpr int kPlantObsDim = kObsKnobBase + kNumKnobFeatures + 8;

// Names of the entries, in order; the policy file stores them and the controller rejects a
// policy whose names differ.
const ObsSpec& plant_obs_spec();
enum class KnobActionMode { kStep, kLevel };
// Action factors, in kActuatorTable order (the knobs, then the job's power cap), named by
// the table's action_name (the names policy files store).
inline constexpr int kNumActionFactors = kNumActuators;
inline constexpr int kPowerCapFactor = kCapActuator;
inline constexpr std::array<std::string_view, kNumActionFactors> kActionFactorNames = [] {
  std::array<std::string_view, kNumActionFactors> n{};
  for (int q = 0; q < kNumActionFactors; ++q) n[q] = kActuatorTable[q].action_name;
  return n;
}();
// kLevel options per factor: the row's ladder.levels (gen_concurrency 22: every rung of the
// level ladder (knob_level()) for the 7B range 1..64; group_size 10; caps 11: 50 %, 55 %, ...,
// 100 % of the GPU's maximum cap). A row without levels gets kDefaultKnobLevels.
inline constexpr int kDefaultKnobLevels = 10;
inline constexpr std::array<int, kNumActionFactors> kKnobLevels = [] {
  std::array<int, kNumActionFactors> l{};
  for (int q = 0; q < kNumActionFactors; ++q) {
    const int n = kActuatorTable[q].ladder.levels;
    l[q] = n > 0 ? n : kDefaultKnobLevels;
  }
  return l;
}();
// The factor whose level ladder has a dense band (the first row with one; -1: none).
inline constexpr int kDenseFactor = [] {
  for (int q = 0; q < kNumKnobs; ++q) {
    if (kActuatorTable[q].ladder.dense_hi > kActuatorTable[q].ladder.dense_lo) return q;
  }
  return -1;
}();
static_assert(kDenseFactor >= 0, "a row declares the dense band knob_level() uses");
// Level-action policies written before the dense band existed used {16, 10} levels; loading
// one fails with a message that says to retrain.
inline constexpr int kOldKnobLevels[2] = {16, 10};
// gen_concurrency's level ladder visits every step in [kDenseLo, kDenseHi] (the row's dense
// band: assumption from the oracle's traces, it throttles generation to 9–13 on 7B, docs/rl.md
// "Action").
inline constexpr double kGenConcurrencyDenseLo = kActuatorTable[kDenseFactor].ladder.dense_lo;
inline constexpr double kGenConcurrencyDenseHi = kActuatorTable[kDenseFactor].ladder.dense_hi;
// Actuators the policy acts on: bit q set = factor q (kActionFactorNames order) is an action
// factor. A knob left out is never commanded, so it stays at the job's configured value; a
// cap left out is never written. Policies from before this option act on both knobs
// (kAllKnobs); kPowerCapBit adds the cap.
inline constexpr unsigned kAllKnobs = (1u << kNumKnobs) - 1;
inline constexpr unsigned kPowerCapBit = 1u << kPowerCapFactor;
inline constexpr unsigned kMaxActionMask = kAllKnobs | kPowerCapBit;
// The action spec for a mode and subset: one factor per selected actuator, in factor order.
// REQUIRES: knob_mask in 1..kMaxActionMask.
const ActionSpec& plant_action_spec(KnobActionMode mode = KnobActionMode::kStep,
                                    unsigned knob_mask = kAllKnobs);
struct PlantActionLayout {
  KnobActionMode mode = KnobActionMode::kStep;
  unsigned knob_mask = kAllKnobs;
};
// The mode and knob subset whose spec equals `spec`; InvalidArgument naming the accepted
// forms otherwise.
Result<PlantActionLayout> plant_action_layout(const ActionSpec& spec);
Result<KnobActionMode> knob_action_mode(const ActionSpec& spec);
// "gen_concurrency,group_size,power_cap" (any non-empty subset, comma separated) -> mask;
// "all" -> both knobs (kAllKnobs), as before the cap existed.
Result<unsigned> parse_knob_mask(const std::string& csv);
std::string knob_mask_name(unsigned knob_mask);  // "gen_concurrency" / "..,group_size"

// Decision rule. kPeriod: every decision period. kPhase: at a phase boundary of the job
// (the newest sample starts a generation phase or completes a training step), once at least
// the minimum period has passed since the last decision, and at the latest after the maximum
// period (so a job without boundaries is still controlled).
enum class DecideOn { kPeriod, kPhase };
// True when the newest sample in `h` is a phase boundary of `job` (against the sample before
// it): its phase is generate and the previous one was not, or steps_total grew.
bool at_phase_boundary(const SnapshotRing& h, size_t job);

// Writes job `job`'s observation into out. REQUIRES: out.size() == kPlantObsDim, obs valid
// (control/observation.hpp), job < obs.plant->jobs.size(). Deterministic; allocates nothing.
void build_plant_features(const Observation& obs, size_t job, std::span<double> out);

// Rungs of a knob: min, then ×1.25 each (rounded to the range's step, at least one step
// higher), max always included. Returns the rung `direction` (−1, 0, +1) away from the rung
// nearest `current`, clamped to the range.
double knob_rung(const KnobRange& range, double current, int direction);

// The level ladder's rung at fraction level/(levels−1) of it (rung index rounded to nearest).
// The level ladder is knob_rung()'s, except that with `dense` every step in
// [kGenConcurrencyDenseLo, kGenConcurrencyDenseHi] is a rung (1..64: 1 2 3 4 5 6 8 9 … 16 20
// 25 31 39 49 61 64, 22 rungs). REQUIRES: levels >= 2, 0 <= level < levels.
double knob_level(const KnobRange& range, int level, int levels, bool dense = false);

// Cap level `level` (0..kKnobLevels[kPowerCapFactor]−1) of a GPU: (0.5 + 0.05·level) of its
// maximum cap, clamped to its settable range (A100: 200, 220, ..., 400 W).
double cap_level_w(const GpuInfo& gpu, int level);

// Sets cmd.knobs[job] (and, with kPowerCapBit, cmd.power_cap_w of the job's GPUs) from a
// categorical action (kStep: entries 0..2 per factor, moved from the settings measured in
// `latest`; kLevel: absolute levels). Only a target that differs from the measured setting
// is commanded. Returns the number of actuators asked to move (churn). action holds one
// entry per factor in knob_mask, in factor order; factors outside the mask are left unset
// (never commanded). REQUIRES: cmd.knobs.size() > job, cmd.power_cap_w.size() ==
// info.gpus.size() when the cap is in the mask, action.size() == factors in knob_mask.
// Allocates nothing.
int apply_knob_action(const PlantInfo& info, const Snapshot& latest, size_t job,
                      std::span<const double> action, Command& cmd,
                      KnobActionMode mode = KnobActionMode::kStep, unsigned knob_mask = kAllKnobs);

}  // namespace fw::rl
