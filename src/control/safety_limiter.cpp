#include "control/safety_limiter.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fw {
namespace {
constexpr double kNever = -std::numeric_limits<double>::infinity();

bool absurd(double v, double hi) {
  return !std::isfinite(v) || v < 0 || v > 10 * std::max(hi, 1.0);
}

double round_to_step(double v, double lo, double hi, double step) {
  if (!(step > 0)) return std::clamp(v, lo, hi);
  const double r = lo + std::round((v - lo) / step) * step;
  return std::clamp(r, lo, hi);
}
}  // namespace

void SafetyLimiter::reset(const PlantInfo& info, const Snapshot& first) {
  info_ = &info;
  stats_ = {};
  const size_t ng = info.gpus.size(), nj = info.jobs.size();
  caps_w_.assign(ng, kUnset);
  cap_changed_s_.assign(ng, kNever);
  for (size_t g = 0; g < ng; ++g) {
    const double read = g < first.gpus.size() ? first.gpus[g].cap_w : kUnset;
    caps_w_[g] = std::isfinite(read) ? read : info.gpus[g].default_cap_w;
  }
  knobs_.assign(nj, kNoKnobs);
  std::array<double, kNumKnobs> never{};
  never.fill(kNever);
  knob_changed_s_.assign(nj, never);
  for (size_t j = 0; j < nj; ++j) {
    for (int k = 0; k < kNumKnobs; ++k) {
      const double read = j < first.jobs.size() ? first.jobs[j].knobs[k] : kUnset;
      knobs_[j][k] = std::isfinite(read) ? read : info.jobs[j].default_knobs[k];
    }
  }
}

// Steps 2–4 for one actuator; returns the value to write (NaN: unchanged).
double SafetyLimiter::limit_one(double req, double cur, double lo, double hi, double step,
                                double max_change, double& last_change_s, double now_s) {
  if (req < lo - 1e-9 || req > hi + 1e-9) ++stats_.clamped;
  double v = round_to_step(req, lo, hi, step);
  if (std::isfinite(cur)) {
    const double d = v - cur;
    if (std::abs(d) > max_change + 1e-9) {
      ++stats_.slew_limited;
      // The largest move allowed, on the ladder when there is one (at least one rung).
      const double move =
          step > 0 ? std::max(1.0, std::floor(max_change / step + 1e-9)) * step : max_change;
      v = std::clamp(cur + std::copysign(move, d), lo, hi);
    }
    if (std::abs(v - cur) < 1e-9) return kUnset;
    if (now_s - last_change_s < cfg_.min_dwell_s - 1e-9) {
      ++stats_.dwell_held;
      return kUnset;
    }
  }
  last_change_s = now_s;
  return v;
}

// Long by design: the limiter stages (clamp, slew, dwell, shield) run in a fixed order that must be
// read together.
Command SafetyLimiter::apply(const Command& req, const Observation& obs) {
  Command out;
  if (info_ == nullptr) return out;
  const PlantInfo& info = *info_;
  const size_t ng = info.gpus.size(), nj = info.jobs.size();
  out.power_cap_w.assign(ng, kUnset);
  out.knobs.assign(nj, kNoKnobs);
  // The plant's job or GPU set changed since reset() (the caller restarts its episode then):
  // write nothing rather than index state sized for the old set.
  if (caps_w_.size() != ng || knobs_.size() != nj) {
    ++stats_.rejected;
    return out;
  }
  const double now = obs.time_s;
  const std::vector<double> prev_caps = caps_w_;
  const std::vector<KnobValues> prev_knobs = knobs_;

  if (!req.power_cap_w.empty() && req.power_cap_w.size() != ng) {
    ++stats_.rejected;
  } else {
    for (size_t g = 0; g < req.power_cap_w.size(); ++g) {
      const double r = req.power_cap_w[g];
      if (std::isnan(r)) continue;
      const GpuInfo& gi = info.gpus[g];
      if (absurd(r, gi.max_cap_w)) {
        ++stats_.rejected;
        continue;
      }
      const double v = limit_one(r, caps_w_[g], gi.min_cap_w, gi.max_cap_w, 0,
                                 cfg_.max_cap_change_w, cap_changed_s_[g], now);
      if (!std::isnan(v)) out.power_cap_w[g] = caps_w_[g] = v;
    }
  }
  if (!req.knobs.empty() && req.knobs.size() != nj) {
    ++stats_.rejected;
  } else {
    for (size_t j = 0; j < req.knobs.size(); ++j) {
      for (int k = 0; k < kNumKnobs; ++k) {
        const double r = req.knobs[j][k];
        if (std::isnan(r)) continue;
        const KnobRange& kr = info.jobs[j].knob_ranges[k];
        if (!kr.available || absurd(r, kr.max)) {
          ++stats_.rejected;
          continue;
        }
        const double max_change =
            std::max(cfg_.max_knob_change_frac * (kr.max - kr.min), kr.step > 0 ? kr.step : 1.0);
        const double v = limit_one(r, knobs_[j][k], kr.min, kr.max, kr.step, max_change,
                                   knob_changed_s_[j][k], now);
        if (!std::isnan(v)) out.knobs[j][k] = knobs_[j][k] = v;
      }
    }
  }

  if (cfg_.budget_shield && obs.units != nullptr && obs.budget != nullptr) {
    for (size_t u = 0; u < obs.units->size(); ++u) {
      if (obs.unit_mean_w(u, obs.budget->window_s) <= obs.budget->watts) continue;
      for (size_t j = 0; j < nj; ++j) {
        const auto& ju = obs.units->units_of_job[j];
        if (std::find(ju.begin(), ju.end(), static_cast<int>(u)) == ju.end()) continue;
        int knob = -1;
        for (int i = 0; i < kNumKnobs && !cfg_.shield_on_caps; ++i) {
          const int k = kKnobShieldOrder[i];
          if (info.jobs[j].knob_ranges[k].available && std::isfinite(knobs_[j][k])) {
            knob = k;
            break;
          }
        }
        if (knob >= 0) {
          const KnobRange& kr = info.jobs[j].knob_ranges[knob];
          const double step = kr.step > 0 ? kr.step : 1.0;
          // min(limited request, previous − one notch), never below the range.
          const double v = std::max(kr.min, std::min(knobs_[j][knob], prev_knobs[j][knob] - step));
          if (v < knobs_[j][knob]) {
            ++stats_.shield_steps;
            out.knobs[j][knob] = knobs_[j][knob] = v;
            knob_changed_s_[j][knob] = now;
          }
          continue;
        }
        for (int g : info.jobs[j].gpus) {
          if (g < 0 || g >= static_cast<int>(ng)) continue;
          const double v = std::max(info.gpus[g].min_cap_w,
                                    std::min(caps_w_[g], prev_caps[g] - cfg_.cap_notch_w));
          if (v < caps_w_[g]) {
            ++stats_.shield_steps;
            out.power_cap_w[g] = caps_w_[g] = v;
            cap_changed_s_[g] = now;
          }
        }
      }
    }
  }
  return out;
}

}  // namespace fw
