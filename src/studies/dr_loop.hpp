#pragma once
// DrLoop: what `flexwatt dr replay` asks of a site loop over its plant (studies/dr_plant.hpp):
// each sample period one update on the plant's readings gives the command (per-node caps, per-job
// pauses), and the loop says what it commanded, what it can hold and what it paused. Two loops
// implement it: the replay's own (studies/dr_site_loop.hpp, "replay") and the coordinator's
// (studies/dr_fleet_loop.hpp, "coordinator": fleet/site_round.hpp on the replay's nodes).

#include <limits>
#include <vector>

#include "allocation/allocation.hpp"
#include "studies/dr_plant.hpp"

namespace fw::studies {

// The site loop's options (`flexwatt dr replay --method --z --ki`). NaN: the loop's own default
// (the coordinator's, fleet::SiteLoopOptions: z 2, ki 0.1 per s on the site's error; the
// replay's loop: z 2.5, ki 1/60 per s on each node's).
struct DrLoopOptions {
  allocation::Method method = allocation::Method::kOptimal;
  double z = std::numeric_limits<double>::quiet_NaN();         // margin = z · σ (1-minute means)
  double ki_per_s = std::numeric_limits<double>::quiet_NaN();  // integral gain (W per W·s)
  double stagger_s = 60;       // least time between two pause/resume actions
  bool freeze_on_dips = true;  // false: the loop chases dips (for tests and studies)
};

struct DrPauseSpan {
  int job = 0;
  double from_s = 0, to_s = -1;  // to_s < 0: still paused at the end
};

class DrLoop {
 public:
  virtual ~DrLoop() = default;
  virtual DrCommand update(const DrReadings& r) = 0;
  // The site's noise the loop measured (W) and its margin (W) after the last update.
  virtual double sigma_w() const = 0;
  virtual double margin_w() const = 0;
  virtual const std::vector<DrPauseSpan>& pauses() const = 0;
  // Updates at which the running jobs' floors exceeded what the loop could split.
  virtual int infeasible_samples() const = 0;
  // The commanded target's fastest fall and rise so far (W/s).
  virtual double commanded_max_fall_w_per_s() const = 0;
  virtual double commanded_max_rise_w_per_s() const = 0;
  // From the event's first start to end_s (NaN / 0 outside): the deepest site draw the loop
  // holds, the W it cannot shed now without a job under its tier, and the W a ramp limit keeps
  // the site above the target line now.
  virtual double holdable_rule_w() const = 0;
  virtual double shortfall_w() const = 0;
  virtual double ramp_shortfall_w() const = 0;
};

}  // namespace fw::studies
