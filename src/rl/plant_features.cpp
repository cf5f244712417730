#include "rl/plant_features.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace fw::rl {
namespace {

// Trailing spans of the power statistics, s (the budget window is added separately).
constexpr double kSpanShortS = 10, kSpanMidS = 30, kSpanLongS = 120, kPeakSpanS = 60;
// Horizon of the trailing allowance entry, s (at most half the budget window).
constexpr double kAllowanceHorizonS = 10;
// Scales that keep raw entries near unit size before the running normaliser (assumption:
// any fixed scale works, the normaliser re-centres; these only make files readable).
constexpr double kMinuteS = 60, kTokenRateScale = 100;

// Running sums over the newest samples of one unit, taken when the span is complete.
struct SpanStats {
  double mean = 0, sd = 0, peak = 0;
};

// One pass over the history, newest first: the statistics of each trailing span (a span
// ends at the first sample at or before its cutoff, or at a fixed count) and the newest two
// step boundaries of `job`. Sums run in age order, so every span's figures are exactly those
// of a separate pass over it. Allocates nothing.
constexpr int kSpans = 6;
struct HistoryPass {
  // In: per span, a cutoff time (samples strictly newer count) or, if fixed_k > 0, a count.
  double cutoff_s[kSpans] = {};
  size_t fixed_k[kSpans] = {};
  // Out.
  SpanStats stats[kSpans];
  size_t k[kSpans] = {};
  double boundary_s[2] = {kUnset, kUnset};
  int boundaries = 0;
};

void history_pass(const SnapshotRing& h, const std::vector<int>& gpus, size_t job,
                  HistoryPass& hp) {
  double sum = 0, sum2 = 0, peak = 0;
  int open = kSpans;
  bool done[kSpans] = {};
  // The next end among the open spans: the latest cutoff (time spans) and the smallest count
  // (fixed spans); the per-span loop runs only when one of them is reached.
  double next_cutoff = 0;
  size_t next_k = 0;
  auto find_next = [&] {
    next_cutoff = -std::numeric_limits<double>::infinity();
    next_k = std::numeric_limits<size_t>::max();
    for (int j = 0; j < kSpans; ++j) {
      if (done[j]) continue;
      if (hp.fixed_k[j] > 0) {
        next_k = std::min(next_k, hp.fixed_k[j]);
      } else {
        next_cutoff = std::max(next_cutoff, hp.cutoff_s[j]);
      }
    }
  };
  find_next();
  const size_t n = h.size();
  for (size_t a = 0; a < n && (open > 0 || hp.boundaries < 2); ++a) {
    const Snapshot& s = h.at_age(a);
    const bool has_prev = a + 1 < n;
    if (open > 0) {
      const double p = unit_power_w(s, gpus);
      sum += p;
      sum2 += p * p;
      peak = std::max(peak, p);
      const size_t k = a + 1;
      const double prev_t = has_prev ? h.at_age(a + 1).time_s : 0.0;
      if (!has_prev || prev_t <= next_cutoff || k >= next_k) {
        for (int j = 0; j < kSpans; ++j) {
          if (done[j]) continue;
          const bool end =
              !has_prev || (hp.fixed_k[j] > 0 ? k >= hp.fixed_k[j] : !(prev_t > hp.cutoff_s[j]));
          if (!end) continue;
          done[j] = true;
          --open;
          SpanStats& st = hp.stats[j];
          const double kd = static_cast<double>(k);
          st.mean = sum / kd;
          st.sd = std::sqrt(std::max(0.0, sum2 / kd - st.mean * st.mean));
          st.peak = peak;
          hp.k[j] = k;
        }
        find_next();
      }
    }
    if (has_prev && hp.boundaries < 2) {
      const Snapshot& prev = h.at_age(a + 1);
      if (job < s.jobs.size() && job < prev.jobs.size() &&
          s.jobs[job].steps_total > prev.jobs[job].steps_total) {
        hp.boundary_s[hp.boundaries++] = s.time_s;
      }
    }
  }
}

}  // namespace

