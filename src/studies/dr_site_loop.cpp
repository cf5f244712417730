#include "studies/dr_site_loop.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fw::studies {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  return v[m];
}

// Robust sd (1.4826 · median absolute deviation) and median of the last `keep` values.
void robust(const std::vector<double>& all, size_t keep, double& med, double& sd) {
  std::vector<double> v(all.end() - static_cast<std::ptrdiff_t>(std::min(keep, all.size())),
                        all.end());
  med = median(v);
  for (double& x : v) x = std::fabs(x - med);
  sd = 1.4826 * median(v);
}

constexpr size_t kNoiseBlocks = 60;  // one hour of 1-minute blocks
constexpr double kBlockS = 60;
constexpr double kDipRatio = 0.8;  // a node under 80 % of its predicted draw (10 s) is in a dip

}  // namespace

void DrTrailing::push(double x) {
  q_.push_back(x);
  sum_ += x;
  if (q_.size() > n_) {
    sum_ -= q_.front();
    q_.pop_front();
  }
}

DrSiteLoop::DrSiteLoop(const DrEvent& ev, const std::vector<DrNode>& nodes, DrLoopOptions o)
    : ev_(ev), nodes_(nodes), o_(o) {
  const double dt = ev.sample_period_s;
  auto n = [&](double s) { return static_cast<size_t>(std::max(1.0, std::round(s / dt))); };
  const size_t nn = nodes.size();
  m10_.assign(nn, DrTrailing(n(10)));
  p10_.assign(nn, DrTrailing(n(10)));
  m30_.assign(nn, DrTrailing(n(30)));
  s30_.assign(nn, DrTrailing(n(30)));
  m60_.assign(nn, DrTrailing(n(60)));
  s60_.assign(nn, DrTrailing(n(60)));
  integral_w_.assign(nn, 0);
  share_w_.assign(nn, 0);
  holdoff_until_s_.assign(nn, -1);
  cap_w_.resize(nn);
  job_nodes_.assign(ev.jobs.size(), 0);
  for (size_t i = 0; i < nn; ++i) {
    ++job_nodes_[nodes[i].job];
    cap_w_[i] = ev.jobs[nodes[i].job].curve.back().cap_w;
  }
  for (const auto& j : ev.jobs) uncapped_w_ += j.gpus * j.curve.back().power_w;
  double tier_sum = 0;
  for (const auto& j : ev.jobs) tier_sum += j.tier_min;
  for (const auto& j : ev.jobs) {
    weight_.push_back(tier_sum > 0 ? j.tier_min / tier_sum : 1.0 / ev.jobs.size());
  }
  progress_.assign(ev.jobs.size(), 0);
  pause_.assign(ev.jobs.size(), false);
  Rng rng = Rng::stream(ev.seed, "dr.loop.blocks");
  block_offset_s_ = rng.uniform(0, kBlockS);
  baseline_w_ = ev.baseline_measured ? 0 : ev.baseline_w;
}

double DrSiteLoop::hold_floor(int j, double t) const {
  // Least performance for the rest of the event that keeps the job's whole-run mean at
  // tier_min + 0.005, assuming full throughput after the release's midpoint.
  const auto& job = ev_.jobs[j];
  const double D = ev_.duration_s;
  const double back_s = ev_.end_s + 0.5 * ev_.release_ramp_s;
  const double left_s = std::max(1.0, back_s - t);
  const double after_s = std::max(0.0, D - std::max(t, back_s));
  const double need = std::min(1.0, job.tier_min + 0.005) * D - progress_[j] - after_s;
  return std::clamp(need / left_s, 0.0, 1.0);
}

double DrSiteLoop::pause_slack(int j, double until_s) const {
  const double D = ev_.duration_s;
  const double rest = std::max(0.0, D - until_s - ev_.resume_s);
  return (progress_[j] + rest) / D - (ev_.jobs[j].tier_min + 0.01);
}

