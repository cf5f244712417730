#include "analysis/oversubscription.hpp"

#include <algorithm>

namespace fw {
namespace {

int64_t allowed_above(int64_t n, double tolerance) {
  // ⌊tol·n⌋, with a little slack so tol = k/n is not lost to rounding.
  const auto k = static_cast<int64_t>(std::floor(tolerance * static_cast<double>(n) + 1e-9));
  return std::clamp<int64_t>(k, 0, n > 0 ? n - 1 : 0);
}

}  // namespace

double provisioned_power_w(std::vector<double> m, double tolerance) {
  if (m.empty()) return std::nan("");
  const auto n = static_cast<int64_t>(m.size());
  const int64_t k = allowed_above(n, tolerance);
  const auto at = m.begin() + (n - 1 - k);
  std::nth_element(m.begin(), at, m.end());
  return *at;
}

Oversubscription oversubscription(const std::vector<double>& means, double window_s,
                                  double tolerance, double nameplate_w) {
  Oversubscription o;
  o.window_s = window_s;
  o.tolerance = tolerance;
  o.windows = static_cast<int64_t>(means.size());
  o.nameplate_w = nameplate_w;
  if (means.empty()) return o;
  o.provisioned_w = provisioned_power_w(means, tolerance);
  o.windows_above =
      std::count_if(means.begin(), means.end(), [&](double m) { return m > o.provisioned_w; });
  if (nameplate_w > 0 && o.provisioned_w > 0) {
    o.share_of_nameplate = o.provisioned_w / nameplate_w;
    o.ratio = nameplate_w / o.provisioned_w;
  }
  return o;
}

}  // namespace fw
