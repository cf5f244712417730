#include "sim/fit_online.hpp"

#include <algorithm>
#include <cmath>

#include "control/actuators/actuator_table.hpp"

namespace fw::sim {
namespace {

double phi(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace

double clipped_lognormal_mean(double median, double sigma, double max_tokens) {
  const double mu = std::log(median);
  if (sigma <= 0) return std::clamp(median, 1.0, max_tokens);
  // E[min(max(X, lo), hi)] = lo·P(X < lo) + E[X; lo <= X < hi] + hi·P(X >= hi).
  const double lo = 1.0, hi = std::max(1.0, max_tokens);
  const double a = (std::log(lo) - mu) / sigma, b = (std::log(hi) - mu) / sigma;
  const double partial = std::exp(mu + 0.5 * sigma * sigma) * (phi(b - sigma) - phi(a - sigma));
  return lo * phi(a) + partial + hi * (1.0 - phi(b));
}

double median_for_clipped_mean(double mean, double sigma, double max_tokens) {
  double lo = std::log(1e-3), hi = std::log(std::max(1.0, max_tokens));
  if (mean <= clipped_lognormal_mean(std::exp(lo), sigma, max_tokens)) return std::exp(lo);
  if (mean >= clipped_lognormal_mean(std::exp(hi), sigma, max_tokens)) return std::exp(hi);
  for (int i = 0; i < 80; ++i) {  // the clipped mean grows with the median
    const double mid = 0.5 * (lo + hi);
    (clipped_lognormal_mean(std::exp(mid), sigma, max_tokens) < mean ? lo : hi) = mid;
  }
  return std::exp(0.5 * (lo + hi));
}

OnlineGrpoFit::OnlineGrpoFit(std::vector<DeclaredGrpoJob> jobs, OnlineFitConfig cfg)
    : jobs_(std::move(jobs)), cfg_(cfg), track_(jobs_.size()) {}

void OnlineGrpoFit::observe(const Snapshot& s) {
  constexpr int kGroup = static_cast<int>(Knob::kGroupSize);
  for (const JobReading& r : s.jobs) {
    if (r.job < 0 || r.job >= static_cast<int>(jobs_.size()) || !jobs_[r.job].grpo) continue;
    JobTrack& t = track_[r.job];
    const double group = r.knobs[kGroup];
    if (!t.seen) {
      t.seen = true;
      t.steps = r.steps_total;
      continue;  // the step under way began before the first snapshot
    }
    if (r.steps_total > t.steps + 0.5) {
      // One or more steps ended since the last observation; with several (observations
      // farther apart than a step) the record is not one step and is dropped.
      if (t.armed && r.steps_total < t.steps + 1.5 && t.group > 0) {
        t.done.push_back({s.time_s, r.tokens_total - t.tokens_at_start,
                          static_cast<double>(jobs_[r.job].prompts_per_step) * t.group});
      }
      t.armed = true;
      t.tokens_at_start = r.tokens_total;
      t.group = std::isfinite(group) ? group : 0;  // read after the step began: in force
      t.steps = r.steps_total;
    }
  }
}

std::vector<JobLengthFit> OnlineGrpoFit::fit(double now_s) const {
  std::vector<JobLengthFit> out(jobs_.size());
  for (size_t j = 0; j < jobs_.size(); ++j) {
    JobLengthFit& f = out[j];
    const DeclaredGrpoJob& d = jobs_[j];
    f.median_tokens = d.completion_median_tokens;
    if (!d.grpo) continue;
    double tokens = 0;
    for (auto it = track_[j].done.rbegin(); it != track_[j].done.rend(); ++it) {
      if (it->end_s <= now_s - cfg_.window_s) break;
      if (it->end_s > now_s) continue;
      tokens += it->tokens;
      f.seqs += it->seqs;
      ++f.steps;
    }
    if (f.steps < std::max(1, cfg_.min_steps) || f.seqs <= 0) continue;
    f.fitted = true;
    f.mean_tokens = tokens / f.seqs;
    f.median_tokens =
        median_for_clipped_mean(f.mean_tokens, d.completion_sigma, d.completion_max_tokens);
  }
  return out;
}

size_t OnlineGrpoFit::steps_recorded() const {
  size_t n = 0;
  for (const JobTrack& t : track_) n += t.done.size();
  return n;
}

}  // namespace fw::sim
