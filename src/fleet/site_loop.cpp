#include "fleet/site_loop.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace fw::fleet {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

// The model's draw over the last span_s, at the splits then in force.
double SiteLoop::mean_model(double now_s, double span_s, const SiteDrawModel& model) const {
  double sum = 0;
  int n = 0;
  for (auto it = samples_.rbegin(); it != samples_.rend() && it->t > now_s - span_s; ++it) {
    if (it->split > 0) {
      sum += model(it->split);
      ++n;
    }
  }
  return n ? sum / n : model(split_w_);
}

double SiteLoop::trailing_mean(double now_s, double span_s) const {
  double sum = 0;
  int n = 0;
  for (auto it = samples_.rbegin(); it != samples_.rend() && it->t > now_s - span_s; ++it) {
    sum += it->measured;
    ++n;
  }
  return n ? sum / n : 0;
}

// Whether the line stayed steady (or far above the site) over samples after from_s, and they
// cover from_s.
bool SiteLoop::steady_since(double from_s) const {
  if (samples_.empty() || samples_.front().t > from_s) return false;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, top = -lo;
  for (const Sample& s : samples_) {
    if (s.t < from_s) continue;
    lo = std::min(lo, s.line);
    hi = std::max(hi, s.line);
    top = std::max(top, s.measured);
  }
  return hi - lo <= 0.005 * std::max(hi, 1.0) || lo >= 1.1 * top;
}

void SiteLoop::noise(double now_s) {
  const double span = 1.5 * o_.judge_s;
  // One sample at or before now - span stays: it shows the window is covered.
  while (samples_.size() > 1 && samples_[1].t <= now_s - span) samples_.pop_front();
  while (!means_.empty() && means_.front().t < now_s - o_.judge_s) means_.pop_front();
  while (!diffs_.empty() && diffs_.front().t < now_s - o_.noise_window_s) diffs_.pop_front();
  if (steady_since(now_s - span)) {
    const double m = trailing_mean(now_s, o_.judge_s);
    // The steady mean closest to half a window ago.
    const double want = now_s - 0.5 * o_.judge_s;
    const Mean* old = nullptr;
    for (const Mean& x : means_) {
      if (!old || std::abs(x.t - want) < std::abs(old->t - want)) old = &x;
    }
    if (old && std::abs(old->t - want) <= std::max(1.5 * o_.period_s, 0.1 * o_.judge_s)) {
      diffs_.push_back({now_s, m - old->mean});
    }
    means_.push_back({now_s, m});
  }
  if (static_cast<int>(diffs_.size()) >= o_.min_noise_samples) {
    std::vector<double> d;
    for (const Mean& x : diffs_) d.push_back(x.mean);
    const double med = median(d);
    for (double& x : d) x = std::abs(x - med);
    sigma_w_ = 1.4826 * median(d);
    have_sigma_ = true;
  } else if (steady_since(now_s - o_.judge_s)) {
    // Too few: the samples of the last window as if independent (sd / sqrt(samples)).
    double sum = 0, sum2 = 0;
    int n = 0;
    for (const Sample& s : samples_) {
      if (s.t <= now_s - o_.judge_s) continue;
      sum += s.measured;
      sum2 += s.measured * s.measured;
      ++n;
    }
    if (n >= 10) {
      const double mean = sum / n;
      sigma_w_ = std::sqrt(std::max(0.0, sum2 / n - mean * mean) / n);
      have_sigma_ = true;
    }
  }
  if (!have_sigma_) sigma_w_ = 0.01 * std::max(0.0, samples_.back().line);
}

// The model's inverse by bisection: [lo, hi] narrowed (40 halvings) around the split at which
// it predicts draw_w, given model(lo) < draw_w <= model(hi); returns the final (lo, hi).
static std::pair<double, double> bracket_split(const SiteDrawModel& model, double draw_w, double lo,
                                               double hi) {
  for (int k = 0; k < 40; ++k) {
    const double mid = 0.5 * (lo + hi);
    (model(mid) < draw_w ? lo : hi) = mid;
  }
  return {lo, hi};
}

// The dip test on the window of span_s (site_loop.hpp "Raises frozen while a dip is seen"):
// the model's mean prediction there less the measured mean, against the median of `kept` (the
// relative excesses of earlier updates outside dips, pruned here to the noise window) and, with
// `spread`, dip_fast_z robust sds of them (not judged before min_noise_samples are kept).
SiteLoop::DipTest SiteLoop::dip_test(double now_s, double span_s, double line_w,
                                     const SiteDrawModel& model, std::deque<Mean>& kept,
                                     bool spread) const {
  DipTest d;
  const double predicted = mean_model(now_s, span_s, model);
  d.excess_w = predicted - trailing_mean(now_s, span_s);
  d.excess_frac = predicted > 0 ? d.excess_w / predicted : 0;
  while (!kept.empty() && kept.front().t < now_s - o_.noise_window_s) kept.pop_front();
  d.steady_excess_w = d.excess_w;
  double spread_w = 0;
  if (spread && static_cast<int>(kept.size()) < o_.min_noise_samples) return d;
  if (!kept.empty()) {
    std::vector<double> v;
    v.reserve(kept.size());
    for (const Mean& x : kept) v.push_back(x.mean);
    const double med = median(v);
    d.steady_excess_w = med * predicted;
    if (spread) {
      for (double& x : v) x = std::abs(x - med);
      spread_w = o_.dip_fast_z * 1.4826 * median(v) * predicted;
    }
  }
  d.seen =
      d.excess_w - d.steady_excess_w > std::max({o_.dip_frac * line_w, 2 * margin_w_, spread_w});
  return d;
}

