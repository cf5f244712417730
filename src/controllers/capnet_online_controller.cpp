#include "controllers/capnet_online_controller.hpp"

#include <algorithm>
#include <cmath>

namespace fw {

Result<CapNetOnlineController> CapNetOnlineController::create(const CapNetOnlineConfig& c) {
  const bool ok = c.job >= 0 && c.stages >= 0 && c.period_s > 0 && c.calib_s >= 0 &&
                  c.settle_s >= 0 && c.settle_s < c.period_s && c.target_loss >= 0 &&
                  c.loss_max > 0 && c.loss_max < 1 && c.horizon_s > 0 && c.band >= 0 &&
                  c.band < (c.target_loss > 0 ? c.target_loss : c.loss_max) && c.gain >= 0 &&
                  c.excess_gain > 0 && c.max_step_frac > 0 && c.max_step_frac <= 1 &&
                  c.probe_frac >= 0 && c.cross_min > 0 && c.cross_gain >= 0 &&
                  c.cross_step_frac >= 0 && c.span_s >= 0;
  if (!ok) {
    return Status::InvalidArgument(
        "capnet-online: needs job >= 0, stages >= 0, period_s > settle_s >= 0, calib_s >= 0, "
        "target_loss >= 0, 0 < loss_max < 1, horizon_s > 0, 0 <= band < the target (or "
        "loss_max), gain, excess_gain > 0, 0 < max_step_frac <= 1");
  }
  return CapNetOnlineController(c);
}

void CapNetOnlineController::reset(const PlantInfo& info) {
  gpus_.clear();
  if (static_cast<size_t>(cfg_.job) < info.jobs.size()) {
    for (int g : info.jobs[cfg_.job].gpus)
      if (g >= 0 && static_cast<size_t>(g) < info.gpus.size()) gpus_.push_back(g);
  }
  const int n = static_cast<int>(gpus_.size());
  stages_ = cfg_.stages > 0 && cfg_.stages < n ? cfg_.stages : std::max(1, n);
  pipes_ = std::max(1, (n + stages_ - 1) / stages_);
  first_busy_s_ = -1;
  last_write_s_ = -1e300;
  calibrated_ = false;
  loss_ = 0;
  iter_s_ = 0;
  target_ = cfg_.target_loss > 0 ? cfg_.target_loss : cfg_.loss_max;
  a_ref_.assign(n, 0.0);
  a_.assign(n, 0.0);
  p_.assign(n, 0.0);
  p_ref_.assign(n, 0.0);
  hi_.assign(n, 0.0);
  lo_.assign(n, 0.0);
  blk_.assign(n, 0.0);
  p_blk_w_ = 0;
  caps_.assign(n, 0.0);
  max_.assign(n, 0.0);
  min_.assign(n, 0.0);
  tdp_.assign(n, 0.0);
  for (int k = 0; k < n; ++k) {
    const GpuInfo& gi = info.gpus[gpus_[k]];
    max_[k] = gi.max_cap_w;
    min_[k] = gi.min_cap_w;
    tdp_[k] = gi.tdp_w;
    caps_[k] = gi.max_cap_w;
  }
  ratio_.assign(pipes_, 1.0);
  xslack_.assign(n, 0.0);
  prev_caps_ = caps_;
  backoff_ = 1;
  lowered_ = false;
  sentinel_.assign(pipes_, 0);
  cmd_.power_cap_w.assign(info.gpus.size(), kUnset);
  cmd_.knobs.clear();
}

namespace {

// The sensor's instantaneous power where the device has one, else its power reading.
double instant_w(const GpuReading& r) {
  return std::isfinite(r.power_instant_w) ? r.power_instant_w : r.power_w;
}

}  // namespace

void CapNetOnlineController::window_means(const Observation& obs, double since_s) {
  std::fill(a_.begin(), a_.end(), 0.0);
  std::fill(p_.begin(), p_.end(), 0.0);
  std::fill(hi_.begin(), hi_.end(), -1e300);
  std::fill(lo_.begin(), lo_.end(), 1e300);
  const SnapshotRing& h = *obs.history;
  int used = 0;
  size_t oldest = 0;
  for (size_t age = 0; age < h.size(); ++age) {
    const Snapshot& s = h.at_age(age);
    if (age > 0 && s.time_s <= since_s) break;
    for (size_t k = 0; k < gpus_.size(); ++k) {
      const GpuReading& r = s.gpus[gpus_[k]];
      p_[k] += std::isfinite(r.power_w) ? r.power_w : 0.0;
      const double w = instant_w(r);
      if (std::isfinite(w)) {
        hi_[k] = std::max(hi_[k], w);
        lo_[k] = std::min(lo_[k], w);
      }
    }
    ++used;
    oldest = age;
  }
  // Mean power from the energy counter over whole iterations: from the newest step boundary
  // back to the first one at or before the window's start that makes the span at least span_s
  // (whole iterations covering the window); with fewer than two boundaries in the history, over
  // the window. Power samples at 2 Hz, or a window shorter than an iteration, alias with it (a
  // pipeline GPU swings between compute and blocking power within an iteration); boundaries
  // are seen at the sample period, so the span misses up to one of it at each end.
  const int job = cfg_.job;
  size_t b_age = 0, a_age = oldest;
  int found = 0;
  for (size_t age = 0; age + 1 < h.size(); ++age) {
    const Snapshot& x = h.at_age(age);
    const Snapshot& y = h.at_age(age + 1);
    if (static_cast<size_t>(job) >= x.jobs.size() || static_cast<size_t>(job) >= y.jobs.size())
      break;
    if (x.jobs[job].steps_total <= y.jobs[job].steps_total) continue;
    if (found == 0) {
      b_age = age;
    } else if (found >= 1) {
      a_age = age;
    }
    ++found;
    if (found >= 2 && x.time_s <= since_s && h.at_age(b_age).time_s - x.time_s >= cfg_.span_s)
      break;
  }
  if (found < 2) {
    b_age = 0;
    a_age = oldest;
  }
  const Snapshot& a = h.at_age(a_age);
  const Snapshot& b = h.at_age(b_age);
  const double span_s = b.time_s - a.time_s;
  for (size_t k = 0; k < gpus_.size(); ++k) {
    p_[k] /= used;
    const double e0 = a.gpus[gpus_[k]].energy_j, e1 = b.gpus[gpus_[k]].energy_j;
    if (span_s >= 1 && std::isfinite(e0) && std::isfinite(e1) && e1 > e0)
      p_[k] = (e1 - e0) / span_s;
  }
}

void CapNetOnlineController::busy_shares() {
  // Busy share: mean power above the blocking power over the compute power (the highest
  // instantaneous reading of the window, at the clock in force) above it.
  for (size_t k = 0; k < gpus_.size(); ++k) {
    const double span = hi_[k] - p_blk_w_;
    a_[k] = span > 1 ? std::clamp((p_[k] - p_blk_w_) / span, 0.0, 1.0) : 0.0;
  }
}

void CapNetOnlineController::measure_iteration(const Observation& obs) {
  const SnapshotRing& h = *obs.history;
  const int job = cfg_.job;
  double first = -1, last = -1;
  int n = 0;
  for (size_t age = 0; age + 1 < h.size(); ++age) {
    const Snapshot& x = h.at_age(age);
    const Snapshot& y = h.at_age(age + 1);
    if (y.time_s < first_busy_s_) break;
    if (static_cast<size_t>(job) >= x.jobs.size() || static_cast<size_t>(job) >= y.jobs.size())
      break;
    if (x.jobs[job].steps_total > y.jobs[job].steps_total) {
      if (last < 0) last = x.time_s;
      first = x.time_s;
      ++n;
    }
  }
  // Mean spacing of the boundaries seen; until two, the span without one bounds it from below.
  const double span_s = n >= 2 ? (last - first) / (n - 1) : obs.time_s - first_busy_s_;
  if (n >= 2) iter_s_ = span_s;
  if (cfg_.target_loss > 0) {
    target_ = cfg_.target_loss;
  } else {
    target_ = std::max(cfg_.band + 1e-4, cfg_.loss_max - span_s / cfg_.horizon_s);
  }
}

const Command& CapNetOnlineController::decide(const Observation& obs) {
  std::fill(cmd_.power_cap_w.begin(), cmd_.power_cap_w.end(), kUnset);
  const Snapshot& now = obs.latest();
  if (gpus_.empty() || static_cast<size_t>(cfg_.job) >= now.jobs.size()) return cmd_;
  if (now.jobs[cfg_.job].phase == Phase::kIdle) return cmd_;
  const double t = obs.time_s;
  if (first_busy_s_ < 0) first_busy_s_ = t;
  const int n = static_cast<int>(gpus_.size());
  if (!calibrated_) {
    if (t < first_busy_s_ + cfg_.calib_s) return cmd_;
    // Reference busy shares and powers: every sample since the job's first busy one (uncapped
    // throughout).
    window_means(obs, first_busy_s_);
    measure_iteration(obs);
    // Blocking power: the median over the job's GPUs of each one's lowest reading (every
    // pipeline stage waits some of the iteration; the median ignores one that never did).
    std::copy(lo_.begin(), lo_.end(), blk_.begin());
    std::nth_element(blk_.begin(), blk_.begin() + n / 2, blk_.end());
    p_blk_w_ = std::isfinite(blk_[n / 2]) && blk_[n / 2] < 1e299 ? blk_[n / 2] : 0.0;
    busy_shares();
    a_ref_ = a_;
    p_ref_ = p_;
    for (int p = 0; p < pipes_; ++p) {
      int best = p * stages_;
      for (int k = p * stages_; k < std::min(n, (p + 1) * stages_); ++k)
        if (a_ref_[k] > a_ref_[best]) best = k;
      sentinel_[p] = best;
    }
    calibrated_ = true;
    return cmd_;
  }
  if (iter_s_ <= 0) measure_iteration(obs);  // no two step boundaries in the calibration yet
  window_means(obs, std::max(t - cfg_.period_s, last_write_s_) + cfg_.settle_s);
  busy_shares();
  // Loss: the smallest iteration-time ratio over pipelines whose sentinel is uncapped (its
  // compute power is fixed: its power above blocking is in proportion to its busy share).
  double rmin = 1e300;
  int ref = -1;
  for (int p = 0; p < pipes_; ++p) {
    const int s = sentinel_[p];
    const double now_w = p_[s] - p_blk_w_, ref_w = p_ref_[s] - p_blk_w_;
    ratio_[p] = now_w > 1e-9 && ref_w > 0 ? ref_w / now_w : 1e300;
    if (caps_[s] >= max_[s] - 0.5 && ratio_[p] < rmin) {
      rmin = ratio_[p];
      ref = p;
    }
  }
  if (ref < 0) return cmd_;  // no pipeline to read the step time from
  loss_ = rmin - 1;
  double amax = 0;
  for (int k = 0; k < n; ++k) amax = std::max(amax, a_[k]);
  if (!(amax > 0)) return cmd_;
  // Cross-pipeline slack: GPU g against the most active GPU of its stage in any pipeline
  // (a pipeline that waits at the all-reduce for a straggler shows it on every stage).
  for (int k = 0; k < n; ++k) {
    const int st = k % stages_;
    double top = 0;
    for (int q = st; q < n; q += stages_) top = std::max(top, a_[q]);
    xslack_[k] = top > 0 ? std::max(0.0, 1 - a_[k] / top) : 0.0;
  }
  const double target = target_;
  if (loss_ <= target + cfg_.band) {
    if (lowered_) backoff_ = std::min(1.0, backoff_ * 1.5);  // the last step held
    prev_caps_ = caps_;
    const bool under = loss_ < target - cfg_.band;
    const double scale = under ? std::min(1.0, (target - loss_) / target) : 0.0;
    bool any = false;
    for (int k = 0; k < n; ++k) {
      const int p = k / stages_;
      const bool waits = pipes_ > 1 && p != ref && xslack_[k] >= cfg_.cross_min;
      // A pipeline's most active GPU sets its pace: it stays, but where its pipeline waits at
      // the all-reduce for a slower one (the reference pipeline's is never lowered).
      if (k == sentinel_[p] && !waits) continue;
      const double slack = std::max(0.0, 1 - a_[k] / amax);
      double step = scale * (cfg_.gain * slack + cfg_.probe_frac) * p_[k];
      step = std::min(cfg_.max_step_frac * tdp_[k], step);
      if (waits) {
        step += std::min(cfg_.cross_step_frac * tdp_[k], cfg_.cross_gain * xslack_[k] * p_[k]);
      }
      step *= backoff_;
      if (!(step > 0)) continue;
      caps_[k] = std::max(min_[k], std::min(caps_[k], p_[k] / (1 - 0.015)) - step);
      any = true;
    }
    lowered_ = any;
    if (!any) return cmd_;
  } else if (lowered_) {
    // The last lowering moved the step time past the band: undo it, and halve the next step.
    caps_ = prev_caps_;
    backoff_ *= 0.5;
    lowered_ = false;
  } else {
    const double f = std::min(1.0, cfg_.excess_gain * (loss_ - target) / target);
    double smax = 1e-9;
    for (int k = 0; k < n; ++k)
      if (caps_[k] < max_[k]) smax = std::max(smax, 1 - a_[k] / amax);
    for (int k = 0; k < n; ++k) {
      if (caps_[k] >= max_[k]) continue;
      const double w = std::clamp(1 - (1 - a_[k] / amax) / smax, 0.2, 1.0);
      caps_[k] = std::min(max_[k], caps_[k] + std::max(1.0, f * w * (max_[k] - caps_[k])));
    }
  }
  for (int k = 0; k < n; ++k) cmd_.power_cap_w[gpus_[k]] = caps_[k];
  last_write_s_ = t;
  return cmd_;
}

}  // namespace fw
