#pragma once
// SiteLoop: the coordinator's closed site loop under a grid target (the loop of
// `flexwatt dr replay`, docs/flexibility.md, on the fleet's measurements): every loop period,
// on the site's measured power (the sum of the live nodes' reported draw), it sets the split
// so that the site's judging-window means sit a margin under the line, instead of the nodes'
// shares summing to the line while their jobs draw less than their shares.
//
// Contract (deterministic, no clock, no I/O). Per update(now, measured, line, binding, model):
//   line      = the effective budget now (grid target with its ramps; the coordinator's)
//   window    = the trailing judge_s mean of the measured power (the target is judged on
//               1-minute means); "steady" while the line stayed within 0.5 % over the last
//               1.5 judge_s, or stayed above 1.1 x every measured value there (the site runs
//               free of it: before an event)
//   sigma     = the measured noise of the judging window: the robust sd (1.4826 · MAD) of
//               m(t) − m(t − judge_s/2), m the trailing judge_s mean, over the last
//               noise_window_s of steady updates (white noise: exactly the sd of judge_s
//               means; a duty cycle about as long as the window mostly cancels in m, as it
//               does in the judged means, though this reads it ~3x high: conservative);
//               before min_noise_samples of them, the sd of the last judge_s of steady
//               samples / sqrt(their count) (as if independent), and before any steady
//               window, 1 % of the line; kept while the line moves
//   margin    = z · sigma, at least min_margin_frac of the line
//   model     = optional feed-forward: the predicted site draw at a split (the coordinator
//               builds it from the nodes' published draw curves, keys.hpp NodeRecord
//               draw_curve, and its allocator). With it the loop's base is the split at which
//               the model predicts line − margin (bisection); without it, the line.
//   integral  += ki · e · dt, e = line − margin − measured, on each update: the correction of
//               the model's error (without a model it does all the work). It follows a duty
//               cycle (about ki × swing / (2π / period)): a low phase of some nodes raises the
//               split while it lasts, so the nodes in their high phase take what the others
//               leave, which the judged means average out. Raises frozen while a dip is seen (with
//               a model: the judge-window mean below the model's mean prediction at the splits then
//               in force by more than max(dip_frac x line, 2 x margin) beyond the model's steady
//               error: the median of that excess, relative to the prediction, over the last
//               noise_window_s of updates outside dips while the event binds (judged once it has
//               bound for judge_s; the first one is its own reference: a dip under way when the
//               judging starts is not seen; relative, so a moving line — a ramp — keeps the
//               reference and a dip on a ramp is seen too), and for dip_hold_s after;
//               at a new dip the integral goes back to (at most) its value judge_s before, what it
//               raised while the window filled with the dip, and stays at most there while the
//               dip is seen (under ramp limits it gets there at their pace, over as many updates
//               as they take): a checkpoint or evaluation dip is not chased; a duty cycle about a
//               window long cancels in the window, so it is not taken for one). The same test
//               runs on a short window, dip_fast_s (10 s): its mean below the model's mean there
//               beyond the median of its relative excess by more than max(dip_frac x line,
//               2 x margin, dip_fast_z x its spread), the spread the robust sd (1.4826 · MAD)
//               of that relative excess times the prediction, over the same updates (judged
//               once min_noise_samples of them are kept); on a new dip seen there the integral
//               goes back to its value dip_fast_s before. A quiet site's dip is so seen within
//               seconds (a 10 % dip: 4 s, against 29 s on the minute window, while the integral
//               chased it), and a duty cycle shorter than the window, whose spread the threshold
//               follows, is not taken for one. Bounded: |integral|
//               <= max_boost_frac · line (>= 0 without a model).
//   split     = clamp(base + integral, line, (1 + max_boost_frac) · line), the integral
//               clamped back when the split is (no wind-up). Never below the line: a 0 W line
//               still drives every node to its floor.
//   limits    = the binding event's ramp rates (W/s, down and up; 0: none; issue 45): the split
//               moves from its last value so that its draw — the
//               model's prediction at the split with a model, the split itself without — moves
//               by at most down · dt down and up · dt up per update
//               (dt as the integral's), and never below the line (the line itself moves at the
//               event's rate); the integral is clamped back with it. A dip's take-back and the
//               feed-forward's jumps are so spread over time too.
//   While no grid event binds (line at the site budget) or when disabled, the split is the
//   line and the integral is reset (the noise is still measured).

