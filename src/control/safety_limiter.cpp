#include "control/safety_limiter.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "control/budget_units.hpp"
#include "control/snapshot_ring.hpp"
#include "control/window_judge.hpp"
#include "vocab/actuator_table.hpp"

namespace fw {
namespace {
constexpr double kNever = -std::numeric_limits<double>::infinity();
constexpr double kNone = std::numeric_limits<double>::infinity();

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
  // The shield: each job's actuator (its knob of lowest shield rank, or the caps), no ceiling.
  shield_knob_.assign(nj, -1);
  for (size_t j = 0; j < nj; ++j) {
    for (int i = 0; i < kNumKnobs && !cfg_.shield_on_caps; ++i) {
      const int k = kKnobShieldOrder[i];
      if (info.jobs[j].knob_ranges[k].available && std::isfinite(knobs_[j][k])) {
        shield_knob_[j] = k;
        break;
      }
    }
  }
  knob_ceiling_.assign(nj, kNone);
  last_cut_s_.assign(nj, kNever);
  last_raise_s_.assign(nj, kNever);
  cap_ceiling_w_.assign(ng, kNone);
  engaged_.clear();
  wanted_knobs_ = knobs_;
  wanted_caps_w_ = caps_w_;
}

// Steps 2–4 for one actuator; returns the value to write (NaN: unchanged). Slew and dwell
// bind raises only: a lower cap or knob draws less, and a cut held back by them could keep the
// node above the share it was cut to.
double SafetyLimiter::limit_one(double req, double cur, double lo, double hi, double step,
                                double max_change, double& last_change_s, double now_s) {
  if (req < lo - 1e-9 || req > hi + 1e-9) ++stats_.clamped;
  double v = round_to_step(req, lo, hi, step);
  if (std::isfinite(cur)) {
    const double d = v - cur;
    if (d > max_change + 1e-9) {
      ++stats_.slew_limited;
      // The largest move allowed, on the ladder when there is one (at least one rung).
      const double move =
          step > 0 ? std::max(1.0, std::floor(max_change / step + 1e-9)) * step : max_change;
      v = std::clamp(cur + move, lo, hi);
    }
    if (std::abs(v - cur) < 1e-9) return kUnset;
    if (v > cur && now_s - last_change_s < cfg_.min_dwell_s - 1e-9) {
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
      wanted_caps_w_[g] = std::clamp(r, gi.min_cap_w, gi.max_cap_w);
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
        wanted_knobs_[j][k] = round_to_step(r, kr.min, kr.max, kr.step);
        const double v = limit_one(r, knobs_[j][k], kr.min, kr.max, kr.step, max_change,
                                   knob_changed_s_[j][k], now);
        if (!std::isnan(v)) out.knobs[j][k] = knobs_[j][k] = v;
      }
    }
  }

  // kGpuSettingTable's rows (smoothing, fill): passed through, a negative value rejected; the
  // plant clamps them to the device's range or refuses them (vocab/).
  if (!req.gpu_settings.empty() && req.gpu_settings.size() != ng) {
    ++stats_.rejected;
  } else if (!req.gpu_settings.empty()) {
    out.gpu_settings.assign(ng, kNoGpuSettings);
    for (size_t g = 0; g < ng; ++g) {
      for (int k = 0; k < kNumGpuSettings; ++k) {
        const double r = req.gpu_settings[g][k];
        if (std::isnan(r)) continue;
        if (!(r >= 0)) {
          ++stats_.rejected;
          continue;
        }
        out.gpu_settings[g][k] = r;
      }
    }
  }

  if (cfg_.budget_shield && obs.units != nullptr && obs.budget != nullptr &&
      obs.history != nullptr && obs.history->size() > 0) {
    shield(out, obs);
  }
  return out;
}

