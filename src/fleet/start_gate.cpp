#include "fleet/start_gate.hpp"

#include <algorithm>

namespace fw::fleet {

std::map<std::string, double> StartGate::plan(const std::vector<StartRequest>& requests,
                                              double now_unix_s) {
  std::map<std::string, double> out;
  if (!(ramp_w_per_s_ > 0)) {
    for (const StartRequest& r : requests) out[r.job] = r.announced_unix_s;
    slots_.clear();
    return out;
  }
  std::map<std::string, Slot> kept;
  std::vector<const StartRequest*> fresh;
  for (const StartRequest& r : requests) {
    auto it = slots_.find(r.job);
    // Kept while the job means to start by its slot (or now, once the slot has passed: a job
    // that is due reads a start of now until it starts).
    if (it != slots_.end() &&
        r.announced_unix_s <= std::max(it->second.at_unix_s, now_unix_s) + 1e-6) {
      kept[r.job] = {it->second.at_unix_s, std::max(0.0, r.rise_w)};
    } else {
      fresh.push_back(&r);
    }
  }
  double free_at = now_unix_s;
  for (const auto& [job, s] : kept) {
    free_at = std::max(free_at, s.at_unix_s + s.rise_w / ramp_w_per_s_);
  }
  std::sort(fresh.begin(), fresh.end(), [](const StartRequest* a, const StartRequest* b) {
    return a->announced_unix_s != b->announced_unix_s ? a->announced_unix_s < b->announced_unix_s
                                                      : a->job < b->job;
  });
  for (const StartRequest* r : fresh) {
    const double at = std::max({r->announced_unix_s, now_unix_s, free_at});
    const double rise = std::max(0.0, r->rise_w);
    kept[r->job] = {at, rise};
    free_at = at + rise / ramp_w_per_s_;
  }
  slots_ = std::move(kept);
  for (const auto& [job, s] : slots_) out[job] = s.at_unix_s;
  return out;
}

}  // namespace fw::fleet