#include <deque>
#include <functional>

namespace fw::fleet {

struct SiteLoopOptions {
  bool enabled = false;
  double period_s = 1;    // rounds at least this often while an event binds
  double ki_per_s = 0.1;  // integral gain (W per W·s of tracking error)
  double z = 2;           // margin = z · sigma
  double judge_s = 60;    // the window the target is judged on
  double noise_window_s = 600;
  int min_noise_samples = 20;
  double min_margin_frac = 0.002;
  double max_boost_frac = 0.5;  // |integral| and split − line at most this fraction of the line
  double dip_frac = 0.05;
  double dip_hold_s = 60;
  double dip_fast_s = 10;  // the short dip window (0: the minute window only)
  double dip_fast_z = 4;   // its threshold in robust sds of its relative excess
};

// Predicted site draw (W) at a split (W).
using SiteDrawModel = std::function<double(double split_w)>;

// The binding event's ramp rates, W/s (0: no limit).
struct SiteRampLimits {
  double down_w_per_s = 0;
  double up_w_per_s = 0;
};

class SiteLoop {
 public:
  explicit SiteLoop(SiteLoopOptions o = {}) : o_(o) {}
  // One loop step at now_s: measured site power, the line, whether an event binds, the
  // optional feed-forward model and the event's ramp limits. Returns the split.
  double update(double now_s, double measured_w, double line_w, bool binding,
                const SiteDrawModel& model = {}, SiteRampLimits limits = {});
  double sigma_w() const { return sigma_w_; }
  double margin_w() const { return margin_w_; }
  double integral_w() const { return integral_w_; }
  double base_w() const { return base_w_; }  // the feed-forward split (the line without model)
  bool dip() const { return dip_; }
  // The dip test's terms at the last update (0 until judged): the model's mean prediction less
  // the judged mean, and the model's steady error it is compared beyond (W).
  double excess_w() const { return excess_w_; }
  double steady_excess_w() const { return steady_excess_w_; }
  // The split's fastest fall and rise (W/s, update to update; in draw with a model: what it
  // predicts at the splits) since an event last began to bind (0 while none binds): beside the
  // limits, what the loop commanded.
  double max_fall_w_per_s() const { return max_fall_w_per_s_; }
  double max_rise_w_per_s() const { return max_rise_w_per_s_; }
  const SiteLoopOptions& options() const { return o_; }

 private:
  struct Sample {
    double t, measured, line, split, integral;  // split, integral: after this update
  };
  struct Mean {
    double t, mean;
  };
  void noise(double now_s);
  double trailing_mean(double now_s, double span_s) const;
  bool steady_since(double from_s) const;
  double mean_model(double now_s, double span_s, const SiteDrawModel& model) const;
  // Whether the window of span_s shows a dip beyond its kept relative excesses (`kept`, pruned
  // to the noise window; pushed to outside dips by the caller), and its excess (W).
  struct DipTest {
    bool seen = false;
    double excess_w = 0, steady_excess_w = 0, excess_frac = 0;
  };
  DipTest dip_test(double now_s, double span_s, double line_w, const SiteDrawModel& model,
                   std::deque<Mean>& kept, bool spread) const;

  SiteLoopOptions o_;
  double last_s_ = -1, dip_until_s_ = -1, split_w_ = 0;
  double integral_w_ = 0, sigma_w_ = 0, margin_w_ = 0, base_w_ = 0;
  double excess_w_ = 0, steady_excess_w_ = 0;
  double dip_integral_w_ = 0;  // the take-back's level while a dip is seen
  double max_fall_w_per_s_ = 0, max_rise_w_per_s_ = 0;
  double bind_start_s_ = -1;  // when the event binding now began to bind
  bool was_binding_ = false;
  bool dip_ = false, have_sigma_ = false;
  std::deque<Sample> samples_;    // the last 1.5 judge_s
  std::deque<Mean> means_;        // trailing judge_s means of steady updates
  std::deque<Mean> diffs_;        // m(t) - m(t - judge_s / 2), stamped t
  std::deque<Mean> excess_;       // the model's relative excess over the judged mean, outside dips
  std::deque<Mean> fast_excess_;  // the same on the short dip window
};

}  // namespace fw::fleet
