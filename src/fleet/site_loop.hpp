#pragma once
// SiteLoop: the coordinator's closed site loop under a grid target (the loop of
// `flexwatt dr replay`, docs/flexibility.md, on the fleet's measurements): every loop period,
// on the site's measured power (the sum of the live nodes' reported draw), it gives the
// split the watts the nodes leave unused below their shares, so the site tracks the target
// instead of sitting under it.
//
// Contract (deterministic, no clock, no I/O):
//   line      = the effective budget now (grid target with its ramps; the coordinator's)
//   sigma     = the measured noise of the site: the robust sd (1.4826 · MAD) of the first
//               differences of block_s block means of the measured power, / sqrt(2), over the
//               last `blocks` differences of blocks on a line that had not moved for the two
//               blocks before (a grid ramp or step moves the site's mean, and the site follows
//               it with a lag: that is not noise; a slow drift moves the mean, not the
//               differences); before three such differences, 1 % of the line. Scaled to the
//               judging window: sigma x sqrt(block_s / judge_s) when judge_s > block_s (the sd
//               of judge_s means of blocks that vary independently; the target is judged on
//               1-minute means)
//   margin    = z · sigma, at least min_margin_frac of the line
//   integral  += ki_per_s · (line − margin − measured) · dt, held within [0, max_boost_frac ·
//               line]: it only hands back what the site leaves unused (never below the open
//               loop's split, so a 0 W line still drives every node to its floor)
//   split     = line + integral (what the allocator splits; safe shares stay on the line)
//   While no grid event binds (line at the site budget) the loop is idle: the integral is
//   reset, the split is the line.

#include <deque>

namespace fw::fleet {

struct SiteLoopOptions {
  bool enabled = false;
  double period_s = 1;    // rounds at least this often while an event binds
  double ki_per_s = 0.1;  // integral gain (W per W·s of tracking error)
  double z = 2;           // margin = z · sigma
  double block_s = 10;    // noise blocks
  int blocks = 12;        // trailing blocks in sigma
  double judge_s = 60;    // the window the target is judged on
  double min_margin_frac = 0.002;
  double max_boost_frac = 0.5;  // integral at most this fraction of the line
};

class SiteLoop {
 public:
  explicit SiteLoop(SiteLoopOptions o = {}) : o_(o) {}
  // One loop step at now_s: measured site power, the line, and whether an event binds.
  // Returns the split.
  double update(double now_s, double measured_w, double line_w, bool binding);
  double sigma_w() const { return sigma_w_; }
  double margin_w() const { return margin_w_; }
  double integral_w() const { return integral_w_; }
  const SiteLoopOptions& options() const { return o_; }

 private:
  void noise(double now_s, double measured_w, double line_w);

  SiteLoopOptions o_;
  double last_s_ = -1;
  double integral_w_ = 0, sigma_w_ = 0, margin_w_ = 0;
  double block_start_s_ = -1, block_sum_ = 0, block_line_lo_ = 0, block_line_hi_ = 0;
  int block_n_ = 0;
  bool have_prev_ = false;
  int steady_blocks_ = 0;  // blocks in a row on the same line
  double prev_mean_ = 0, prev_line_ = 0;
  std::deque<double> diffs_;
};

}  // namespace fw::fleet
