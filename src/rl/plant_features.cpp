#include "rl/plant_features.hpp"

#include <algorithm>
#include <cmath>

namespace fw::rl {
namespace {

// Trailing spans of the power statistics, s (the budget window is added separately).
constexpr double kSpanShortS = 10, kSpanMidS = 30, kSpanLongS = 120, kPeakSpanS = 60;
// Scales that keep raw entries near unit size before the running normaliser (assumption:
// any fixed scale works, the normaliser re-centres; these only make files readable).
constexpr double kMinuteS = 60, kTokenRateScale = 100;

// Mean and variance of a unit's power over the newest `k` samples.
struct SpanStats {
  double mean = 0, sd = 0, peak = 0;
};

SpanStats span_stats(const SnapshotRing& h, const std::vector<int>& gpus, size_t k) {
  SpanStats s;
  double sum = 0, sum2 = 0;
  for (size_t a = 0; a < k; ++a) {
    const double p = unit_power_w(h.at_age(a), gpus);
    sum += p;
    sum2 += p * p;
    s.peak = std::max(s.peak, p);
  }
  s.mean = sum / static_cast<double>(k);
  s.sd = std::sqrt(std::max(0.0, sum2 / static_cast<double>(k) - s.mean * s.mean));
  return s;
}

// Samples read in (time_s − span_s, time_s], at least 1 (as Observation::samples_in).
size_t samples_in(const SnapshotRing& h, double time_s, double span_s) {
  size_t k = 1;
  const double cutoff = time_s - span_s + 1e-9;
  while (k < h.size() && h.at_age(k).time_s > cutoff) ++k;
  return k;
}

}  // namespace

const ObsSpec& plant_obs_spec() {
  static const ObsSpec spec{{"power_0.5s_rel",       "power_10s_rel",
                             "power_30s_rel",        "power_120s_rel",
                             "power_window_rel",     "power_sd_10s_rel",
                             "power_peak_60s_rel",   "window_elapsed",
                             "window_mean_rel",      "window_allowance_rel",
                             "gen_concurrency_frac", "group_size_frac",
                             "phase_generate",       "phase_score",
                             "phase_update",         "phase_sync",
                             "phase_other",          "step_elapsed_min",
                             "last_step_min",        "token_rate_30s_hundreds"}};
  return spec;
}

const ActionSpec& plant_action_spec() {
  static const ActionSpec spec =
      ActionSpec::categorical({std::string(kKnobNames[0]), std::string(kKnobNames[1])}, {3, 3});
  return spec;
}

void build_plant_features(const Observation& obs, size_t job, std::span<double> out) {
  std::fill(out.begin(), out.end(), 0.0);
  const SnapshotRing& h = *obs.history;
  const double budget_w = obs.budget->watts;
  const double dt = obs.sample_period_s;

  // The job's worst budget unit: the one with the highest trailing budget-window mean.
  const BudgetUnits& units = *obs.units;
  const std::vector<int>* gpus = nullptr;
  const size_t k_window = samples_in(h, obs.time_s, obs.budget->window_s);
  double worst = -1;
  auto consider = [&](size_t u) {
    const double m = span_stats(h, units.units[u], k_window).mean;
    if (m > worst) {
      worst = m;
      gpus = &units.units[u];
    }
  };
  if (job < units.units_of_job.size() && !units.units_of_job[job].empty()) {
    for (int u : units.units_of_job[job]) consider(static_cast<size_t>(u));
  } else {
    for (size_t u = 0; u < units.size(); ++u) consider(u);
  }
  if (gpus != nullptr && budget_w > 0) {
    const auto rel = [&](double span_s) {
      return span_stats(h, *gpus, samples_in(h, obs.time_s, span_s)).mean / budget_w;
    };
    out[0] = unit_power_w(h.newest(), *gpus) / budget_w;
    const SpanStats s10 = span_stats(h, *gpus, samples_in(h, obs.time_s, kSpanShortS));
    out[1] = s10.mean / budget_w;
    out[2] = rel(kSpanMidS);
    out[3] = rel(kSpanLongS);
    out[4] = worst / budget_w;
    out[5] = s10.sd / budget_w;
    out[6] = span_stats(h, *gpus, samples_in(h, obs.time_s, kPeakSpanS)).peak / budget_w;

    // Tumbling window (aligned to t = 0) containing this sample.
    const long n = std::max<long>(1, std::lround(obs.budget->window_s / dt));
    const long i = std::lround(obs.time_s / dt);
    const long k = i % n + 1;  // samples of this window so far, this one included
    const size_t have = std::min<size_t>(static_cast<size_t>(k), h.size());
    const double m = span_stats(h, *gpus, have).mean / budget_w;
    out[7] = static_cast<double>(k) / static_cast<double>(n);
    out[8] = m;
    out[9] = k < n ? std::clamp((n - k * m) / static_cast<double>(n - k), -1.0, 3.0) : 1.0;
  }

  const Snapshot& now = h.newest();
  if (job < obs.plant->jobs.size()) {
    const JobInfo& ji = obs.plant->jobs[job];
    for (int q = 0; q < kNumKnobs; ++q) {
      const KnobRange& r = ji.knob_ranges[q];
      if (!r.available || job >= now.jobs.size() || std::isnan(now.jobs[job].knobs[q])) continue;
      out[10 + q] = r.max > r.min ? (now.jobs[job].knobs[q] - r.min) / (r.max - r.min) : 1.0;
    }
  }
  if (job >= now.jobs.size()) return;

  switch (now.jobs[job].phase) {
    case Phase::kGenerate:
      out[12] = 1;
      break;
    case Phase::kScore:
      out[13] = 1;
      break;
    case Phase::kUpdate:
      out[14] = 1;
      break;
    case Phase::kSync:
      out[15] = 1;
      break;
    default:
      out[16] = 1;
      break;
  }

  // Step boundaries: samples where steps_total grew, newest first.
  double boundary_s[2] = {kUnset, kUnset};
  int found = 0;
  for (size_t a = 0; a + 1 < h.size() && found < 2; ++a) {
    const Snapshot& s = h.at_age(a);
    const Snapshot& prev = h.at_age(a + 1);
    if (job < s.jobs.size() && job < prev.jobs.size() &&
        s.jobs[job].steps_total > prev.jobs[job].steps_total) {
      boundary_s[found++] = s.time_s;
    }
  }
  const double oldest_s = h.at_age(h.size() - 1).time_s;
  out[17] = (obs.time_s - (found > 0 ? boundary_s[0] : oldest_s)) / kMinuteS;
  out[18] = found > 1 ? (boundary_s[0] - boundary_s[1]) / kMinuteS : 0.0;

  const size_t k30 = samples_in(h, obs.time_s, kSpanMidS);
  const Snapshot& then = h.at_age(k30 - 1);
  const double span = now.time_s - then.time_s;
  if (span > 0 && job < then.jobs.size()) {
    out[19] = (now.jobs[job].tokens_total - then.jobs[job].tokens_total) / span / kTokenRateScale;
  }
}

double knob_rung(const KnobRange& r, double current, int direction) {
  const double step = r.step > 0 ? r.step : 1;
  // Walk the ladder without storing it: rung k+1 = max(rung k + step, round(1.25·rung k)).
  auto next = [&](double v) {
    const double g = std::round(v * 1.25 / step) * step;
    return std::min(r.max, std::max(v + step, g));
  };
  double below = r.min, cur = r.min;
  // Rung nearest `current` (ties go to the lower one); the distance is unimodal.
  while (cur < r.max) {
    const double up = next(cur);
    if (!(std::abs(up - current) < std::abs(cur - current))) break;
    below = cur;
    cur = up;
  }
  // Off-ladder settings move to the adjacent rung in the asked direction first.
  if (direction > 0) return current < cur ? cur : (cur < r.max ? next(cur) : r.max);
  if (direction < 0) return current > cur ? cur : (cur > r.min ? below : r.min);
  return cur;
}

int apply_knob_action(const PlantInfo& info, const Snapshot& latest, size_t job,
                      std::span<const double> action, Command& cmd) {
  int moved = 0;
  if (job >= info.jobs.size() || job >= cmd.knobs.size()) return 0;
  for (int q = 0; q < kNumKnobs && q < static_cast<int>(action.size()); ++q) {
    const KnobRange& r = info.jobs[job].knob_ranges[q];
    cmd.knobs[job][q] = kUnset;
    if (!r.available) continue;
    double cur = job < latest.jobs.size() ? latest.jobs[job].knobs[q] : kUnset;
    if (std::isnan(cur)) cur = info.jobs[job].default_knobs[q];
    if (std::isnan(cur)) cur = r.max;
    const int dir = static_cast<int>(std::lround(action[q])) - 1;
    if (dir == 0) continue;
    const double target = knob_rung(r, cur, dir);
    if (target != cur) {
      cmd.knobs[job][q] = target;
      ++moved;
    }
  }
  return moved;
}

}  // namespace fw::rl
