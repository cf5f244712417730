#pragma once
// stabilize: the feed-forward power-stabilising controller of a training site (issue #48;
// docs/stabilization.md, "The feed-forward controller"). It commands every GPU's power smoothing
// (kGpuSettingTable: floor, ramp rates, hysteresis) from what the job announces ahead of the
// meter (JobReading: phase, iterations, starts_in_s, ends_in_s, checkpoint_in_iters,
// checkpoint_s), so that the site's power moves no faster than the ramp limit at the job's
// events while the steady iteration swing is only partly filled:
//
// - steady training: floor floor_pct, no ramp limit, no hysteresis: the GPU burns only the
//   part of each all-reduce trough below the floor (the iteration swing's band energy falls
//   with the square of what is left);
// - before the start (pre_fill, the default): once the announced start (starts_in_s) is
//   nearer than the rise takes — (hold level − the GPU's power now) / ramp_w_per_s + margin_s —
//   the fill workload runs on the still idle GPUs at the hold level, smoothed to rise at
//   ramp_w_per_s, and stops one decision before training starts: training then starts at its
//   own level with little or nothing held back. The GPUs are idle before the start in every
//   arm: the fill costs its energy, no training time (an assumption: the site's GPUs are the
//   job's and free before it starts; docs/stabilization.md);
// - start: from the start on, floor hold_pct with a ramp-up of start_ramp_w_per_s for the
//   first start_slow_s (the context's idle power appears at once and uses most of the first
//   second's ramp), then ramp_w_per_s; the work is held back meanwhile. Steady once a GPU's
//   instantaneous power reaches the hold level;
// - a coming checkpoint (checkpoint_in_iters <= pre_iters) or stop (ends_in_s <= pre_s): floor
//   hold_pct and a ramp-down of ramp_w_per_s, hysteresis 0 — the troughs fill, so the drop
//   starts from a flat level and runs at the limit;
// - during a checkpoint (announced length checkpoint_s): the floor falls to the lowest the
//   device allows (the envelope ramps down at ramp_w_per_s) and, lead seconds before the
//   checkpoint ends, rises back to the hold level at ramp_w_per_s, lead = min(checkpoint_s / 2,
//   (hold − low) / ramp) + margin_s, so that training resumes at its own level with nothing held
//   back; steady again one iteration after the checkpoint;
// - after the stop the floor is released by the device (the envelope ramps down at the rate
//   set before).
//
// Every GPU of the plant gets the same settings (a site's GPUs move together). The controller
// reads only the plant's snapshot (meter-blind: no scorer window, no site meter). Caps are left
// as they are (claims none of kActuatorTable). Deterministic; no randomness.

#include "control/controller.hpp"

namespace fw {

struct StabilizingConfig {
  double period_s = 0.05;          // decision period (the site meter's period)
  double floor_pct = 50;           // steady floor, % of the TMP ceiling (the cap)
  double hold_pct = 85;            // floor around events, % of the cap
  double low_pct = 20;             // floor inside a checkpoint (clamped by the device)
  double ramp_w_per_s = 50;        // ramp rate at events, W/s per GPU
  double start_ramp_w_per_s = 15;  // ramp-up in the first start_slow_s of the start
  double start_slow_s = 1.0;       // s
  int pre_iters = 2;               // a checkpoint this many iterations ahead: hold
  double pre_s = 3;                // a stop this many s ahead: hold
  double margin_s = 0.5;           // the checkpoint's rise starts this much earlier
  bool pre_fill = true;            // ramp the idle GPUs up with the fill before the start
};

// InvalidArgument naming the field: percentages outside 0..100, low > hold, rates <= 0, ...
Status validate(const StabilizingConfig& c);

class StabilizingController : public Controller {
 public:
  explicit StabilizingController(StabilizingConfig c) : c_(c) {}
  std::string name() const override { return "stabilize"; }
  double period_s() const override { return c_.period_s; }
  void reset(const PlantInfo& info) override;
  Command update(const Observation& obs) override;
  ActuatorSet claims() const override { return ActuatorSet(); }

  enum class Mode { kBefore, kStart, kSteady, kHold, kCheckpoint, kAfter };
  Mode mode() const { return mode_; }

 private:
  struct Want {
    double floor_pct, up_w_per_s, down_w_per_s, hysteresis_ms;
    double fill_w = 0;  // the fill workload's target (0: off)
  };
  Want want(double now_s, const Snapshot& s);
  StabilizingConfig c_;
  size_t gpus_ = 0;
  Mode mode_ = Mode::kBefore;
  double start_seen_s_ = kUnset;     // first tick with the job training
  double ckpt_seen_s_ = kUnset;      // first tick of the current checkpoint
  double ckpt_done_steps_ = kUnset;  // iterations when the checkpoint ended
  double cap_w_ = 0;
  bool prefill_ = false;  // the pre-start fill has begun
  Want last_{kUnset, kUnset, kUnset, kUnset, kUnset};
  double last_fill_ = 0;  // the plant's fill starts off
};

}  // namespace fw