double SiteLoop::update(double now_s, double measured_w, double line_w, bool binding,
                        const SiteDrawModel& model, SiteRampLimits limits) {
  const double dt = last_s_ < 0 ? 0 : std::clamp(now_s - last_s_, 0.0, 5 * o_.period_s);
  last_s_ = now_s;
  samples_.push_back({now_s, measured_w, line_w, 0, 0});
  noise(now_s);
  margin_w_ = std::max(o_.z * sigma_w_, o_.min_margin_frac * line_w);
  if (!o_.enabled || !binding || line_w <= 0) {
    integral_w_ = 0;
    dip_ = false;
    dip_until_s_ = -1;
    base_w_ = split_w_ = std::max(0.0, line_w);
    was_binding_ = false;
    return split_w_;
  }
  if (!was_binding_) {  // a new event
    max_fall_w_per_s_ = max_rise_w_per_s_ = 0;
    bind_start_s_ = now_s;
    excess_.clear();
    fast_excess_.clear();
  }
  was_binding_ = true;
  const double top_w = (1 + o_.max_boost_frac) * line_w;
  const double want_w = line_w - margin_w_;
  // Feed-forward: the split at which the model predicts line - margin.
  base_w_ = line_w;
  if (model) {
    if (model(top_w) <= want_w) {
      base_w_ = top_w;
    } else if (model(line_w) < want_w) {
      base_w_ = bracket_split(model, want_w, line_w, top_w).first;
    }
  }
  // A dip: the judged mean well under what the model predicts at the splits in force, beyond the
  // model's steady error (the median of its relative excess over the last noise window of
  // updates outside dips while the event binds; the first such update is its own reference).
  // Relative: the same curve error reads the same at every line, so a ramp keeps the reference.
  // The same on the short window, beyond its measured spread too: a quiet site's dip is seen
  // before the integral has chased it for most of a minute.
  const bool judged = model && now_s - bind_start_s_ >= o_.judge_s && split_w_ > 0;
  const bool fast_on = o_.dip_fast_s > 0;
  DipTest slow, fast;
  if (judged) {
    slow = dip_test(now_s, o_.judge_s, line_w, model, excess_, false);
    if (fast_on) fast = dip_test(now_s, o_.dip_fast_s, line_w, model, fast_excess_, true);
  }
  if (slow.seen || fast.seen) {
    if (!(now_s < dip_until_s_)) {
      // A new dip: what the integral raised while the window filled with it is taken back.
      const double back_s = slow.seen ? o_.judge_s : o_.dip_fast_s;
      dip_integral_w_ = integral_w_;
      for (auto it = samples_.rbegin(); it != samples_.rend(); ++it) {
        if (it->t <= now_s - back_s) {
          dip_integral_w_ = std::min(integral_w_, it->integral);
          break;
        }
      }
    }
    dip_until_s_ = now_s + o_.dip_hold_s;
  }
  dip_ = now_s < dip_until_s_;
  // While the dip is seen the integral stays at most there: under ramp limits the take-back
  // reaches it over several updates (the limits below clamp each one back), not in one.
  if (dip_) integral_w_ = std::min(integral_w_, dip_integral_w_);
  excess_w_ = slow.excess_w;
  steady_excess_w_ = slow.steady_excess_w;
  if (judged && !dip_) {
    excess_.push_back({now_s, slow.excess_frac});
    if (fast_on) fast_excess_.push_back({now_s, fast.excess_frac});
  }
  // The integral on each measurement: a duty cycle's low phase raises the split while it
  // lasts (the nodes in their high phase take what the others leave), a dip does not.
  const double e = want_w - measured_w;
  if (!(e > 0 && dip_)) integral_w_ += o_.ki_per_s * e * dt;
  const double bound = o_.max_boost_frac * line_w;
  integral_w_ = std::clamp(integral_w_, model ? -bound : 0.0, bound);
  const double last_split_w = split_w_;
  split_w_ = std::clamp(base_w_ + integral_w_, line_w, top_w);
  // The event's ramp limits, from the last split; never below the line. The grid limits the
  // site's draw: with a model, on the draw it predicts (a budget watt moves the draw by less
  // than a watt where the caps bind, so a limit on the split would ramp the draw slower).
  const double last_w = model ? model(last_split_w) : last_split_w;
  auto draw_at = [&](double split) { return model ? model(split) : split; };
  // The split between lo and hi (draw_at(lo) <= w <= draw_at(hi)) at which the draw is w.
  auto split_for = [&](double w, double lo, double hi) {
    return model ? bracket_split(model, w, lo, hi).second : w;
  };
  if (limits.down_w_per_s > 0 && draw_at(split_w_) < last_w - limits.down_w_per_s * dt) {
    split_w_ = split_for(last_w - limits.down_w_per_s * dt, split_w_, last_split_w);
  }
  if (limits.up_w_per_s > 0 && draw_at(split_w_) > last_w + limits.up_w_per_s * dt) {
    split_w_ = split_for(last_w + limits.up_w_per_s * dt, last_split_w, split_w_);
  }
  split_w_ = std::max(split_w_, line_w);
  integral_w_ = split_w_ - base_w_;  // no wind-up against the split's bounds
  if (dt > 0) {
    const double now_w = draw_at(split_w_);
    max_fall_w_per_s_ = std::max(max_fall_w_per_s_, (last_w - now_w) / dt);
    max_rise_w_per_s_ = std::max(max_rise_w_per_s_, (now_w - last_w) / dt);
  }
  samples_.back().split = split_w_;
  samples_.back().integral = integral_w_;
  return split_w_;
}

}  // namespace fw::fleet
