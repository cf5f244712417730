#pragma once
// The actuator table: every setting a controller may command, declared once. The snapshot's
// knob arrays, the scenario's ranges, the trace columns, the limiter's order, the action
// spaces and the claims of controllers are all read from here.
//
// Adding a knob: one row in kActuatorTable (per-job rows before per-GPU rows), and the model
// that reacts to it (the simulator's workload); everything indexed by Knob follows.
// docs/architecture.md "How to add a knob" lists what else a knob may want (a scenario range
// key, a PPO action ladder).

#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string_view>
#include <utility>

namespace fw {

// Who an actuator's one value applies to.
enum class ActuatorScope {
  kJob,  // one value per job (a workload knob); held in JobReading::knobs / Command::knobs
  kGpu,  // one value per GPU (the power cap); held in GpuReading / Command::power_cap_w
};

// Where an actuator's settable range comes from.
enum class RangeSource {
  kJob,     // the job declares it (the scenario's per-job range, JobInfo::knob_ranges)
  kDevice,  // the device declares it (GpuInfo::min_cap_w..max_cap_w)
};

struct ActuatorDef {
  std::string_view name;  // canonical name; also the trace column of a per-job actuator
  ActuatorScope scope;
  std::string_view unit;
  RangeSource range;
  // The budget shield steps, per job, the exposed actuator with the lowest rank (a per-GPU
  // actuator only when the job exposes no knob, or with LimiterConfig::shield_on_caps).
  int shield_rank;
  // Names the actuator has in existing files and flags (file formats do not change):
  // `--actuator` / `static:knob=` values, and the PPO policy's action factor names.
  std::string_view flag_name;
  std::string_view action_name;
  std::string_view help;
};

// In Knob order, then the per-GPU rows. The shield ranks keep the order the limiter has
// always used (gen_concurrency, then group_size, then the caps).
inline constexpr std::array kActuatorTable = {
    ActuatorDef{"gen_concurrency", ActuatorScope::kJob, "sequences", RangeSource::kJob, 0,
                "gen_concurrency", "gen_concurrency",
                "sequences decoded at once during GRPO generation"},
    ActuatorDef{"group_size", ActuatorScope::kJob, "samples", RangeSource::kJob, 1, "group_size",
                "group_size", "GRPO samples per prompt"},
#ifdef FW_TEST_EXTRA_KNOB
    // Test-only throwaway knob (tests/control/extra_knob_test.cpp).
    ActuatorDef{"test_knob", ActuatorScope::kJob, "units", RangeSource::kJob, 2, "test_knob",
                "test_knob", "throwaway knob of the extra-knob test"},
#endif
    ActuatorDef{"cap", ActuatorScope::kGpu, "W", RangeSource::kDevice, 100, "caps", "power_cap",
                "the GPU's enforced power cap (NVML power limit)"},
};
inline constexpr int kNumActuators = static_cast<int>(kActuatorTable.size());

// Workload knobs: the per-job rows of the table, by index.
inline constexpr int kNumKnobs = [] {
  int n = 0;
  for (const ActuatorDef& a : kActuatorTable) n += a.scope == ActuatorScope::kJob ? 1 : 0;
  return n;
}();
static_assert(
    [] {
      for (int i = 0; i < kNumActuators; ++i) {
        if ((i < kNumKnobs) != (kActuatorTable[i].scope == ActuatorScope::kJob)) return false;
      }
      return true;
    }(),
    "per-job actuators come first in kActuatorTable");

// Index of the cap row (the only per-GPU actuator today).
inline constexpr int kCapActuator = [] {
  for (int i = 0; i < kNumActuators; ++i) {
    if (kActuatorTable[i].name == "cap") return i;
  }
  return -1;
}();
static_assert(kCapActuator >= 0, "the table has a cap row");

enum class Knob : int { kGenConcurrency = 0, kGroupSize = 1 };
static_assert(kActuatorTable[0].name == "gen_concurrency" &&
              kActuatorTable[1].name == "group_size");

inline constexpr std::array<std::string_view, kNumKnobs> kKnobNames = [] {
  std::array<std::string_view, kNumKnobs> n{};
  for (int i = 0; i < kNumKnobs; ++i) n[i] = kActuatorTable[i].name;
  return n;
}();

using KnobValues = std::array<double, kNumKnobs>;  // NaN: the job has no such knob / unset
// Every knob unset.
inline constexpr KnobValues kNoKnobs = [] {
  KnobValues v{};
  for (double& x : v) x = std::numeric_limits<double>::quiet_NaN();
  return v;
}();

// Table index of a name (canonical, flag or action name); -1 when unknown.
constexpr int find_actuator(std::string_view name) {
  for (int i = 0; i < kNumActuators; ++i) {
    const ActuatorDef& a = kActuatorTable[i];
    if (a.name == name || a.flag_name == name || a.action_name == name) return i;
  }
  return -1;
}

// Knob indices ordered by shield rank (the order the budget shield tries them).
inline constexpr std::array<int, kNumKnobs> kKnobShieldOrder = [] {
  std::array<int, kNumKnobs> o{};
  for (int i = 0; i < kNumKnobs; ++i) o[i] = i;
  for (int i = 1; i < kNumKnobs; ++i) {
    for (int k = i;
         k > 0 && kActuatorTable[o[k]].shield_rank < kActuatorTable[o[k - 1]].shield_rank; --k) {
      std::swap(o[k], o[k - 1]);
    }
  }
  return o;
}();

}  // namespace fw
