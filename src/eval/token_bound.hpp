#pragma once
// A token bound: per budget window, the most tokens of completed steps any mixture of fixed
// settings can make at that window's power allowance, summed over the windows.
//
// Frontier: every setting of a grid over the job's actuators (each knob's ladder at
// kBoundFractions, the caps at kBoundFractions of their range) runs a full episode on the
// seed; each gives a point (mean power per budget unit, W; completed-step tokens per s). The
// upper concave envelope f of these points and (0, 0), made non-decreasing, is the best rate
// a time-mixture of the settings reaches at a mean power. Bound = Σ over the budget windows
// of window_s · f(budget in force at the window's start) (the last window pro rata).
//
// The argument, and its limit: a controller whose token rate at each moment is that of some
// fixed setting at the power it draws, and which keeps every window's mean power within the
// budget, cannot beat f in any window (Jensen on the concave f). A controller that changes
// settings inside a step (e.g. a cap per phase) is not such a mixture, so this is a bound
// only under that relaxation; tests/eval/token_bound_test.cpp checks on the simulator
// that the shipped controllers and fixed settings stay under it. Mean power per unit is the
// mean over all GPUs divided by the number of budget units (≤ the worst unit's mean, so the
// bound can only be looser).

#include <cstdint>
#include <vector>

#include "core/status.hpp"
#include "sim/scenario.hpp"

namespace fw::eval {

inline constexpr double kBoundFractions[] = {0.0, 0.25, 0.5, 0.75, 1.0};

struct TokenBound {
  double tokens = 0;  // the bound on completed-step tokens for the episode
  int settings = 0;   // frontier points measured
};

// The bound for one seed of the scenario (its duration and budget schedule).
Result<TokenBound> token_bound(const sim::Scenario& scenario, uint64_t seed);

// Upper concave envelope of (power, rate) points and (0, 0), non-decreasing, at power p.
double concave_frontier(std::vector<std::pair<double, double>> points, double p);

}  // namespace fw::eval
