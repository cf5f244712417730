#pragma once
// What a controller sees at a decision: recent snapshots, the budget in force, the time.
//
// Contract: all pointers are non-null and owned by the stepper that built it
// (control/stepper.hpp, for ControlLoop and the PPO environment; valid during the update()
// call only); history is non-empty and its newest snapshot was read at time_s.
// A controller must not keep references past update().

#include <cstddef>

#include "control/budget_units.hpp"
#include "control/plant.hpp"
#include "control/snapshot_ring.hpp"
#include "vocab/budget.hpp"

namespace fw {

struct Observation {
  double time_s = 0;
  double sample_period_s = 0.5;
  const PlantInfo* plant = nullptr;
  const Budget* budget = nullptr;      // in force at time_s
  const BudgetUnits* units = nullptr;  // the budget's units (scope of the first entry)
  const SnapshotRing* history = nullptr;

  const Snapshot& latest() const { return history->newest(); }

  // Mean power of unit u over the trailing span_s (samples read in (time_s − span_s,
  // time_s], at least the newest one). Zero-order hold, so a plain mean of samples.
  double unit_mean_w(size_t u, double span_s) const;
  // Largest over units of trailing mean / budget watts (1.0 = exactly at budget).
  double worst_ratio(double span_s) const;
  // Largest over the units touching job j of trailing mean / budget watts.
  double job_ratio(size_t job, double span_s) const;
  // Largest over the units touching job j of the largest rolling window_s mean power /
  // budget among windows ending in the trailing lookback_s (a shorter history: its mean).
  double job_peak_ratio(size_t job, double window_s, double lookback_s) const;
  // Number of samples available in the trailing span (>= 1): those read in
  // (time_s − span_s, time_s], at least the newest one.
  size_t samples_in(double span_s) const;
};

}  // namespace fw
