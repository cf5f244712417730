#include "actuation/fake_power_cap_actuator.hpp"

#include <algorithm>

namespace fw {

FakePowerCapActuator::FakePowerCapActuator(std::vector<FakeGpuCap> gpus) {
  for (FakeGpuCap& g : gpus) {
    ids_.push_back(g.gpu);
    gpus_[g.gpu] = g;
  }
}

Result<double> FakePowerCapActuator::cap_w(int gpu) { return gpus_.at(gpu).cap_w; }

Result<CapWrite> FakePowerCapActuator::write(int gpu, double cap_w) {
  if (!fail_.ok()) return fail_;
  ++writes_;
  FakeGpuCap& g = gpus_.at(gpu);
  g.cap_w = cap_w;
  return CapWrite{cap_w, std::min(cap_w, g.clamp_w)};
}

}  // namespace fw
