#include "fleet/allocator.hpp"

#include <algorithm>
#include <numeric>

namespace fw::fleet {

std::vector<double> water_fill(double budget_w, const std::vector<double>& lo,
                               const std::vector<double>& hi, const std::vector<double>& weight) {
  const size_t n = lo.size();
  std::vector<double> out(n, 0.0);
  if (n == 0) return out;
  const double floor_w = std::accumulate(lo.begin(), lo.end(), 0.0);
  if (budget_w <= floor_w) {  // below the floors: everyone the same fraction of its floor
    const double f = floor_w > 0 ? std::max(0.0, budget_w) / floor_w : 0.0;
    for (size_t i = 0; i < n; ++i) out[i] = lo[i] * f;
    return out;
  }
  auto total = [&](double lambda) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += std::clamp(lambda * weight[i], lo[i], hi[i]);
    return s;
  };
  double top = 1.0;
  for (size_t i = 0; i < n; ++i) top = std::max(top, hi[i] / std::max(weight[i], 1e-12));
  if (total(top) <= budget_w) return hi;
  double a = 0, b = top;  // total(a) <= budget_w < total(b)
  for (int it = 0; it < 100; ++it) {
    const double m = 0.5 * (a + b);
    (total(m) <= budget_w ? a : b) = m;
  }
  for (size_t i = 0; i < n; ++i) out[i] = std::clamp(a * weight[i], lo[i], hi[i]);
  return out;
}

namespace {

std::vector<double> split_with(double budget_w, const std::vector<NodeRecord>& nodes,
                               double (*weight_of)(const NodeRecord&)) {
  std::vector<double> lo, hi, w;
  for (const auto& n : nodes) {
    lo.push_back(n.min_w);
    hi.push_back(n.nameplate_w);
    w.push_back(std::max(weight_of(n), 1e-9));
  }
  return water_fill(budget_w, lo, hi, w);
}

}  // namespace

std::vector<double> EqualAllocator::split(double budget_w,
                                          const std::vector<NodeRecord>& nodes) const {
  return split_with(budget_w, nodes, [](const NodeRecord& n) { return double(n.gpus); });
}

std::vector<double> ProportionalAllocator::split(double budget_w,
                                                 const std::vector<NodeRecord>& nodes) const {
  return split_with(budget_w, nodes, [](const NodeRecord& n) {
    double jobs_w = 0;
    for (const auto& j : n.jobs) jobs_w += j.draw_w;
    return std::max({n.draw_w, jobs_w, 0.05 * n.nameplate_w});
  });
}

Result<std::unique_ptr<Allocator>> make_allocator(std::string_view name) {
  if (name == "equal") return std::unique_ptr<Allocator>(new EqualAllocator());
  if (name == "proportional") return std::unique_ptr<Allocator>(new ProportionalAllocator());
  return Status::InvalidArgument("allocator \"" + std::string(name) +
                                 "\": choose equal or proportional");
}

}  // namespace fw::fleet
