#include "rl/cap_features.hpp"

#include <algorithm>
#include <cmath>

namespace fw::rl {
namespace {

bool busy_phase(Phase p) {
  switch (p) {
    case Phase::kForward:
    case Phase::kBackward:
    case Phase::kAllToAll:
    case Phase::kAllReduce:
    case Phase::kOptimizer:
    case Phase::kGenerate:
    case Phase::kScore:
    case Phase::kUpdate:
      return true;
    default:
      return false;
  }
}

constexpr double kRateSpanS = 120;

}  // namespace

ObsSpec cap_obs_spec() {
  return {{"power_rel_tdp", "cap_rel_tdp", "headroom_rel", "clock_rel", "clock_gap_rel", "sm_util",
           "temp_rel", "busy_share", "step_rate_rel", "job_size"}};
}

void CapFeatureState::reset(const PlantInfo& info) {
  const size_t n = info.gpus.size();
  max_clock_mhz.assign(n, 0.0);
  best_rate.assign(info.jobs.size(), 0.0);
  sum_p.assign(n, 0.0);
  sum_c.assign(n, 0.0);
  sum_u.assign(n, 0.0);
  n_busy.assign(n, 0);
  n_all.assign(n, 0);
  job_min_clock.assign(info.jobs.size(), 0.0);
}

// Long by design: writes the per-GPU observation in its documented order; one place keeps the order
// visible.
void build_cap_features(const Observation& obs, double span_s, CapFeatureState& st, double* out,
                        uint8_t* busy) {
  const PlantInfo& info = *obs.plant;
  const SnapshotRing& h = *obs.history;
  const size_t ng = info.gpus.size();
  std::fill(st.sum_p.begin(), st.sum_p.end(), 0.0);
  std::fill(st.sum_c.begin(), st.sum_c.end(), 0.0);
  std::fill(st.sum_u.begin(), st.sum_u.end(), 0.0);
  std::fill(st.n_busy.begin(), st.n_busy.end(), 0);
  std::fill(st.n_all.begin(), st.n_all.end(), 0);
  const size_t samples = std::min(h.size(), obs.samples_in(span_s));
  for (size_t age = 0; age < samples; ++age) {
    const Snapshot& s = h.at_age(age);
    for (size_t j = 0; j < info.jobs.size() && j < s.jobs.size(); ++j) {
      const bool b = busy_phase(s.jobs[j].phase);
      for (int gi : info.jobs[j].gpus) {
        const auto g = static_cast<size_t>(gi);
        if (g >= s.gpus.size()) continue;
        ++st.n_all[g];
        const GpuReading& r = s.gpus[g];
        if (std::isfinite(r.sm_clock_mhz))
          st.max_clock_mhz[g] = std::max(st.max_clock_mhz[g], r.sm_clock_mhz);
        if (!b) continue;
        ++st.n_busy[g];
        st.sum_p[g] += std::isfinite(r.power_w) ? r.power_w : 0.0;
        st.sum_c[g] += std::isfinite(r.sm_clock_mhz) ? r.sm_clock_mhz : 0.0;
        st.sum_u[g] += std::isfinite(r.sm_util) ? r.sm_util : 0.0;
      }
    }
  }
  // Job progress: steps over the trailing kRateSpanS, against the best rate seen.
  const Snapshot& now = h.newest();
  const size_t rate_age = std::min(h.size(), obs.samples_in(kRateSpanS)) - 1;
  const Snapshot& then = h.at_age(rate_age);
  const double dt = now.time_s - then.time_s;
  for (size_t j = 0; j < info.jobs.size(); ++j) {
    double mn = 0;
    bool any = false;
    for (int gi : info.jobs[j].gpus) {
      const auto g = static_cast<size_t>(gi);
      if (st.n_busy[g] == 0) continue;
      const double c = st.sum_c[g] / st.n_busy[g];
      mn = any ? std::min(mn, c) : c;
      any = true;
    }
    st.job_min_clock[j] = mn;
    if (j < now.jobs.size() && j < then.jobs.size() && dt >= 0.5 * kRateSpanS) {
      const double rate = (now.jobs[j].steps_total - then.jobs[j].steps_total) / dt;
      st.best_rate[j] = std::max(st.best_rate[j], rate);
    }
  }
  std::fill(busy, busy + ng, uint8_t{0});
  std::fill(out, out + ng * kCapObsDim, 0.0);
  for (size_t j = 0; j < info.jobs.size(); ++j) {
    double rate_rel = 1.0;
    if (j < now.jobs.size() && j < then.jobs.size() && dt > 0 && st.best_rate[j] > 0) {
      const double rate = (now.jobs[j].steps_total - then.jobs[j].steps_total) / dt;
      rate_rel = std::clamp(rate / st.best_rate[j], 0.0, 1.5);
    }
    const double size = std::log2(static_cast<double>(info.jobs[j].gpus.size()) + 1.0) / 7.0;
    for (int gi : info.jobs[j].gpus) {
      const auto g = static_cast<size_t>(gi);
      if (st.n_busy[g] == 0 || g >= now.gpus.size()) continue;
      busy[g] = 1;
      const double tdp = info.gpus[g].tdp_w > 0 ? info.gpus[g].tdp_w : 1.0;
      const double p = st.sum_p[g] / st.n_busy[g];
      const double c = st.sum_c[g] / st.n_busy[g];
      const double fmax = st.max_clock_mhz[g] > 0 ? st.max_clock_mhz[g] : 1.0;
      const double cap =
          std::isfinite(now.gpus[g].cap_w) ? now.gpus[g].cap_w : info.gpus[g].max_cap_w;
      const double temp = std::isfinite(now.gpus[g].temp_c) ? now.gpus[g].temp_c : 50.0;
      double* o = out + g * kCapObsDim;
      o[0] = p / tdp;
      o[1] = cap / tdp;
      o[2] = (cap - p) / tdp;
      o[3] = c / fmax;
      o[4] = (c - st.job_min_clock[j]) / fmax;
      o[5] = st.sum_u[g] / st.n_busy[g];
      o[6] = temp / 100.0;
      o[7] = static_cast<double>(st.n_busy[g]) / std::max(1, st.n_all[g]);
      o[8] = rate_rel;
      o[9] = size;
    }
  }
}

}  // namespace fw::rl
