#include "sim/site_mitigation.hpp"

#include <cstdio>

namespace fw::sim {

std::string describe(const SiteMitigations& m) {
  std::string s;
  auto add = [&s](const std::string& part) { s += (s.empty() ? "" : " + ") + part; };
  char buf[64];
  if (m.cap_frac < 1.0) {
    std::snprintf(buf, sizeof buf, "cap %.0f%%", m.cap_frac * 100);
    add(buf);
  }
  if (m.smoothing.enabled) add("smoothing " + describe(m.smoothing));
  if (m.fill.enabled) {
    std::snprintf(buf, sizeof buf, "fill %.0f%%", m.fill.target_frac * 100);
    add(buf);
  }
  if (m.stagger.stagger_s > 0) {
    std::snprintf(buf, sizeof buf, "stagger %g s", m.stagger.stagger_s);
    add(buf);
  }
  return s.empty() ? "none" : s;
}

}  // namespace fw::sim
