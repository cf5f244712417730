#include "actuation/power_cap_actuator.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace fw {

bool PowerCapActuator::managed(int gpu) const {
  const std::vector<int>& g = gpus();
  return std::find(g.begin(), g.end(), gpu) != g.end();
}

void PowerCapActuator::mark_lost(int gpu) {
  if (!lost(gpu)) lost_.push_back(gpu);
}

bool PowerCapActuator::lost(int gpu) const {
  return std::find(lost_.begin(), lost_.end(), gpu) != lost_.end();
}

Result<CapWrite> PowerCapActuator::set(int gpu, double cap_w) {
  if (lost(gpu)) {
    return Status::Unavailable("set cap (GPU " + std::to_string(gpu) +
                               "): the GPU is lost (dropped from control)");
  }
  Result<CapWrite> w = checked_write(gpu, cap_w);
  if (!w.ok() && managed(gpu)) ++write_failures_[gpu];
  return w;
}

int64_t PowerCapActuator::write_failures(int gpu) const {
  auto it = write_failures_.find(gpu);
  return it == write_failures_.end() ? 0 : it->second;
}

Result<CapWrite> PowerCapActuator::checked_write(int gpu, double cap_w) {
  const std::string what = "set cap (GPU " + std::to_string(gpu) + ")";
  if (!managed(gpu)) {
    return Status::InvalidArgument(what + ": GPU not managed by this actuator");
  }
  if (!std::isfinite(cap_w)) {
    return Status::InvalidArgument(what + ": cap must be a finite number of watts");
  }
  const CapConstraints c = constraints(gpu);
  if (std::isnan(c.min_w) || std::isnan(c.max_w)) {
    return Status::NotSupported(what + ": the device reports no settable cap range");
  }
  if (cap_w < c.min_w || cap_w > c.max_w) {
    return Status::InvalidArgument(what + ": " + std::to_string(cap_w) + " W is outside [" +
                                   std::to_string(c.min_w) + ", " + std::to_string(c.max_w) +
                                   "] W");
  }
  return write(gpu, cap_w);
}

Status PowerCapActuator::save() {
  std::vector<SavedCap> found;
  for (int g : gpus()) {
    if (lost(g)) continue;
    Result<double> c = cap_w(g);
    if (!c.ok()) return c.status().with_context("save caps");
    found.push_back({g, *c});
  }
  saved_ = std::move(found);
  has_saved_ = true;
  return Status::Ok();
}

Status PowerCapActuator::save_with(const std::vector<SavedCap>& kept) {
  FW_RETURN_IF_ERROR(save());
  for (const SavedCap& k : kept) {
    if (!managed(k.gpu) || !std::isfinite(k.cap_w)) {
      return Status::InvalidArgument("save caps: GPU " + std::to_string(k.gpu) +
                                     " is not managed or its cap is not finite");
    }
    for (SavedCap& s : saved_) {
      if (s.gpu == k.gpu) s.cap_w = k.cap_w;
    }
  }
  return Status::Ok();
}

Status PowerCapActuator::restore() {
  if (!has_saved_) return Status::InvalidArgument("restore caps: nothing saved (call save())");
  Status first;
  for (const SavedCap& s : saved_) {
    if (lost(s.gpu)) continue;
    Result<CapWrite> w = set(s.gpu, s.cap_w);
    if (!w.ok() && first.ok()) first = w.status().with_context("restore caps");
  }
  return first;
}

}  // namespace fw
