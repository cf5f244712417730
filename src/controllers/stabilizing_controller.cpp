#include "controllers/stabilizing_controller.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fw {
namespace {

constexpr double kNoLimit = std::numeric_limits<double>::infinity();

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

}  // namespace

Status validate(const StabilizingConfig& c) {
  auto bad = [](const char* f, const char* why) {
    return Status::InvalidArgument(std::string("stabilize: ") + f + ": " + why);
  };
  if (!(c.period_s > 0)) return bad("period_s", "must be > 0");
  for (const auto& [v, f] : {std::pair{c.floor_pct, "floor_pct"}, std::pair{c.hold_pct, "hold_pct"},
                             std::pair{c.low_pct, "low_pct"}}) {
    if (!(v >= 0 && v <= 100)) return bad(f, "must be in 0..100");
  }
  if (!(c.low_pct <= c.hold_pct)) return bad("low_pct", "must not exceed hold_pct");
  if (!(c.ramp_w_per_s > 0)) return bad("ramp_w_per_s", "must be > 0");
  if (!(c.start_ramp_w_per_s > 0)) return bad("start_ramp_w_per_s", "must be > 0");
  if (!(c.start_slow_s >= 0)) return bad("start_slow_s", "must be >= 0");
  if (c.pre_iters < 0) return bad("pre_iters", "must be >= 0");
  if (!(c.pre_s >= 0)) return bad("pre_s", "must be >= 0");
  if (!(c.margin_s >= 0)) return bad("margin_s", "must be >= 0");
  return Status::Ok();
}

void StabilizingController::reset(const PlantInfo& info) {
  gpus_ = info.gpus.size();
  mode_ = Mode::kBefore;
  start_seen_s_ = ckpt_seen_s_ = ckpt_done_steps_ = kUnset;
  cap_w_ = info.gpus.empty() ? 0 : info.gpus[0].default_cap_w;
  prefill_ = false;
  last_ = {kUnset, kUnset, kUnset, kUnset, kUnset};
  last_fill_ = 0;
}

StabilizingController::Want StabilizingController::want(double now_s, const Snapshot& s) {
  const Want hold_down{c_.hold_pct, kNoLimit, c_.ramp_w_per_s, 0};
  const Want steady{c_.floor_pct, kNoLimit, kNoLimit, 0};
  if (s.jobs.empty()) {
    mode_ = Mode::kAfter;
    return hold_down;
  }
  const JobReading& j = s.jobs[0];
  for (const GpuReading& g : s.gpus) {
    if (std::isfinite(g.cap_w)) {
      cap_w_ = g.cap_w;
      break;
    }
  }
  if (j.phase == Phase::kIdle) {
    if (std::isnan(start_seen_s_)) {
      // Before the start: the ramp the start will need (the floor applies once the job holds
      // the GPUs), and the pre-start fill once the start is nearer than the rise takes.
      mode_ = Mode::kBefore;
      const double hold_w = c_.hold_pct / 100 * cap_w_;
      double now_w = 0;
      for (const GpuReading& g : s.gpus) now_w = std::max(now_w, g.power_instant_w);
      const double rise_s = std::max(0.0, hold_w - now_w) / c_.ramp_w_per_s + c_.margin_s;
      const double in_s = j.starts_in_s;
      if (c_.pre_fill && std::isfinite(in_s) && (prefill_ || in_s <= rise_s)) {
        prefill_ = true;
        // Once training is a decision away (or no faster ramp is left), the fill stops.
        if (in_s > c_.period_s + 1e-9) {
          return {c_.hold_pct, c_.ramp_w_per_s, c_.ramp_w_per_s, 0, hold_w};
        }
        return {c_.hold_pct, c_.start_ramp_w_per_s, c_.ramp_w_per_s, 0, 0};  // stops now
      }
      return {c_.hold_pct, c_.start_ramp_w_per_s, c_.ramp_w_per_s, 0, 0};
    }
    mode_ = Mode::kAfter;  // the job stopped: the device releases the floor at ramp_w_per_s
    return hold_down;
  }
  if (std::isnan(start_seen_s_)) {
    start_seen_s_ = now_s;
    mode_ = Mode::kStart;
  }
  if (mode_ == Mode::kStart) {
    double top = 0;
    for (const GpuReading& g : s.gpus) top = std::max(top, g.power_instant_w);
    if (top < c_.hold_pct / 100 * cap_w_ - 5) {
      // The slow first second only without a pre-start fill (the context's step shows then).
      const bool slow = now_s - start_seen_s_ < c_.start_slow_s && !prefill_;
      return {c_.hold_pct, slow ? c_.start_ramp_w_per_s : c_.ramp_w_per_s, c_.ramp_w_per_s, 0};
    }
    mode_ = Mode::kSteady;
  }
  if (j.phase == Phase::kCheckpoint) {
    if (std::isnan(ckpt_seen_s_)) ckpt_seen_s_ = now_s;
    mode_ = Mode::kCheckpoint;
    const double len_s = std::isfinite(j.checkpoint_s) ? j.checkpoint_s : 0;
    const double rise_s = (c_.hold_pct - c_.low_pct) / 100 * cap_w_ / c_.ramp_w_per_s;
    const double lead_s = std::min(len_s / 2, rise_s) + c_.margin_s;
    if (now_s >= ckpt_seen_s_ + len_s - lead_s) return {c_.hold_pct, c_.ramp_w_per_s, kNoLimit, 0};
    return {c_.low_pct, c_.ramp_w_per_s, c_.ramp_w_per_s, 0};
  }
  if (!std::isnan(ckpt_seen_s_)) {  // the checkpoint just ended
    ckpt_seen_s_ = kUnset;
    ckpt_done_steps_ = j.steps_total;
  }
  const bool after_ckpt = !std::isnan(ckpt_done_steps_) && j.steps_total < ckpt_done_steps_ + 1;
  const bool ckpt_near =
      std::isfinite(j.checkpoint_in_iters) && j.checkpoint_in_iters <= c_.pre_iters;
  const bool stop_near = std::isfinite(j.ends_in_s) && j.ends_in_s <= c_.pre_s;
  if (after_ckpt || ckpt_near || stop_near) {
    mode_ = Mode::kHold;
    return hold_down;
  }
  mode_ = Mode::kSteady;
  return steady;
}

Command StabilizingController::update(const Observation& obs) {
  Command cmd;
  const Want w = want(obs.time_s, obs.latest());
  if (same(w.floor_pct, last_.floor_pct) && same(w.up_w_per_s, last_.up_w_per_s) &&
      same(w.down_w_per_s, last_.down_w_per_s) && same(w.hysteresis_ms, last_.hysteresis_ms) &&
      same(w.fill_w, last_.fill_w)) {
    return cmd;  // nothing changed: nothing written
  }
  last_ = w;
  GpuSettingValues v = kNoGpuSettings;
  v[static_cast<int>(GpuSetting::kSmoothingFloor)] = w.floor_pct;
  v[static_cast<int>(GpuSetting::kSmoothingRampUp)] = w.up_w_per_s;
  v[static_cast<int>(GpuSetting::kSmoothingRampDown)] = w.down_w_per_s;
  v[static_cast<int>(GpuSetting::kSmoothingHysteresis)] = w.hysteresis_ms;
  // The fill only when it changes (a plant without a fill model never sees one otherwise).
  if (!same(w.fill_w, last_fill_)) v[static_cast<int>(GpuSetting::kFill)] = w.fill_w;
  last_fill_ = w.fill_w;
  cmd.gpu_settings.assign(gpus_, v);
  return cmd;
}

}  // namespace fw
