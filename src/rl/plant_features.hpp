#pragma once
// The PPO meta-controller's observation and action, shared by the training environment
// (rl/plant_env.hpp) and the deployed controller (rl/ppo_controller.hpp): one function
// builds the observation for both, one applies the action for both.
//
// Observation (plant_obs_spec(), docs/rl.md "Plant environment"): built only from what a
// controller measures — the snapshot history (power readings, job phase, token and step
// counters, knob settings), the budget in force, the time, and the knob ranges the plant
// declares. Power terms are the job's budget units' power divided by the budget (1.0 = at
// budget), worst unit first. Measurement windows are assumed tumbling and aligned to t = 0,
// as EpisodeMetrics and `flexwatt eval` count them (an assumption on real hardware).
//
// Action (plant_action_spec()): one categorical factor per knob the policy acts on
// (gen_concurrency and/or group_size, both by default), each {0 down, 1 stay, 2 up} one rung
// of a geometric ladder over the knob's range (knob_rung()), or an absolute level (kLevel).
// A knob outside the policy's subset, or one the job does not expose, is left alone.

#include <cstddef>
#include <span>
#include <string>

#include "control/command.hpp"
#include "control/observation.hpp"
#include "control/plant.hpp"
#include "control/snapshot_ring.hpp"
#include "core/status.hpp"
#include "rl/spec.hpp"

namespace fw::rl {

inline constexpr int kPlantObsDim = 20;

// Names of the entries, in order; the policy file stores them and the controller rejects a
// policy whose names differ.
const ObsSpec& plant_obs_spec();
enum class KnobActionMode { kStep, kLevel };
// kLevel options per knob (gen_concurrency, group_size): every rung of the level ladder
// (knob_level()) for the 7B ranges 1..64 and 1..16.
inline constexpr int kKnobLevels[2] = {22, 10};
// Level-action policies written before the dense band existed used {16, 10} levels; loading
// one fails with a message that says to retrain.
inline constexpr int kOldKnobLevels[2] = {16, 10};
// gen_concurrency's level ladder visits every step in [kDenseLo, kDenseHi] (assumption from
// the oracle's traces: it throttles generation to 9–13 on 7B, docs/rl.md "Action").
inline constexpr double kGenConcurrencyDenseLo = 8, kGenConcurrencyDenseHi = 16;
// Knobs the policy acts on: bit q set = knob q (kKnobNames order: gen_concurrency, group_size)
// is an action factor. A knob left out is never commanded, so it stays at the job's
// configured value. Policies from before this option act on both knobs (kAllKnobs).
inline constexpr unsigned kAllKnobs = 3;
// The action spec for a mode and knob subset: one factor per selected knob, in knob order.
// REQUIRES: knob_mask in 1..3.
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
// "gen_concurrency,group_size" (any non-empty subset, comma separated) -> mask; "all" -> 3.
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

// Sets cmd.knobs[job] from a categorical action (kStep: entries 0..2 per knob, moved from
// the settings measured in `latest`; kLevel: absolute levels). Only a target that differs
// from the measured setting is commanded. Returns the number of knobs asked to move (churn).
// action holds one entry per knob in knob_mask, in knob order; knobs outside the mask are
// left unset (never commanded). REQUIRES: cmd.knobs.size() > job, action.size() == number
// of knobs in knob_mask. Allocates nothing.
int apply_knob_action(const PlantInfo& info, const Snapshot& latest, size_t job,
                      std::span<const double> action, Command& cmd,
                      KnobActionMode mode = KnobActionMode::kStep, unsigned knob_mask = kAllKnobs);

}  // namespace fw::rl
