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
  first_steps_.assign(info.jobs.size(), 0);
  done_steps_ = first_steps_;
  done_tokens_ = first_steps_;
  const double window_s = budget.entries.empty() ? 0 : budget.entries.front().budget.window_s;
  step_counters_.resize(info.jobs.size());
  for (size_t j = 0; j < info.jobs.size() && window_s > 0; ++j) {
    const bool own = j < units_.units_of_job.size() && !units_.units_of_job[j].empty();
    const size_t n = own ? units_.units_of_job[j].size() : units_.size();
    for (size_t i = 0; i < n; ++i) step_counters_[j].emplace_back(1.0, window_s);
  }
}

void EpisodeMetrics::add_progress(const Snapshot& s, double budget_w) {
  for (size_t j = 0; j < first_steps_.size() && j < s.jobs.size(); ++j) {
    const double steps = std::floor(s.jobs[j].steps_total + 1e-9);
    if (samples_ == 1) first_steps_[j] = done_steps_[j] = steps;
    if (steps > done_steps_[j]) {
      done_steps_[j] = steps;
      done_tokens_[j] = s.jobs[j].tokens_total - first_tokens_[j];
    }
    if (!(budget_w > 0)) continue;
    const bool own = j < units_.units_of_job.size() && !units_.units_of_job[j].empty();
    for (size_t i = 0; i < step_counters_[j].size(); ++i) {
      const size_t u = own ? static_cast<size_t>(units_.units_of_job[j][i]) : i;
      step_counters_[j][i].add(s.time_s, unit_power_w(s, units_.units[u]) / budget_w,
                               s.jobs[j].steps_total);
    }
  }
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
  add_progress(s, budget_w);
  if (!(budget_w > 0)) return;
  const size_t nu = units_.size();
  if (slide_.window() == 0) {  // first judged sample: size the judges to the budget's window
    const double window_s = budget_.entries.front().budget.window_s;
    const size_t n = WindowJudge::samples_per_window(window_s, dt_s);
    slide_.reset(WindowJudge::Rule::kSliding, nu, n);
    offset_.resize(kWindowOffsets);
    for (int k = 0; k < kWindowOffsets; ++k) {
      offset_[k].reset(WindowJudge::Rule::kTumbling, nu, n);
      skip_.push_back(static_cast<size_t>(k) * n / kWindowOffsets);
    }
    offset_windows_.assign(kWindowOffsets, 0);
    offset_over_.assign(kWindowOffsets, 0);
  }
  for (size_t u = 0; u < nu; ++u) {
    const double ratio = unit_power_w(s, units_.units[u]) / budget_w;
    for (size_t w = 0; w < windows_s_.size(); ++w) acc_[w * nu + u].add(s.time_s, ratio, dt_s);
    slide_.set(u, ratio);
    for (int k = 0; k < kWindowOffsets; ++k) {
      if (static_cast<size_t>(judged_samples_) >= skip_[k]) offset_[k].set(u, ratio);
    }
  }
  for (int k = 0; k < kWindowOffsets; ++k) {
    if (static_cast<size_t>(judged_samples_) < skip_[k] || !offset_[k].advance()) continue;
    for (size_t u = 0; u < nu; ++u) {
      ++offset_windows_[k];
      if (offset_[k].mean(u) > 1.0) ++offset_over_[k];
    }
  }
  ++judged_samples_;
  if (slide_.advance()) {
    for (size_t u = 0; u < nu; ++u) {
      ++slide_checks_;
      if (slide_.mean(u) > 1.0) ++slide_over_;
      slide_worst_ = std::max(slide_worst_, slide_.mean(u));
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
  r.worst_sliding_ratio = slide_worst_;
  // Offset rates: complete windows, plus the open one when it holds at least half a window
  // (as the aligned rate judges a trailing partial window).
  for (size_t k = 0; k < offset_.size(); ++k) {
    int64_t windows = offset_windows_[k], over = offset_over_[k];
    if (offset_[k].open_judged()) {
      for (size_t u = 0; u < nu; ++u) {
        ++windows;
        if (offset_[k].open_mean(u) > 1.0) ++over;
      }
    }
    const double rate = windows ? static_cast<double>(over) / static_cast<double>(windows) : 0;
    r.offset_violation_rates.push_back(rate);
    r.offset_violation_rate += rate / static_cast<double>(offset_.size());
  }
  for (size_t j = 0; j < done_steps_.size(); ++j) {
    r.completed_tokens += done_tokens_[j];
    r.completed_steps += done_steps_[j] - first_steps_[j];
    int64_t steps = 0, violating = 0;
    for (const StepViolationCounter& c : step_counters_[j]) {
      steps = std::max(steps, c.stats().steps);
      violating = std::max(violating, c.stats().violating);
    }
    r.steps_judged += steps;
    r.steps_violating += violating;
  }
  return r;
}

}  // namespace fw
