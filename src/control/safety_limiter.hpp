#pragma once
// SafetyLimiter: the layer between every controller and the plant. No rule or learned
// policy can bypass it.
//
// Per actuator (each GPU's cap, each job's knob), in this order:
//   1. reject: a non-finite value (±inf), a negative one, one above 10× the range's top,
//      a knob the job does not expose, or a vector of the wrong size → request ignored;
//      NaN means "unchanged" (Command's contract) and is not an intervention;
//   2. clamp to the device's settable cap range / the knob's range (knobs rounded to step);
//   3. slew: at most max_cap_change_w / max_knob_change_frac·(knob range) per decision;
//   4. dwell: an actuator changed less than min_dwell_s ago holds its value;
//   5. budget shield (optional): when the trailing budget.window_s mean of a budget unit
//      exceeded the budget, every job on that unit steps one notch below min(its current
//      setting, the request) — its exposed knob of lowest shield_rank (kActuatorTable:
//      gen_concurrency, then group_size) or, without knobs or with shield_on_caps, its GPUs'
//      caps by cap_notch_w. The shield ignores dwell.
// Each altered actuator value counts one intervention of its kind. "Current" is the last
// value the limiter let through, initialised from the first snapshot by reset().

#include <cstdint>
#include <vector>

#include "control/command.hpp"
#include "control/observation.hpp"
#include "control/plant.hpp"

namespace fw {

struct LimiterConfig {
  double max_cap_change_w = 400;      // per decision, per GPU (default: a whole A100 range)
  double max_knob_change_frac = 1.0;  // per decision, fraction of the knob's range
  double min_dwell_s = 0;
  bool budget_shield = false;
  bool shield_on_caps = false;
  double cap_notch_w = 10;
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
  double limit_one(double req, double cur, double lo, double hi, double step, double max_change,
                   double& last_change_s, double now_s);
  LimiterConfig cfg_;
  const PlantInfo* info_ = nullptr;
  std::vector<double> caps_w_;
  std::vector<KnobValues> knobs_;
  std::vector<double> cap_changed_s_;
  std::vector<std::array<double, kNumKnobs>> knob_changed_s_;
  LimiterStats stats_;
};

}  // namespace fw
