#pragma once
// Trailing means over the last n samples, one per budget unit: the sliding budget-window rule
// (EpisodeMetrics' violation_rate_sliding, the PPO environment's sliding reward, the oracle's
// sliding feasibility). Per sample: set() every unit, then advance(); once full(), mean(u)
// is the mean of unit u's last n values. Allocates only in reset().

#include <cstddef>
#include <vector>

namespace fw {

class TrailingWindows {
 public:
  // REQUIRES: n >= 1.
  void reset(size_t units, size_t n) {
    units_ = units;
    n_ = n;
    pos_ = filled_ = 0;
    ring_.assign(units * n, 0.0);
    sum_.assign(units, 0.0);
  }
  // Unit u's value for the current sample.
  void set(size_t u, double v) {
    double& slot = ring_[pos_ * units_ + u];
    sum_[u] += v - slot;
    slot = v;
  }
  // Ends the current sample.
  void advance() {
    pos_ = (pos_ + 1) % n_;
    if (filled_ < n_) ++filled_;
  }
  bool full() const { return n_ > 0 && filled_ == n_; }
  double mean(size_t u) const { return sum_[u] / static_cast<double>(n_); }
  size_t window() const { return n_; }  // 0 before reset()

 private:
  size_t units_ = 0, n_ = 0, pos_ = 0, filled_ = 0;
  std::vector<double> ring_, sum_;  // [sample][unit], [unit]
};

}  // namespace fw
