#pragma once
// How far a power envelope may be oversubscribed, from the window means of the power it
// must host (a node or a fleet: the sum over its GPUs).
//
// Definitions (also in docs/analysis.md, "Oversubscription"):
// - Window means m_1..m_n: the means of the n judged tumbling windows of length W
//   (windows.hpp rules).
// - Provisioned power P(W, tol): the smallest power such that the share of windows whose
//   mean exceeds P (strictly) is ≤ tol. With the means sorted ascending, m_(1) ≤ … ≤ m_(n),
//   and k = ⌊tol·n⌋ windows allowed above it, P = m_(n−k): the (1 − tol) empirical quantile.
//   tol = 0 gives P = the peak window mean.
// - Ratio = nameplate / P: how many times the hosted equipment's nameplate power exceeds
//   the capacity it needs. Ratio 2 means a capacity of half the nameplate would have held
//   (violation share ≤ tol at window W) for this trace.
// - peak share of nameplate = P / nameplate.
// A trace shows what happened, not what will: the ratio is what this trace supports.

#include <cmath>
#include <cstdint>
#include <vector>

namespace fw {

struct Oversubscription {
  double window_s = 0;
  double tolerance = 0;
  int64_t windows = 0;        // judged windows the figure rests on
  int64_t windows_above = 0;  // windows whose mean exceeds provisioned_w (≤ ⌊tol·n⌋)
  double provisioned_w = std::nan("");       // P; NaN without windows
  double nameplate_w = std::nan("");         // of the whole series (per GPU × GPUs); NaN: unknown
  double share_of_nameplate = std::nan("");  // P / nameplate
  double ratio = std::nan("");               // nameplate / P
};

// The (1 − tol) quantile as defined above. Returns NaN for no means.
// REQUIRES: 0 ≤ tolerance < 1.
double provisioned_power_w(std::vector<double> window_means_w, double tolerance);

// REQUIRES: 0 ≤ tolerance < 1; nameplate_w > 0 or NaN.
Oversubscription oversubscription(const std::vector<double>& window_means_w, double window_s,
                                  double tolerance, double nameplate_w);

}  // namespace fw
