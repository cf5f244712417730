#include "pipeline/segments.hpp"

namespace fw::pipeline {

std::vector<std::vector<int>> stage_segmentations(const std::array<double, kPhases>& phase_min_s,
                                                  const std::array<bool, kPhases>& has_ops,
                                                  double min_segment_s, bool five) {
  std::vector<int> ph;  // phases with ops, in time order
  for (int p = 0; p < kPhases; ++p) {
    if (has_ops[p]) ph.push_back(p);
  }
  const int k = static_cast<int>(ph.size());
  int all = 0;
  for (int p : ph) all |= 1 << p;
  // cut position i: between ph[i] and ph[(i + 1) % k]
  auto allowed = [&](int i) {
    const int a = ph[i], b = ph[(i + 1) % k];
    if (five) return true;
    return !((a == static_cast<int>(Phase::kFill) && b == static_cast<int>(Phase::kWarmup)) ||
             (a == static_cast<int>(Phase::kCooldown) && b == static_cast<int>(Phase::kDrain)));
  };
  std::vector<int> valid;  // cut sets (bit i: cut at position i)
  for (int cuts = 0; cuts < (1 << k); ++cuts) {
    if (__builtin_popcount(static_cast<unsigned>(cuts)) < 2) continue;
    bool ok = true;
    for (int i = 0; i < k && ok; ++i) ok = !(cuts >> i & 1) || allowed(i);
    // each segment: from the phase after one cut to the next cut
    for (int i = 0; i < k && ok; ++i) {
      if (!(cuts >> i & 1)) continue;
      double d = 0;
      for (int j = 1; j <= k; ++j) {
        const int q = (i + j) % k;
        d += phase_min_s[ph[q]];
        if (cuts >> q & 1) break;
      }
      ok = d >= min_segment_s * (1 - 1e-12);
    }
    if (ok) valid.push_back(cuts);
  }
  std::vector<std::vector<int>> out;
  for (int c : valid) {
    bool finest = true;
    for (int o : valid) finest = finest && !(o != c && (o & c) == c);
    if (!finest) continue;
    std::vector<int> masks;
    for (int i = 0; i < k; ++i) {
      if (!(c >> i & 1)) continue;
      int m = 0;
      for (int j = 1; j <= k; ++j) {
        const int q = (i + j) % k;
        m |= 1 << ph[q];
        if (c >> q & 1) break;
      }
      masks.push_back(m);
    }
    out.push_back(masks);
  }
  if (out.empty()) out.push_back({all});
  return out;
}

}  // namespace fw::pipeline