const ObsSpec& plant_obs_spec() {
  static const ObsSpec spec = [] {
    std::vector<std::string> n = {"power_0.5s_rel",      "power_10s_rel",
                                  "power_30s_rel",       "power_120s_rel",
                                  "power_window_rel",    "power_sd_10s_rel",
                                  "power_peak_60s_rel",  "power_window_peak_rel",
                                  "power_window_sd_rel", "trailing_allowance_rel"};
    for (int q = 0; q < kNumKnobs; ++q) {  // the table's feature names (kObsKnobBase..)
      if (!kActuatorTable[q].feature.empty()) n.emplace_back(kActuatorTable[q].feature);
    }
    for (const char* x :
         {"phase_generate", "phase_score", "phase_update", "phase_sync", "phase_other",
          "step_elapsed_min", "last_step_min", "token_rate_30s_hundreds"}) {
      n.emplace_back(x);
    }
    return ObsSpec{n};
  }();
  return spec;
}

const ActionSpec& plant_action_spec(KnobActionMode mode, unsigned knob_mask) {
  // [mode][mask − 1], built once.
  static const std::vector<ActionSpec> specs = [] {
    std::vector<ActionSpec> v;
    for (int m = 0; m < 2; ++m) {
      for (unsigned mask = 1; mask <= kMaxActionMask; ++mask) {
        std::vector<std::string> names;
        std::vector<int> cats;
        for (int q = 0; q < kNumActionFactors; ++q) {
          if (!(mask & (1u << q))) continue;
          names.emplace_back(kActionFactorNames[q]);
          cats.push_back(m == 1 ? kKnobLevels[q] : 3);
        }
        v.push_back(ActionSpec::categorical(names, cats));
      }
    }
    return v;
  }();
  const unsigned mask = knob_mask >= 1 && knob_mask <= kMaxActionMask ? knob_mask : kAllKnobs;
  return specs[(mode == KnobActionMode::kLevel ? kMaxActionMask : 0) + mask - 1];
}

namespace {
// "gen_concurrency, group_size and/or power_cap" with `last` before the final name.
std::string factor_list(const std::string& last) {
  std::string s;
  for (int q = 0; q < kNumActionFactors; ++q) {
    if (q > 0) s += q + 1 == kNumActionFactors ? last : ", ";
    s += kActionFactorNames[q];
  }
  return s;
}
// "22 / 10 / 11"
std::string level_list() {
  std::string s;
  for (int q = 0; q < kNumActionFactors; ++q) {
    s += (q > 0 ? " / " : "") + std::to_string(kKnobLevels[q]);
  }
  return s;
}
}  // namespace

Result<PlantActionLayout> plant_action_layout(const ActionSpec& spec) {
  for (KnobActionMode m : {KnobActionMode::kStep, KnobActionMode::kLevel}) {
    for (unsigned mask = 1; mask <= kMaxActionMask; ++mask) {
      const ActionSpec& want = plant_action_spec(m, mask);
      if (spec.kind == want.kind && spec.names == want.names &&
          spec.categories == want.categories) {
        return PlantActionLayout{m, mask};
      }
    }
  }
  if (spec.kind == ActionSpec::Kind::kCategorical &&
      spec.categories == std::vector<int>{kOldKnobLevels[0], kOldKnobLevels[1]}) {
    return Status::InvalidArgument(
        "policy uses level actions with {16, 10} levels, the gen_concurrency ladder before its "
        "dense 8..16 band; this build uses {" +
        std::to_string(kKnobLevels[0]) + ", " + std::to_string(kKnobLevels[1]) +
        "} levels: retrain it with `flexwatt train ... --actions level`");
  }
  return Status::InvalidArgument(
      "policy action spec does not match: expected categorical over " + factor_list(" and/or ") +
      " (in that order) with 3 options each (down, stay, up) or " + level_list() + " levels");
}