// Step 5 (the header's contract). Long by design: engage/release, sizing, cut, raise and
// write are one rule per job and read together.
void SafetyLimiter::shield(Command& out, const Observation& obs) {
  const PlantInfo& info = *info_;
  const BudgetUnits& units = *obs.units;
  const Snapshot& latest = obs.latest();
  const size_t nu = units.size(), nj = info.jobs.size(), ng = info.gpus.size();
  const double budget_w = obs.budget->watts, now = obs.time_s;
  const double trigger_w = (1.0 - cfg_.shield_trigger_frac) * budget_w;
  const double release_w = (1.0 - cfg_.shield_release_frac) * budget_w;
  const double notch_w = cfg_.cap_notch_w > 0 ? cfg_.cap_notch_w : 1.0;
  if (engaged_.size() != nu) engaged_.assign(nu, 0);
  unit_mean_w_.assign(nu, 0.0);
  unit_next_w_.assign(nu, 0.0);
  unit_notches_.assign(nu, 0.0);
  auto draw_w = [&](int g) {
    const double p =
        g >= 0 && static_cast<size_t>(g) < latest.gpus.size() ? latest.gpus[g].power_w : kUnset;
    return std::isfinite(p) ? p : 0.0;
  };
  // W per notch of job j on unit u, from the unit's own newest readings.
  auto job_notch_w = [&](size_t j, size_t u) {
    double gpus_on_u = 0, job_w = 0;
    for (int g : info.jobs[j].gpus) {
      if (g < 0 || static_cast<size_t>(g) >= ng || units.unit_of_gpu[g] != static_cast<int>(u)) {
        continue;
      }
      gpus_on_u += 1;
      job_w += draw_w(g);
    }
    const int k = shield_knob_[j];
    if (k < 0) return gpus_on_u * notch_w;
    const KnobRange& kr = info.jobs[j].knob_ranges[k];
    const double step = kr.step > 0 ? kr.step : 1.0;
    const double above = std::floor((knobs_[j][k] - kr.min) / step + 1e-9);
    return above >= 1 ? job_w / above : 0.0;
  };
  const SnapshotRing& hist = *obs.history;
  // The window's sample count by the one rule eval, the agent and the RL environments judge by.
  const size_t n =
      WindowJudge::samples_per_window(obs.budget->window_s, std::max(obs.sample_period_s, 1e-9));
  const size_t k_prev = std::min(hist.size(), n - 1);  // the samples the next window keeps
  const double headroom_w = cfg_.shield_release_frac * budget_w;
  for (size_t u = 0; u < nu; ++u) {
    const double m = obs.unit_mean_w(u, obs.budget->window_s);
    const double r = obs.unit_mean_w(u, cfg_.shield_recent_s);
    // The most the unit may draw from now on, constantly, so that every trailing window ending
    // in the next window length stays under B: min over h = 1..n of
    // ((k + h)·B − Σ newest k samples) / h, k = min(n − h, history).
    prefix_w_.assign(k_prev + 1, 0.0);
    for (size_t a = 0; a < k_prev; ++a) {
      prefix_w_[a + 1] = prefix_w_[a] + unit_power_w(hist.at_age(a), units.units[u]);
    }
    double next_w = std::numeric_limits<double>::infinity();
    for (size_t h = 1; h <= n; ++h) {
      const size_t k = std::min(n - h, k_prev);
      const double hd = static_cast<double>(h);
      next_w = std::min(next_w, ((static_cast<double>(k) + hd) * budget_w - prefix_w_[k]) / hd);
    }
    unit_mean_w_[u] = m;
    unit_next_w_[u] = next_w;
    const bool over = m > trigger_w || r > next_w - cfg_.shield_trigger_frac * budget_w;
    if (over) {
      engaged_[u] = 1;
    } else if (m <= release_w) {
      engaged_[u] = 0;
    }
    if (!over) continue;
    const double target_w = std::min(release_w - std::max(0.0, m - budget_w), next_w - headroom_w);
    const double excess_w = r - target_w;
    if (!(excess_w > 0)) continue;
    double per_notch_w = 0;
    for (size_t j = 0; j < nj; ++j) {
      const auto& ju = units.units_of_job[j];
      if (std::find(ju.begin(), ju.end(), static_cast<int>(u)) != ju.end()) {
        per_notch_w += job_notch_w(j, u);
      }
    }
    const double notches = per_notch_w > 0 ? std::ceil(excess_w / per_notch_w - 1e-9)
                                           : static_cast<double>(cfg_.shield_max_notches);
    unit_notches_[u] =
        std::clamp(notches, 1.0, static_cast<double>(std::max(1, cfg_.shield_max_notches)));
  }
  for (size_t j = 0; j < nj; ++j) {
    const auto& ju = units.units_of_job[j];
    if (ju.empty()) continue;
    double notches = 0;
    bool any_engaged = false, room = true;
    for (int u : ju) {
      notches = std::max(notches, unit_notches_[u]);
      any_engaged = any_engaged || engaged_[u] != 0;
      const double one_w = job_notch_w(j, static_cast<size_t>(u));
      room = room && unit_mean_w_[u] + one_w <= release_w &&
             obs.unit_mean_w(static_cast<size_t>(u), cfg_.shield_recent_s) + one_w <=
                 unit_next_w_[u] - headroom_w;
    }
    const int k = shield_knob_[j];
    const bool cut = notches > 0 && now - last_cut_s_[j] >= cfg_.shield_settle_s - 1e-9;
    const bool raise = !any_engaged && room && now - last_raise_s_[j] >= cfg_.shield_raise_s - 1e-9;
    if (k >= 0) {
      const KnobRange& kr = info.jobs[j].knob_ranges[k];
      const double step = kr.step > 0 ? kr.step : 1.0;
      double& ceiling = knob_ceiling_[j];
      const bool active = std::isfinite(ceiling);
      if (cut) {
        ceiling = std::max(kr.min, std::min(ceiling, knobs_[j][k]) - notches * step);
        last_cut_s_[j] = last_raise_s_[j] = now;
      } else if (active && raise) {
        ceiling += step;
        last_raise_s_[j] = now;
        if (ceiling >= kr.max - 1e-9) ceiling = kNone;
      }
      if (!active && !std::isfinite(ceiling)) continue;
      const double v = std::min(wanted_knobs_[j][k], ceiling);
      if (!std::isfinite(v) || std::abs(v - knobs_[j][k]) < 1e-9) continue;
      if (v < knobs_[j][k]) ++stats_.shield_steps;
      out.knobs[j][k] = knobs_[j][k] = v;
      knob_changed_s_[j][k] = now;
      continue;
    }
    if (cut) last_cut_s_[j] = last_raise_s_[j] = now;
    const bool raised = !cut && raise;
    if (raised) last_raise_s_[j] = now;
    for (int g : info.jobs[j].gpus) {
      if (g < 0 || static_cast<size_t>(g) >= ng) continue;
      const GpuInfo& gi = info.gpus[g];
      double& ceiling = cap_ceiling_w_[g];
      const bool active = std::isfinite(ceiling);
      if (cut) {
        // From the draw when the GPU runs under its cap: a cut above the draw does nothing.
        const double base =
            std::min({ceiling, caps_w_[g], std::ceil(draw_w(g) / notch_w) * notch_w});
        ceiling = std::max(gi.min_cap_w, base - notches * notch_w);
      } else if (active && raised) {
        ceiling += notch_w;
        if (ceiling >= gi.max_cap_w - 1e-9) ceiling = kNone;
      }
      if (!active && !std::isfinite(ceiling)) continue;
      const double v = std::min(wanted_caps_w_[g], ceiling);
      if (!std::isfinite(v) || std::abs(v - caps_w_[g]) < 1e-9) continue;
      if (v < caps_w_[g]) ++stats_.shield_steps;
      out.power_cap_w[g] = caps_w_[g] = v;
      cap_changed_s_[g] = now;
    }
  }
}

}  // namespace fw
