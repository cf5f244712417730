#pragma once
// For decision benchmarks: a simulated plant read for `samples` ticks 0.5 s apart, its history
// in a ring and an Observation at the last tick, as a controller sees it in the loop. Returned
// on the heap because the Observation points into the object (it must not move).

#include <cstdlib>
#include <memory>

#include "control/budget_units.hpp"
#include "control/observation.hpp"
#include "control/snapshot_ring.hpp"
#include "sim/scenario.hpp"

namespace fw::bench {

struct WarmObservation {
  std::unique_ptr<Plant> plant;
  BudgetUnits units;
  SnapshotRing ring;
  Observation obs;
  WarmObservation(size_t capacity) : ring(capacity) {}
};

// Aborts on a failed read (a benchmark set-up error). REQUIRES: samples >= 1, scenario with a
// budget; `scenario` outlives the result (the Observation points at its budget).
inline std::unique_ptr<WarmObservation> warm_observation(const sim::Scenario& scenario,
                                                         BudgetScope scope, size_t capacity,
                                                         int samples) {
  auto w = std::make_unique<WarmObservation>(capacity);
  w->plant = sim::make_plant(scenario, 1);
  w->units = make_budget_units(w->plant->info(), scope);
  Snapshot s;
  for (int i = 0; i < samples; ++i) {
    if (!w->plant->read(0.5 * i, s).ok()) std::abort();
    s.time_s = 0.5 * i;
    w->ring.push(s);
  }
  w->obs.time_s = 0.5 * (samples - 1);
  w->obs.plant = &w->plant->info();
  w->obs.budget = &scenario.budget.entries[0].budget;
  w->obs.units = &w->units;
  w->obs.history = &w->ring;
  return w;
}

}  // namespace fw::bench