Result<KnobActionMode> knob_action_mode(const ActionSpec& spec) {
  FW_ASSIGN_OR_RETURN(PlantActionLayout l, plant_action_layout(spec));
  return l.mode;
}

Result<unsigned> parse_knob_mask(const std::string& csv) {
  if (csv == "all") return kAllKnobs;
  unsigned mask = 0;
  size_t pos = 0;
  while (pos <= csv.size()) {
    const size_t comma = std::min(csv.find(',', pos), csv.size());
    const std::string name = csv.substr(pos, comma - pos);
    int found = -1;
    for (int q = 0; q < kNumActionFactors; ++q) {
      if (name == kActionFactorNames[q]) found = q;
    }
    if (found < 0) {
      return Status::InvalidArgument("unknown knob '" + name + "' (expected " + factor_list(", ") +
                                     " or all)");
    }
    mask |= 1u << found;
    pos = comma + 1;
  }
  return mask;
}

std::string knob_mask_name(unsigned knob_mask) {
  std::string s;
  for (int q = 0; q < kNumActionFactors; ++q) {
    if (!(knob_mask & (1u << q))) continue;
    if (!s.empty()) s += ",";
    s += kActionFactorNames[q];
  }
  return s;
}

bool at_phase_boundary(const SnapshotRing& h, size_t job) {
  if (h.size() < 2) return false;
  const Snapshot& now = h.at_age(0);
  const Snapshot& prev = h.at_age(1);
  if (job >= now.jobs.size() || job >= prev.jobs.size()) return false;
  if (now.jobs[job].steps_total > prev.jobs[job].steps_total) return true;
  return now.jobs[job].phase == Phase::kGenerate && prev.jobs[job].phase != Phase::kGenerate;
}

