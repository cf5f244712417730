#include "analysis/pfi.hpp"

#include <cmath>

namespace fw {

Result<double> compute_pfi(const std::vector<PfiPoint>& points, double min_rel_drop) {
  if (points.size() < 2) return Status::InvalidArgument("PFI needs at least two sweep points");
  size_t ref = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const PfiPoint& p = points[i];
    if (!(p.throughput > 0) || !(p.power_w > 0)) {
      return Status::InvalidArgument("PFI: point at cap " + std::to_string(p.cap_w) +
                                     " W has a non-positive throughput or power");
    }
    if (p.cap_w > points[ref].cap_w) ref = i;
  }
  const double t_max = points[ref].throughput;
  const double p_max = points[ref].power_w;
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    if (i == ref) continue;
    const double t_drop = 1.0 - points[i].throughput / t_max;
    if (points[i].throughput == t_max || std::fabs(t_drop) <= min_rel_drop) continue;
    sum += (1.0 - points[i].power_w / p_max) / t_drop;
    ++n;
  }
  if (n == 0) return Status::InvalidArgument("PFI: no sweep point lowered the throughput");
  return sum / n;
}

}  // namespace fw
