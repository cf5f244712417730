#pragma once
// The options of `flexwatt dr replay`'s site loop (studies/dr_fleet_loop.hpp: the coordinator's
// planning step, fleet/site_round.hpp, on the replay's nodes) and the pauses it reports.

#include <limits>
#include <vector>

#include "allocation/allocation.hpp"
#include "studies/dr_plant.hpp"

namespace fw::studies {

// The site loop's options (`flexwatt dr replay --method --z --ki`). NaN: the loop's own default
// (the coordinator's, fleet::SiteLoopOptions: z 2, ki 0.1 per s on the site's error).
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

}  // namespace fw::studies