// Long by design: writes the observation vector in its documented order; one place keeps the order
// visible.
void build_plant_features(const Observation& obs, size_t job, std::span<double> out) {
  std::fill(out.begin(), out.end(), 0.0);
  const SnapshotRing& h = *obs.history;
  const double budget_w = obs.budget->watts;
  const double dt = obs.sample_period_s;

  // The job's worst budget unit: the one with the highest trailing budget-window mean
  // (a separate pass per unit only when the job spans several).
  const BudgetUnits& units = *obs.units;
  const std::vector<int>* gpus = nullptr;
  const bool own = job < units.units_of_job.size() && !units.units_of_job[job].empty();
  const size_t n_units = own ? units.units_of_job[job].size() : units.size();
  auto unit_at = [&](size_t i) {
    return own ? static_cast<size_t>(units.units_of_job[job][i]) : i;
  };
  if (n_units == 1) {
    gpus = &units.units[unit_at(0)];
  } else if (n_units > 1) {
    double worst = -1;
    for (size_t i = 0; i < n_units; ++i) {
      const double m = obs.unit_mean_w(unit_at(i), obs.budget->window_s);
      if (m > worst) {
        worst = m;
        gpus = &units.units[unit_at(i)];
      }
    }
  }

  // Trailing spans only (meter-blind: nothing here depends on where a meter's windows fall).
  // kSHead: the budget window less the allowance horizon, the part of the trailing window
  // that will still count kAllowanceHorizonS from now.
  const double window_s = obs.budget->window_s;
  const double horizon_s = std::min(kAllowanceHorizonS, 0.5 * window_s);
  enum { kS10, kS30, kS120, kS60, kSWin, kSHead };
  HistoryPass hp;
  const double span_s[kSpans] = {kSpanShortS, kSpanMidS, kSpanLongS,
                                 kPeakSpanS,  window_s,  window_s - horizon_s};
  for (int j = 0; j < kSpans; ++j) hp.cutoff_s[j] = obs.time_s - span_s[j] + 1e-9;
  static const std::vector<int> kNoGpus;
  history_pass(h, gpus != nullptr ? *gpus : kNoGpus, job, hp);

  if (gpus != nullptr && budget_w > 0) {
    out[0] = unit_power_w(h.newest(), *gpus) / budget_w;
    out[1] = hp.stats[kS10].mean / budget_w;
    out[2] = hp.stats[kS30].mean / budget_w;
    out[3] = hp.stats[kS120].mean / budget_w;
    out[4] = hp.stats[kSWin].mean / budget_w;
    out[5] = hp.stats[kS10].sd / budget_w;
    out[6] = hp.stats[kS60].peak / budget_w;
    out[7] = hp.stats[kSWin].peak / budget_w;
    out[8] = hp.stats[kSWin].sd / budget_w;
    // Mean power (relative) that keeps the trailing window at the budget horizon_s from now:
    // (window − head span · head mean) / horizon, with the head span as measured (samples).
    const double head_s = static_cast<double>(hp.k[kSHead]) * dt;
    const double m = hp.stats[kSHead].mean / budget_w;
    out[9] = std::clamp((window_s - head_s * m) / horizon_s, -1.0, 3.0);
  }

  const Snapshot& now = h.newest();
  if (job < obs.plant->jobs.size()) {
    // One entry per row with a feature name (the setting as a fraction of the job's range; 0
    // when the job does not expose the knob or has not reported it).
    const JobInfo& ji = obs.plant->jobs[job];
    int f = kObsKnobBase;
    for (int q = 0; q < kNumKnobs; ++q) {
      if (kActuatorTable[q].feature.empty()) continue;
      const int i = f++;
      const KnobRange& r = ji.knob_ranges[q];
      if (!r.available || job >= now.jobs.size() || std::isnan(now.jobs[job].knobs[q])) continue;
      out[i] = r.max > r.min ? (now.jobs[job].knobs[q] - r.min) / (r.max - r.min) : 1.0;
    }
  }
  if (job >= now.jobs.size()) return;

  constexpr int kPhase = kObsKnobBase + kNumKnobFeatures;  // the phase and timing terms
  switch (now.jobs[job].phase) {
    case Phase::kGenerate:
      out[kPhase] = 1;
      break;
    case Phase::kScore:
      out[kPhase + 1] = 1;
      break;
    case Phase::kUpdate:
      out[kPhase + 2] = 1;
      break;
    case Phase::kSync:
      out[kPhase + 3] = 1;
      break;
    default:
      out[kPhase + 4] = 1;
      break;
  }

  const double oldest_s = h.at_age(h.size() - 1).time_s;
  out[kPhase + 5] = (obs.time_s - (hp.boundaries > 0 ? hp.boundary_s[0] : oldest_s)) / kMinuteS;
  out[kPhase + 6] = hp.boundaries > 1 ? (hp.boundary_s[0] - hp.boundary_s[1]) / kMinuteS : 0.0;

  const Snapshot& then = h.at_age(hp.k[kS30] - 1);
  const double span = now.time_s - then.time_s;
  if (span > 0 && job < then.jobs.size()) {
    out[kPhase + 7] =
        (now.jobs[job].tokens_total - then.jobs[job].tokens_total) / span / kTokenRateScale;
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

namespace {
// Next rung up: max(v + step, round(1.25·v)), capped at max.
double ladder_next(const KnobRange& r, double v) {
  const double step = r.step > 0 ? r.step : 1;
  const double g = std::round(v * 1.25 / step) * step;
  return std::min(r.max, std::max(v + step, g));
}
}  // namespace

double knob_level(const KnobRange& r, int level, int levels, bool dense) {
  const double step = r.step > 0 ? r.step : 1;
  auto next = [&](double v) {
    if (dense && v >= kGenConcurrencyDenseLo && v < kGenConcurrencyDenseHi) {
      return std::min(r.max, v + step);
    }
    return ladder_next(r, v);
  };
  int rungs = 1;
  for (double v = r.min; v < r.max; v = next(v)) ++rungs;
  const long want = std::lround(static_cast<double>(level) * (rungs - 1) / (levels - 1));
  double v = r.min;
  for (long i = 0; i < want && v < r.max; ++i) v = next(v);
  return v;
}

double cap_level_w(const GpuInfo& gpu, int level) {
  const int lv = std::clamp(level, 0, kKnobLevels[kPowerCapFactor] - 1);
  const double w = gpu.max_cap_w * (0.5 + 0.05 * lv);
  return std::clamp(w, gpu.min_cap_w, gpu.max_cap_w);
}

namespace {
// The cap level nearest a measured cap (NaN or unknown: the top level).
int nearest_cap_level(const GpuInfo& gpu, double cap_w) {
  if (std::isnan(cap_w)) return kKnobLevels[kPowerCapFactor] - 1;
  int best = 0;
  for (int lv = 1; lv < kKnobLevels[kPowerCapFactor]; ++lv) {
    if (std::abs(cap_level_w(gpu, lv) - cap_w) < std::abs(cap_level_w(gpu, best) - cap_w)) {
      best = lv;
    }
  }
  return best;
}
}  // namespace

int apply_knob_action(const PlantInfo& info, const Snapshot& latest, size_t job,
                      std::span<const double> action, Command& cmd, KnobActionMode mode,
                      unsigned knob_mask) {
  int moved = 0;
  if (job >= info.jobs.size() || job >= cmd.knobs.size()) return 0;
  size_t a = 0;  // action entry of the next selected factor
  for (int q = 0; q < kNumKnobs; ++q) {
    cmd.knobs[job][q] = kUnset;
    if (!(knob_mask & (1u << q))) continue;
    if (a >= action.size()) break;
    const double act = action[a++];
    const KnobRange& r = info.jobs[job].knob_ranges[q];
    if (!r.available) continue;
    double cur = job < latest.jobs.size() ? latest.jobs[job].knobs[q] : kUnset;
    if (std::isnan(cur)) cur = info.jobs[job].default_knobs[q];
    if (std::isnan(cur)) cur = r.max;
    double target = cur;
    if (mode == KnobActionMode::kLevel) {
      const int lv = std::clamp(static_cast<int>(std::lround(act)), 0, kKnobLevels[q] - 1);
      target = knob_level(r, lv, kKnobLevels[q], /*dense=*/q == kDenseFactor);
    } else {
      const int dir = static_cast<int>(std::lround(act)) - 1;
      if (dir == 0) continue;
      target = knob_rung(r, cur, dir);
    }
    if (target != cur) {
      cmd.knobs[job][q] = target;
      ++moved;
    }
  }
  if (!(knob_mask & kPowerCapBit) || a >= action.size()) return moved;
  const double act = action[a];
  const std::vector<int>& gpus = info.jobs[job].gpus;
  if (gpus.empty()) return moved;
  // The level is chosen on the job's first GPU and applied as a share of each GPU's maximum.
  const auto g0 = static_cast<size_t>(gpus.front());
  if (g0 >= info.gpus.size()) return moved;
  const double cur0 = g0 < latest.gpus.size() ? latest.gpus[g0].cap_w : kUnset;
  int level = 0;
  if (mode == KnobActionMode::kLevel) {
    level = std::clamp(static_cast<int>(std::lround(act)), 0, kKnobLevels[kPowerCapFactor] - 1);
  } else {
    level = nearest_cap_level(info.gpus[g0], cur0) + static_cast<int>(std::lround(act)) - 1;
  }
  bool any = false;
  for (int g : gpus) {
    const auto gi = static_cast<size_t>(g);
    if (gi >= info.gpus.size() || gi >= cmd.power_cap_w.size()) continue;
    const double target = cap_level_w(info.gpus[gi], level);
    const double cur = gi < latest.gpus.size() ? latest.gpus[gi].cap_w : kUnset;
    cmd.power_cap_w[gi] = kUnset;
    if (std::isnan(cur) || std::abs(target - cur) > 0.5) {
      cmd.power_cap_w[gi] = target;
      any = true;
    }
  }
  return moved + (any ? 1 : 0);
}

}  // namespace fw::rl
