#include "sim/fleet_start.hpp"

#include <algorithm>
#include <numeric>

#include "core/rng.hpp"

namespace fw::sim {

std::string_view start_strategy_name(StartStrategy s) {
  switch (s) {
    case StartStrategy::kManual:
      return "manual";
    case StartStrategy::kAligned:
      return "aligned";
    case StartStrategy::kRandom:
      return "random";
    case StartStrategy::kStaggered:
      return "staggered";
  }
  return "manual";
}

bool start_strategy_from_name(std::string_view name, StartStrategy& out) {
  for (StartStrategy s : {StartStrategy::kManual, StartStrategy::kAligned, StartStrategy::kRandom,
                          StartStrategy::kStaggered}) {
    if (start_strategy_name(s) == name) {
      out = s;
      return true;
    }
  }
  return false;
}

double estimate_step_period_s(const JobSpec& spec, double dt_s, int steps) {
  JobSpec alone = spec;
  alone.start_offset_s = 0;
  WorkloadState st;
  st.rng = Rng::stream(0, "sim.fleet.period");
  start_job(alone, st, dt_s);
  // Guard: a job that never completes a step within a simulated day reports that day.
  const int64_t max_iters = static_cast<int64_t>(86400.0 / dt_s);
  int64_t k = 0;
  for (; k < max_iters && st.steps_total < steps; ++k) advance_job(alone, st, dt_s, 1.0);
  const double elapsed_s = static_cast<double>(k) * dt_s;
  return st.steps_total > 0 ? elapsed_s / st.steps_total : elapsed_s;
}

std::vector<double> stagger_fractions(const std::vector<JobSpec>& jobs) {
  std::vector<size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return jobs[a].gpus.size() > jobs[b].gpus.size(); });
  std::vector<double> f(jobs.size(), 0.0);
  for (size_t r = 0; r < order.size(); ++r) {
    // Base-2 van der Corput: reverse the bits of r after the binary point.
    double v = 0, scale = 0.5;
    for (size_t n = r; n > 0; n >>= 1, scale *= 0.5) {
      if (n & 1) v += scale;
    }
    f[order[r]] = v;
  }
  return f;
}

std::vector<double> start_offsets_s(const std::vector<JobSpec>& jobs, StartStrategy strategy,
                                    double dt_s, uint64_t seed) {
  std::vector<double> out(jobs.size(), 0.0);
  switch (strategy) {
    case StartStrategy::kManual:
      for (size_t j = 0; j < jobs.size(); ++j) out[j] = jobs[j].start_offset_s;
      break;
    case StartStrategy::kAligned:
      break;
    case StartStrategy::kRandom: {
      const Rng root = Rng::stream(seed, "sim.fleet.start");
      for (size_t j = 0; j < jobs.size(); ++j) {
        Rng r = root.child(j);
        out[j] = r.uniform() * estimate_step_period_s(jobs[j], dt_s);
      }
      break;
    }
    case StartStrategy::kStaggered: {
      const std::vector<double> f = stagger_fractions(jobs);
      for (size_t j = 0; j < jobs.size(); ++j)
        out[j] = f[j] * estimate_step_period_s(jobs[j], dt_s);
      break;
    }
  }
  return out;
}

}  // namespace fw::sim