void DrSiteLoop::update_noise(double t, double site_w) {
  if (t < block_offset_s_) return;
  if (block_start_s_ < 0) block_start_s_ = block_offset_s_;
  const bool controlled = planned_w_ > 0;
  if (t >= block_start_s_ + kBlockS) {
    if (block_n_ > 0) {
      const double site = block_site_ / block_n_;
      if (!block_controlled_) {
        pre_blocks_.push_back(site);
      } else if (controlled) {
        err_blocks_.push_back(site - block_plan_ / block_n_);
      }
    }
    block_start_s_ += kBlockS;
    block_site_ = block_plan_ = 0;
    block_n_ = 0;
    block_controlled_ = controlled;
  }
  if (block_n_ > 0 && block_controlled_ != controlled) {
    // A block that straddles the start or end of control is dropped.
    block_controlled_ = controlled;
    block_site_ = block_plan_ = 0;
    block_n_ = 0;
  }
  block_site_ += site_w;
  block_plan_ += planned_w_;
  ++block_n_;
  // Estimate: the tracking error once 10 blocks of it exist, else the uncapped site's spread.
  double med = 0, sd = 0;
  if (err_blocks_.size() >= 10) {
    robust(err_blocks_, kNoiseBlocks, med, sd);
    sigma_w_ = sd + std::max(0.0, med);
  } else if (pre_blocks_.size() >= 5) {
    robust(pre_blocks_, kNoiseBlocks, med, sd);
    sigma_w_ = sd;
  } else {
    sigma_w_ = 0.01 * std::max(site_w, baseline_w_);  // prior before 5 minutes of data
  }
  sigma_w_ = std::max(sigma_w_, 1e-3 * baseline_w_);
}

void DrSiteLoop::pausing(double t, double split_w, const std::vector<double>& floor_w) {
  if (t - last_action_s_ < o_.stagger_s) return;
  const int nj = static_cast<int>(ev_.jobs.size());
  auto slack = [&](int j, double until_s) { return pause_slack(j, until_s); };
  double floors = 0;
  for (int j = 0; j < nj; ++j) {
    if (!pause_[j]) floors += floor_w[j];
  }
  const bool releasing = t >= ev_.end_s;
  // A paused job whose budget runs out soon, and whose return would not fit: another job
  // pauses first (make before break), then it resumes.
  auto candidate = [&]() {
    int best = -1;
    double best_slack = 0;
    for (int j = 0; j < nj; ++j) {
      if (pause_[j] || !ev_.jobs[j].pausable) continue;
      // A job that cannot afford the rest of the event may still pause for a while: it resumes
      // when its budget runs out (staggered with the others).
      if (slack(j, t + 10 * o_.stagger_s) < 0) continue;
      const double s = slack(j, ev_.end_s);
      if (best < 0 || s > best_slack) {
        best = j;
        best_slack = s;
      }
    }
    return best;
  };
  auto pause = [&](int j) {
    pause_[j] = true;
    last_action_s_ = t;
    pauses_.push_back({j, t, -1});
  };
  for (int j = 0; j < nj && !releasing; ++j) {
    if (!pause_[j] || slack(j, t + 2 * o_.stagger_s) >= 0) continue;
    if (floors + floor_w[j] <= split_w) continue;
    const int k = candidate();
    if (k >= 0) {
      pause(k);
      return;
    }
  }
  // Resume: budget exhausted, release begun, or the job fits again.
  for (int j = 0; j < nj; ++j) {
    if (!pause_[j]) continue;
    const bool broke = slack(j, t + o_.stagger_s) < 0;
    const bool fits = floors + 1.1 * floor_w[j] <= split_w;
    if (broke || releasing || fits) {
      pause_[j] = false;
      last_action_s_ = t;
      for (auto& p : pauses_) {
        if (p.job == j && p.to_s < 0) p.to_s = t;
      }
      return;
    }
  }
  if (releasing || floors <= split_w) return;
  const int k = candidate();
  if (k >= 0) pause(k);
}

