#include "fleet/site_loop.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace fw::fleet {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

void SiteLoop::noise(double now_s, double measured_w, double line_w) {
  if (block_start_s_ < 0) {
    block_start_s_ = now_s;
    block_line_lo_ = block_line_hi_ = line_w;
  }
  if (now_s - block_start_s_ >= o_.block_s && block_n_ > 0) {
    const double mean = block_sum_ / block_n_;
    const double tol = 0.005 * std::max(block_line_hi_, 1.0);
    const bool steady = block_line_hi_ - block_line_lo_ <= tol;
    steady_blocks_ =
        steady && std::abs(block_line_hi_ - prev_line_) <= tol ? steady_blocks_ + 1 : 0;
    // Two blocks of the same line before this one: the site has followed a move of the line.
    if (have_prev_ && steady_blocks_ >= 3) {
      diffs_.push_back(mean - prev_mean_);
      while (static_cast<int>(diffs_.size()) > o_.blocks) diffs_.pop_front();
    }
    have_prev_ = true;
    prev_mean_ = mean;
    prev_line_ = block_line_hi_;
    block_start_s_ = now_s;
    block_sum_ = 0;
    block_n_ = 0;
    block_line_lo_ = block_line_hi_ = line_w;
  }
  block_sum_ += measured_w;
  ++block_n_;
  block_line_lo_ = std::min(block_line_lo_, line_w);
  block_line_hi_ = std::max(block_line_hi_, line_w);
  if (diffs_.size() >= 3) {
    std::vector<double> d(diffs_.begin(), diffs_.end());
    const double med = median(d);
    for (double& x : d) x = std::abs(x - med);
    sigma_w_ = 1.4826 * median(d) / std::sqrt(2.0);
    if (o_.judge_s > o_.block_s) sigma_w_ *= std::sqrt(o_.block_s / o_.judge_s);
  } else {
    sigma_w_ = 0.01 * line_w;
  }
}

double SiteLoop::update(double now_s, double measured_w, double line_w, bool binding) {
  const double dt = last_s_ < 0 ? 0 : std::clamp(now_s - last_s_, 0.0, 5 * o_.period_s);
  last_s_ = now_s;
  noise(now_s, measured_w, line_w);
  margin_w_ = std::max(o_.z * sigma_w_, o_.min_margin_frac * line_w);
  if (!o_.enabled || !binding) {
    integral_w_ = 0;
    return line_w;
  }
  integral_w_ += o_.ki_per_s * (line_w - margin_w_ - measured_w) * dt;
  integral_w_ = std::clamp(integral_w_, 0.0, o_.max_boost_frac * std::max(0.0, line_w));
  return line_w + integral_w_;
}

}  // namespace fw::fleet
