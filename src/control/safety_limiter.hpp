#pragma once
// SafetyLimiter: the layer between every controller and the plant. No rule or learned
// policy can bypass it.
//
// Per actuator (each GPU's cap, each job's knob), in this order:
//   1. reject: a non-finite value (±inf), a negative one, one above 10× the range's top,
//      a knob the job does not expose, or a vector of the wrong size → request ignored;
//      NaN means "unchanged" (Command's contract) and is not an intervention;
//   2. clamp to the device's settable cap range / the knob's range (knobs rounded to step);
//   3. slew: a raise of at most max_cap_change_w / max_knob_change_frac·(knob range) per
//      decision;
//   4. dwell: an actuator changed less than min_dwell_s ago is not raised;
//      slew and dwell bind raises only: a cut (a lower cap or knob, less power) always passes,
//      so a configured slew or dwell never holds a node above its share;
//   5. budget shield (optional, every call: the loop calls apply() at every tick when it is
//      on, with an empty request between decisions). Per budget unit u, with B the budget,
//      m the trailing budget.window_s mean and r the mean of the newest shield_recent_s:
//      - N = the most the unit may draw from now on, constantly, so that every trailing window
//        ending within the next window length stays under B (n samples a window, S_k the sum
//        of the newest k): min over h = 1..n of ((k + h)·B − S_k) / h, k = min(n − h, history);
//      - engage when m > (1 − shield_trigger_frac)·B or r > N − shield_trigger_frac·B (the
//        next window would break); release when m ≤ (1 − shield_release_frac)·B and neither
//        holds (hysteresis: in between the cut is held);
//      - while engaging, every job on u gets a ceiling on its shield actuator
//        (its exposed knob of lowest shield_rank in kActuatorTable: gen_concurrency, then
//        group_size; its GPUs' caps without knobs or with shield_on_caps) lowered by
//        n = ceil(excess / w_per_notch) notches, 1 ≤ n ≤ shield_max_notches, where
//        excess = r − min((1 − shield_release_frac)·B − max(0, m − B), N − shield_release_frac·B)
//        (the draw that brings the window back and keeps the next one under), and w_per_notch is
//        the unit's W per notch of every job on it, from its own readings: cap_notch_w per GPU
//        drawing at its cap for caps; for a knob the job's draw on u over its notches above the
//        knob's minimum (linear through 0: it overestimates the notches needed, the safe side). No
//        cut when excess ≤ 0 or within shield_settle_s of the job's last cut (the readings have not
//        shown it yet);
//      - released on every unit of a job, its ceiling rises one notch every shield_raise_s
//        while each unit's m and r plus one notch of its draw stay at or under the release
//        level and N − shield_release_frac·B,
//        and goes away at the top of the range;
//      - the setting written is min(the controller's last request, the ceiling). The
//        shield ignores slew and dwell.
// The per-GPU settings of kGpuSettingTable (power smoothing, fill) are not limited here: a set
// value passes through unchanged, a negative one is rejected (the plant clamps or refuses).
// Each altered actuator value counts one intervention of its kind. "Current" is the last
// value the limiter let through, initialised from the first snapshot by reset().

#include <cstdint>
#include <vector>

#include "control/observation.hpp"
#include "control/plant.hpp"
#include "vocab/command.hpp"

namespace fw {

struct LimiterConfig {
  double max_cap_change_w = 400;      // per decision, per GPU (default: a whole A100 range)
  double max_knob_change_frac = 1.0;  // per decision, fraction of the knob's range
  double min_dwell_s = 0;
  bool budget_shield = false;
  bool shield_on_caps = false;
  double cap_notch_w = 10;
  // Shield tuning (the contract above). Defaults chosen a priori, not tuned on any seed.
  double shield_trigger_frac = 0.02;  // engage above (1 − this)·B
  double shield_release_frac = 0.05;  // release at or under (1 − this)·B; the cut's target
  double shield_recent_s = 1.0;       // span of the "recent draw" r
  double shield_settle_s = 2.0;       // no new cut of a job this soon after its last
  double shield_raise_s = 10.0;       // a released ceiling rises one notch this often
  int shield_max_notches = 8;         // most notches per cut
};

struct LimiterStats {
  int64_t rejected = 0;
  int64_t clamped = 0;
  int64_t slew_limited = 0;
  int64_t dwell_held = 0;
  int64_t shield_steps = 0;
  int64_t total() const { return rejected + clamped + slew_limited + dwell_held + shield_steps; }
};

class SafetyLimiter {
 public:
  explicit SafetyLimiter(LimiterConfig cfg = {}) : cfg_(cfg) {}

  // Starts an episode: sizes the state and reads the settings in force from `first`.
  void reset(const PlantInfo& info, const Snapshot& first);
  // The command to write: full-size vectors, NaN where nothing changes. Never throws. When the
  // plant's GPU or job count no longer matches reset()'s, nothing is written (one rejection).
  Command apply(const Command& request, const Observation& obs);

  const LimiterStats& stats() const { return stats_; }
  const LimiterConfig& config() const { return cfg_; }
  const std::vector<double>& caps_w() const { return caps_w_; }
  const std::vector<KnobValues>& knobs() const { return knobs_; }

 private:
  void shield(Command& out, const Observation& obs);
  double limit_one(double req, double cur, double lo, double hi, double step, double max_change,
                   double& last_change_s, double now_s);
  LimiterConfig cfg_;
  const PlantInfo* info_ = nullptr;
  std::vector<double> caps_w_;
  std::vector<KnobValues> knobs_;
  std::vector<double> cap_changed_s_;
  std::vector<std::array<double, kNumKnobs>> knob_changed_s_;
  LimiterStats stats_;
  // Shield state (sized by reset()): per job its shield actuator (knob index, -1: caps),
  // the knob ceiling (+inf: none), the last cut and raise times; per GPU the cap ceiling;
  // per unit engaged; the controller's last request per knob and cap (clamped).
  std::vector<int> shield_knob_;
  std::vector<double> knob_ceiling_, last_cut_s_, last_raise_s_;
  std::vector<double> cap_ceiling_w_;
  std::vector<char> engaged_;
  std::vector<KnobValues> wanted_knobs_;
  std::vector<double> wanted_caps_w_;
  std::vector<double> unit_mean_w_, unit_next_w_, unit_notches_, prefix_w_;  // per tick, kept
};

}  // namespace fw