DrCommand DrSiteLoop::update(const DrReadings& r) {
  const double t = r.time_s;
  const double dt = ev_.sample_period_s;
  const size_t nn = nodes_.size();
  const int nj = static_cast<int>(ev_.jobs.size());
  double site = 0;
  for (double p : r.node_power_w) site += p;
  for (int j = 0; j < nj; ++j) progress_[j] += r.job_t_rel[j] * dt;
  const double start = ev_.steps.front().start_s;
  if (ev_.baseline_measured && t <= start) {
    baseline_sum_ += site;
    ++baseline_n_;
    baseline_w_ = baseline_sum_ / static_cast<double>(baseline_n_);
  }
  update_noise(t, site);
  for (size_t i = 0; i < nn; ++i) {
    const auto& job = ev_.jobs[nodes_[i].job];
    m10_[i].push(r.node_power_w[i]);
    m30_[i].push(r.node_power_w[i]);
    m60_[i].push(r.node_power_w[i]);
    p10_[i].push(nodes_[i].gpus * std::min(cap_w_[i], dr_power_at(job, cap_w_[i])));
  }
  DrCommand cmd;
  cmd.node_cap_w.assign(nn, std::numeric_limits<double>::quiet_NaN());
  const double release_end_s = ev_.end_s + ev_.release_ramp_s;
  const double down = ev_.ramp_down_w_per_s, up = ev_.ramp_up_w_per_s;
  // After the grid's release, a rise limit keeps the loop on until the split is back at the
  // jobs' uncapped draw (step 6).
  const bool rising = up > 0 && cmd_w_ >= 0 && (cmd_w_ < uncapped_w_ || integral_sum_w_ != 0);
  const bool active = t >= start && (t < release_end_s || rising);
  holdable_w_ = holdable_rule_w_ = std::numeric_limits<double>::quiet_NaN();
  shortfall_w_ = ramp_shortfall_w_ = 0;
  if (!active) {
    for (size_t i = 0; i < nn; ++i) {
      cap_w_[i] = ev_.jobs[nodes_[i].job].curve.back().cap_w;
      cmd.node_cap_w[i] = cap_w_[i];
      integral_w_[i] = 0;
      share_w_[i] = r.node_power_w[i];
      s30_[i].push(share_w_[i]);
      s60_[i].push(share_w_[i]);
    }
    for (int j = 0; j < nj; ++j) {
      if (pause_[j]) {
        pause_[j] = false;
        for (auto& p : pauses_) {
          if (p.job == j && p.to_s < 0) p.to_s = t;
        }
      }
    }
    cmd.job_pause = pause_;
    planned_w_ = 0;
    cmd_w_ = -1;
    if (std::isfinite(commanded_w_)) {  // the loop goes off: back to uncapped caps at once
      commanded_rise_ = std::max(commanded_rise_, (uncapped_w_ - commanded_w_) / dt);
      commanded_fall_ = std::max(commanded_fall_, (commanded_w_ - uncapped_w_) / dt);
    }
    commanded_w_ = std::numeric_limits<double>::quiet_NaN();
    setpoint_w_ = 0;
    return cmd;
  }
  const double B = baseline_w_;
  const double line = B * (1 - dr_depth_at(ev_, t));
  double goal = line;
  if (t < ev_.end_s) {
    double depth = 0;
    for (const auto& s : ev_.steps) {
      if (t >= s.start_s) depth = s.depth;
    }
    goal = B * (1 - depth);
  }
  setpoint_w_ = std::min(goal, line);
  margin_w_ = (std::isnan(o_.z) ? 2.5 : o_.z) * sigma_w_;
  // Step 6: the split, slew-limited from where the site is at the event's start; past the
  // grid's release it rises (at the limit) to the jobs' uncapped draw.
  if (cmd_w_ < 0) {
    double site60 = 0;
    for (size_t i = 0; i < nn; ++i) site60 += m60_[i].mean();
    cmd_w_ = std::max(uncapped_w_, site60);
    commanded_w_ = cmd_w_;  // where the commanded target starts from
  }
  const double want_w = t >= release_end_s ? uncapped_w_ : std::max(0.0, setpoint_w_ - margin_w_);
  double next_w = want_w;
  if (down > 0) next_w = std::max(next_w, cmd_w_ - down * dt);
  if (up > 0) next_w = std::min(next_w, cmd_w_ + up * dt);
  const double cmd_move_w = next_w - cmd_w_;
  cmd_w_ = next_w;
  const double split_w = std::max(0.0, cmd_w_);

  // The split over the running jobs.
  std::vector<allocation::Job> jobs;
  std::vector<int> idx;
  std::vector<double> floor_w(nj, 0);
  for (int j = 0; j < nj; ++j) {
    const auto& spec = ev_.jobs[j];
    allocation::Job a;
    a.name = spec.name;
    const double w = weight_[j];
    for (const auto& c : spec.curve) {
      const double p = c.power_w * spec.gpus;
      if (!a.curve.empty() && p <= a.curve.back().power_w) continue;
      a.curve.push_back({p, std::max(1e-12, w * c.t_rel)});
    }
    const double h = hold_floor(j, t);
    a.max_slowdown = std::clamp(1 - h, 0.0, 1.0);
    floor_w[j] = allocation::floor_w(a);
    if (pause_[j]) continue;
    jobs.push_back(std::move(a));
    idx.push_back(j);
  }
  std::vector<double> job_w(nj, 0);
  if (!jobs.empty()) {
    auto alloc = allocation::allocate(jobs, split_w, o_.method);
    if (!alloc.feasible) ++infeasible_;
    for (size_t k = 0; k < idx.size(); ++k) job_w[idx[k]] = alloc.power_w[k];
  }
  pausing(t, split_w, floor_w);
  planned_w_ = 0;
  for (int j = 0; j < nj; ++j) {
    if (!pause_[j]) planned_w_ += job_w[j];
  }
  // Step 7: the deepest holdable draw now, as configured or by pausing what may stay paused.
  if (t < ev_.end_s) {
    double configured = 0, by_rule = 0;
    for (int j = 0; j < nj; ++j) {
      if (!pause_[j]) configured += floor_w[j];
      if (!(ev_.jobs[j].pausable && pause_slack(j, ev_.end_s) >= 0)) by_rule += floor_w[j];
    }
    holdable_rule_w_ = by_rule;
    holdable_w_ = std::min(configured, by_rule);
    shortfall_w_ = std::max(0.0, holdable_w_ - line);
    ramp_shortfall_w_ = std::max(0.0, cmd_w_ - line - ev_.tolerance_frac * B);
  }

  // Node controllers: the integrals first (their summed move within what the split's move
  // leaves of the ramp limits, step 6), then the caps.
  std::vector<double> next_integral_w(nn, 0);
  std::vector<bool> running(nn, false);
  double integral_move_w = 0;
  for (size_t i = 0; i < nn; ++i) {
    const int j = nodes_[i].job;
    const auto& job = ev_.jobs[j];
    const double node_max = nodes_[i].gpus * job.curve.back().power_w;
    share_w_[i] = job_w[j] * nodes_[i].gpus / job.gpus;
    s30_[i].push(share_w_[i]);
    s60_[i].push(share_w_[i]);
    if (pause_[j] || r.job_paused[j]) continue;
    running[i] = true;
    if (o_.freeze_on_dips && m10_[i].full() && m10_[i].mean() < kDipRatio * p10_[i].mean()) {
      holdoff_until_s_[i] = t + 60;
    }
    double e = std::min(s30_[i].mean() - m30_[i].mean(), s60_[i].mean() - m60_[i].mean());
    if (t < holdoff_until_s_[i]) e = std::min(e, 0.0);
    const bool at_max = cap_w_[i] >= job.curve.back().cap_w - 1e-9;
    const bool at_min = cap_w_[i] <= job.curve.front().cap_w + 1e-9;
    next_integral_w[i] = integral_w_[i];
    if (t >= release_end_s) {
      next_integral_w[i] = 0;  // handing the caps back: the corrections wind out (step 6)
    } else if (!(at_max && e > 0) && !(at_min && e < 0)) {
      next_integral_w[i] =
          std::clamp(integral_w_[i] + (std::isnan(o_.ki_per_s) ? 1.0 / 60 : o_.ki_per_s) * e * dt,
                     -0.15 * node_max, 0.15 * node_max);
    }
    integral_move_w += next_integral_w[i] - integral_w_[i];
  }
  double scale = 1;
  if (down > 0 && integral_move_w < 0) {
    scale = std::clamp((-down * dt - cmd_move_w) / integral_move_w, 0.0, 1.0);
  } else if (up > 0 && integral_move_w > 0) {
    scale = std::clamp((up * dt - cmd_move_w) / integral_move_w, 0.0, 1.0);
  }
  double integral_sum_w = 0;
  for (size_t i = 0; i < nn; ++i) {
    const auto& job = ev_.jobs[nodes_[i].job];
    if (!running[i]) {
      integral_w_[i] = 0;
      cap_w_[i] = dr_cap_for(job, share_w_[i] / nodes_[i].gpus);
    } else {
      integral_w_[i] += scale * (next_integral_w[i] - integral_w_[i]);
      integral_sum_w += integral_w_[i];
      cap_w_[i] = dr_cap_for(job, (share_w_[i] + integral_w_[i]) / nodes_[i].gpus);
    }
    cmd.node_cap_w[i] = cap_w_[i];
  }
  const double commanded_before_w = commanded_w_;
  integral_sum_w_ = integral_sum_w;
  commanded_w_ = cmd_w_ + integral_sum_w;
  commanded_fall_ = std::max(commanded_fall_, (commanded_before_w - commanded_w_) / dt);
  commanded_rise_ = std::max(commanded_rise_, (commanded_w_ - commanded_before_w) / dt);
  cmd.job_pause = pause_;
  return cmd;
}

}  // namespace fw::studies
