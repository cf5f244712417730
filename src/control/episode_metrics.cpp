#include "control/episode_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fw {

EpisodeMetrics::EpisodeMetrics(const PlantInfo& info, const BudgetSchedule& budget,
                               std::vector<double> windows_s)
    : budget_(budget),
      units_(make_budget_units(
          info, budget.entries.empty() ? BudgetScope::kNode : budget.entries.front().budget.scope)),
      windows_s_(std::move(windows_s)),
      node_acc_(kNodeWindowS, std::numeric_limits<double>::infinity()) {
  node_acc_.keep_means(true);
  for (double w : windows_s_) {
    for (size_t u = 0; u < units_.size(); ++u) acc_.emplace_back(w, 1.0);
  }
  first_tokens_.assign(info.jobs.size(), 0);
  last_tokens_ = first_tokens_;
  first_energy_.assign(info.gpus.size(), 0);
  last_energy_ = first_energy_;
}

void EpisodeMetrics::add(const Snapshot& s, double dt_s) {
  if (!started_) {
    started_ = true;
    first_t_ = s.time_s;
    for (size_t j = 0; j < first_tokens_.size() && j < s.jobs.size(); ++j) {
      first_tokens_[j] = s.jobs[j].tokens_total;
    }
    for (size_t g = 0; g < first_energy_.size(); ++g) {
      first_energy_[g] = g < s.gpus.size() ? s.gpus[g].energy_j : kUnset;
      counters_ok_ = counters_ok_ && std::isfinite(first_energy_[g]);
    }
  }
  last_t_ = s.time_s;
  last_dt_ = dt_s;
  for (size_t j = 0; j < last_tokens_.size() && j < s.jobs.size(); ++j) {
    last_tokens_[j] = s.jobs[j].tokens_total;
  }
  double total_w = 0;
  for (size_t g = 0; g < last_energy_.size(); ++g) {
    last_energy_[g] = g < s.gpus.size() ? s.gpus[g].energy_j : kUnset;
    counters_ok_ = counters_ok_ && std::isfinite(last_energy_[g]);
    const double p = g < s.gpus.size() ? s.gpus[g].power_w : kUnset;
    if (std::isfinite(p)) total_w += p;
  }
  integrated_j_ += pending_j_;  // the previous sample's energy: every sample but the last
  pending_j_ = total_w * dt_s;
  power_sum_w_ += total_w;
  ++samples_;
  node_acc_.add(s.time_s, total_w, dt_s);
  const double budget_w = budget_.entries.empty() ? 0 : budget_.at(s.time_s).watts;
  if (!(budget_w > 0)) return;
  const size_t nu = units_.size();
  if (slide_.window() == 0) {  // first judged sample: size the ring to the budget's window
    const double window_s = budget_.entries.front().budget.window_s;
    slide_.reset(WindowJudge::Rule::kSliding, nu, WindowJudge::samples_per_window(window_s, dt_s));
  }
  for (size_t u = 0; u < nu; ++u) {
    const double ratio = unit_power_w(s, units_.units[u]) / budget_w;
    for (size_t w = 0; w < windows_s_.size(); ++w) acc_[w * nu + u].add(s.time_s, ratio, dt_s);
    slide_.set(u, ratio);
  }
  if (slide_.advance()) {
    for (size_t u = 0; u < nu; ++u) {
      ++slide_checks_;
      if (slide_.mean(u) > 1.0) ++slide_over_;
    }
  }
}

EpisodeResult EpisodeMetrics::finish(const LimiterStats& limiter) const {
  EpisodeResult r;
  r.limiter = limiter;
  r.windows_s = windows_s_;
  if (!started_) return r;
  r.duration_s = last_t_ - first_t_ + last_dt_;
  for (size_t j = 0; j < last_tokens_.size(); ++j) r.tokens += last_tokens_[j] - first_tokens_[j];
  if (counters_ok_) {
    for (size_t g = 0; g < last_energy_.size(); ++g)
      r.energy_j += last_energy_[g] - first_energy_[g];
  } else {
    r.energy_j = integrated_j_;
  }
  r.tokens_per_mwh = r.energy_j > 0 ? r.tokens / (r.energy_j / 3.6e9) : 0;
  r.mean_power_w = samples_ ? power_sum_w_ / samples_ : 0;
  const size_t nu = units_.size();
  for (size_t w = 0; w < windows_s_.size(); ++w) {
    int64_t windows = 0, violations = 0;
    double worst = 0;
    r.windows_judged.push_back(0);
    for (size_t u = 0; u < nu; ++u) {
      const WindowStats st = acc_[w * nu + u].finish();
      windows += st.windows;
      violations += st.violations;
      worst = std::max(worst, st.peak_mean_w);
    }
    r.windows_judged.back() = windows;
    // No window judged (the window is longer than the run): no verdict, NaN (null in JSON).
    r.violation_rate.push_back(windows ? static_cast<double>(violations) / windows
                                       : std::numeric_limits<double>::quiet_NaN());
    r.worst_window_ratio.push_back(worst);
  }
  r.node_window_means_w = node_acc_.means();
  r.sliding_violation_rate =
      slide_checks_ ? static_cast<double>(slide_over_) / static_cast<double>(slide_checks_) : 0;
  return r;
}

}  // namespace fw
