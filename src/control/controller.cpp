#include "control/controller.hpp"

#include <cmath>

namespace fw {

std::string actuator_set_name(const ActuatorSet& s) {
  std::string out;
  for (int i = 0; i < kNumActuators; ++i) {
    if (!s.test(static_cast<size_t>(i))) continue;
    if (!out.empty()) out += '+';
    out += kActuatorTable[i].name;
  }
  return out.empty() ? "none" : out;
}

Status check_claims(const std::vector<const Controller*>& controllers) {
  ActuatorSet taken;
  std::vector<const Controller*> owner(kNumActuators, nullptr);
  for (const Controller* c : controllers) {
    const ActuatorSet mine = c->claims();
    const ActuatorSet both = mine & taken;
    if (both.any()) {
      for (int i = 0; i < kNumActuators; ++i) {
        if (!both.test(static_cast<size_t>(i))) continue;
        return Status::InvalidArgument("controllers '" + owner[i]->name() + "' and '" + c->name() +
                                       "' both claim actuator '" +
                                       std::string(kActuatorTable[i].name) +
                                       "'; compose controllers that command disjoint actuators");
      }
    }
    for (int i = 0; i < kNumActuators; ++i) {
      if (mine.test(static_cast<size_t>(i))) owner[i] = c;
    }
    taken |= mine;
  }
  return Status::Ok();
}

void merge_command(const Command& c, const ActuatorSet* claims, Command& into) {
  const bool caps = claims == nullptr || claims->test(kCapActuator);
  if (c.power_cap_w.size() == into.power_cap_w.size()) {
    for (size_t g = 0; g < c.power_cap_w.size() && caps; ++g) {
      if (!std::isnan(c.power_cap_w[g])) into.power_cap_w[g] = c.power_cap_w[g];
    }
  } else if (!c.power_cap_w.empty()) {
    into.power_cap_w = c.power_cap_w;
  }
  if (c.knobs.size() == into.knobs.size()) {
    for (size_t j = 0; j < c.knobs.size(); ++j) {
      for (int k = 0; k < kNumKnobs; ++k) {
        if (claims != nullptr && !claims->test(static_cast<size_t>(k))) continue;
        if (!std::isnan(c.knobs[j][k])) into.knobs[j][k] = c.knobs[j][k];
      }
    }
  } else if (!c.knobs.empty()) {
    into.knobs = c.knobs;
  }
  // kGpuSettingTable's rows are not claimable: every set entry merges (later wins).
  if (!c.gpu_settings.empty()) {
    if (into.gpu_settings.size() != c.gpu_settings.size()) {
      into.gpu_settings.assign(c.gpu_settings.size(), kNoGpuSettings);
    }
    for (size_t g = 0; g < c.gpu_settings.size(); ++g) {
      for (int k = 0; k < kNumGpuSettings; ++k) {
        if (!std::isnan(c.gpu_settings[g][k])) into.gpu_settings[g][k] = c.gpu_settings[g][k];
      }
    }
  }
}

}  // namespace fw
