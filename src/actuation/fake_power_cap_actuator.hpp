#pragma once
// FakePowerCapActuator: an in-memory PowerCapActuator for tests and the simulator backends.
// Each GPU has constraints, a cap (the management limit) and an optional clamp (another agent
// holding the GPU lower: the enforced cap is min(cap, clamp)). Writes can be made to fail.

#include <limits>
#include <map>
#include <vector>

#include "actuation/power_cap_actuator.hpp"

namespace fw {

struct FakeGpuCap {
  int gpu = 0;
  CapConstraints constraints;
  double cap_w = kUnset;  // in force at start
  double clamp_w = std::numeric_limits<double>::infinity();
};

class FakePowerCapActuator : public PowerCapActuator {
 public:
  explicit FakePowerCapActuator(std::vector<FakeGpuCap> gpus);

  const std::vector<int>& gpus() const override { return ids_; }
  CapConstraints constraints(int gpu) const override { return gpus_.at(gpu).constraints; }
  Result<double> cap_w(int gpu) override;

  // Test hooks: the next writes return `s` (Ok: succeed again); direct access to a GPU's state.
  void fail_writes(Status s) { fail_ = std::move(s); }
  FakeGpuCap& gpu(int gpu) { return gpus_.at(gpu); }
  int writes() const { return writes_; }

 protected:
  Result<CapWrite> write(int gpu, double cap_w) override;

 private:
  std::vector<int> ids_;
  std::map<int, FakeGpuCap> gpus_;
  Status fail_;
  int writes_ = 0;
};

}  // namespace fw
