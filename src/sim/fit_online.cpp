#include "sim/fit_online.hpp"

#include <algorithm>
#include <cmath>

#include "vocab/actuator_table.hpp"

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
    double tokens = 0, st = 0;  // st: Σ seqs · end time
    for (auto it = track_[j].done.rbegin(); it != track_[j].done.rend(); ++it) {
      if (it->end_s <= now_s - cfg_.window_s) break;
      if (it->end_s > now_s) continue;
      tokens += it->tokens;
      f.seqs += it->seqs;
      st += it->seqs * it->end_s;
      ++f.steps;
    }
    if (f.steps < std::max(1, cfg_.min_steps) || f.seqs <= 0) continue;
    f.fitted = true;
    f.mean_tokens = tokens / f.seqs;
    f.projected_mean_tokens = f.mean_tokens;
    if (cfg_.trend_ahead_s > 0 && f.steps >= std::max(3, cfg_.min_steps)) {
      // Weighted least squares of per-step mean tokens y on end time t (weights: sequences)
      // over the trend window; the line passes through the fit window's (t_bar, mean).
      const double t_bar = st / f.seqs;
      const double tw = cfg_.trend_window_s > 0 ? cfg_.trend_window_s : cfg_.window_s;
      double w = 0, wt = 0, wy = 0;
      for (auto it = track_[j].done.rbegin(); it != track_[j].done.rend(); ++it) {
        if (it->end_s <= now_s - tw) break;
        if (it->end_s > now_s || it->seqs <= 0) continue;
        w += it->seqs;
        wt += it->seqs * it->end_s;
        wy += it->tokens;
      }
      double sxy = 0, sxx = 0;
      if (w > 0) {
        const double tm = wt / w, ym = wy / w;
        for (auto it = track_[j].done.rbegin(); it != track_[j].done.rend(); ++it) {
          if (it->end_s <= now_s - tw) break;
          if (it->end_s > now_s || it->seqs <= 0) continue;
          const double dt = it->end_s - tm;
          sxy += it->seqs * dt * (it->tokens / it->seqs - ym);
          sxx += it->seqs * dt * dt;
        }
      }
      if (sxx > 0) {
        f.slope_tokens_per_s = sxy / sxx;
        const double k = std::max(1.0, cfg_.trend_max_factor);
        f.projected_mean_tokens =
            std::clamp(f.mean_tokens + f.slope_tokens_per_s * (now_s + cfg_.trend_ahead_s - t_bar),
                       f.mean_tokens / k, f.mean_tokens * k);
      }
    }
    f.median_tokens = median_for_clipped_mean(f.projected_mean_tokens, d.completion_sigma,
                                              d.completion_max_tokens);
  }
  return out;
}

size_t OnlineGrpoFit::steps_recorded() const {
  size_t n = 0;
  for (const JobTrack& t : track_) n += t.done.size();
  return n;
}

}  // namespace fw::sim
