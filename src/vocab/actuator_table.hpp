#pragma once
// The actuator table: every setting a controller may command, declared once, one row each.
// Everything that names, parses, ranges, searches or observes an actuator reads it from here:
// the snapshot's and command's knob arrays, the trace columns, the scenario's knob keys and
// their ranges (sim/scenario.cpp), the simulator's knob ranges and writes (sim/cluster.cpp),
// actuator names and "auto" (control/actuator.cpp), the limiter's shield order, the ladders
// controllers search (static's grid, the PPO rungs and levels), the `static:` pins
// (controllers/static_controller.hpp), the PPO observation's knob entries and action factors
// (rl/plant_features.hpp) and the claims of controllers.
//
// Adding a knob: one row in kActuatorTable (per-job rows before per-GPU rows) and the model
// that reacts to it (a simulated workload's response in sim/workload.cpp: which job kinds
// expose it and what it does). tests/extra_knob/ adds a test-only row that way and checks that
// scenario parsing, the static grid and the PPO features follow.
//
// Part of the vocabulary (src/vocab/, on no other module), so that Snapshot and Command size
// their knob arrays from it.

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

// A per-job knob's scenario keys (per job: `jobs.N.<key>`) and their defaults. The setting's
// key is the row's name; the range keys bound it. Unused (empty keys) on a per-GPU row.
struct KnobKeys {
  std::string_view min_key;  // the job's lowest setting, e.g. "gen_concurrency_min"
  std::string_view max_key;  // its highest setting
  double value = 0;          // default setting
  double min = 0, max = 0;   // default range
  double lo = 0, hi = 0;     // every key of the knob lies in [lo, hi] (max in [min, hi])
  bool integer = true;       // whole settings: keys parsed as integers, writes rounded
};

// The discrete settings controllers search (control/actuator.hpp Ladder: min, min+step, …, max;
// static's grid and pattern search walk it) and the PPO level ladder (rl/plant_features.hpp).
struct LadderDef {
  double step = 1;  // a knob's range step / the caps ladder's notch (W)
  int levels = 0;   // rungs of the PPO level action (0: kDefaultKnobLevels)
  // Every step in [dense_lo, dense_hi] is a level rung (dense_hi <= dense_lo: none).
  double dense_lo = 0, dense_hi = 0;
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
  KnobKeys keys;     // per-job rows: scenario keys and defaults
  LadderDef ladder;  // the settings controllers search
  // Order in which actuator "auto" tries the knobs every job exposes (lowest first; -1: never;
  // caps when none).
  int auto_rank = -1;
  // `static:` takes NAME=V to pin this knob for every job while it calibrates another.
  bool static_pin = false;
  // The PPO observation's entry for the knob (its setting as a fraction of the job's range),
  // in row order after the power terms; "" none. A policy file stores these names.
  std::string_view feature;
};

// In Knob order, then the per-GPU rows. The shield ranks keep the order the limiter has
// always used (gen_concurrency, then group_size, then the caps).
inline constexpr std::array kActuatorTable = {
    ActuatorDef{
        .name = "gen_concurrency",
        .scope = ActuatorScope::kJob,
        .unit = "sequences",
        .range = RangeSource::kJob,
        .shield_rank = 0,
        .flag_name = "gen_concurrency",
        .action_name = "gen_concurrency",
        .help = "sequences decoded at once during GRPO generation",
        .keys = {.min_key = "gen_concurrency_min",
                 .max_key = "gen_concurrency_max",
                 .value = 16,
                 .min = 1,
                 .max = 64,
                 .lo = 1,
                 .hi = 4096},
        // 22 levels: 1..64 with every step of 8..16 (assumption from the oracle's traces: it
        // throttles generation to 9-13 on 7B, docs/rl.md "Action").
        .ladder = {.step = 1, .levels = 22, .dense_lo = 8, .dense_hi = 16},
        .auto_rank = 1,
        .static_pin = true,
        .feature = "gen_concurrency_frac",
    },
    ActuatorDef{
        .name = "group_size",
        .scope = ActuatorScope::kJob,
        .unit = "samples",
        .range = RangeSource::kJob,
        .shield_rank = 1,
        .flag_name = "group_size",
        .action_name = "group_size",
        .help = "GRPO samples per prompt",
        .keys = {.min_key = "group_size_min",
                 .max_key = "group_size_max",
                 .value = 8,
                 .min = 1,
                 .max = 16,
                 .lo = 1,
                 .hi = 1024},
        .ladder = {.step = 1, .levels = 10},
        // "auto" tries group_size first: the research's 7B baselines act on group size
        // (docs/simulator.md).
        .auto_rank = 0,
        .static_pin = true,
        .feature = "group_size_frac",
    },
#ifdef FW_TEST_EXTRA_KNOB
    // Test-only throwaway knob (tests/extra_knob/extra_knob_test.cpp).
    ActuatorDef{
        .name = "test_knob",
        .scope = ActuatorScope::kJob,
        .unit = "units",
        .range = RangeSource::kJob,
        .shield_rank = 2,
        .flag_name = "test_knob",
        .action_name = "test_knob",
        .help = "throwaway knob of the extra-knob test",
        .keys = {.min_key = "test_knob_min",
                 .max_key = "test_knob_max",
                 .value = 10,
                 .min = 0,
                 .max = 10,
                 .lo = 0,
                 .hi = 100},
        .ladder = {.step = 2, .levels = 6},
        .auto_rank = -1,
        .static_pin = true,
        .feature = "test_knob_frac",
    },
#endif
    ActuatorDef{
        .name = "cap",
        .scope = ActuatorScope::kGpu,
        .unit = "W",
        .range = RangeSource::kDevice,
        .shield_rank = 100,
        .flag_name = "caps",
        .action_name = "power_cap",
        .help = "the GPU's enforced power cap (NVML power limit)",
        .keys = {},
        // The caps ladder's notch, W (an assumption: fine enough to track, coarse enough to
        // matter against a +-2 % sensor); PPO cap levels 50 %, 55 %, ..., 100 % of the maximum.
        .ladder = {.step = 10, .levels = 11},
        .auto_rank = -1,
        .static_pin = false,
        .feature = "",
    },
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

// One KnobKeys field of every per-job row (e.g. knob_defaults(&KnobKeys::value): the default
// settings), in row order.
constexpr KnobValues knob_defaults(double KnobKeys::*field) {
  KnobValues v{};
  for (int i = 0; i < kNumKnobs; ++i) v[i] = kActuatorTable[i].keys.*field;
  return v;
}

// Table index of a name (canonical, flag or action name); -1 when unknown.
constexpr int find_actuator(std::string_view name) {
  for (int i = 0; i < kNumActuators; ++i) {
    const ActuatorDef& a = kActuatorTable[i];
    if (a.name == name || a.flag_name == name || a.action_name == name) return i;
  }
  return -1;
}

// Names for the rows that code refers to by name (the simulated GRPO workload's response,
// studies). Each value is its row's index, looked up by name: a new row renumbers nothing and
// needs no entry here unless code names it.
enum class Knob : int {
  kGenConcurrency = find_actuator("gen_concurrency"),
  kGroupSize = find_actuator("group_size"),
};
static_assert(static_cast<int>(Knob::kGenConcurrency) >= 0 &&
              static_cast<int>(Knob::kGroupSize) >= 0);

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

// Knob indices with auto_rank >= 0, lowest rank first (the order actuator "auto" tries them);
// kNumAutoKnobs of them.
inline constexpr int kNumAutoKnobs = [] {
  int n = 0;
  for (int i = 0; i < kNumKnobs; ++i) n += kActuatorTable[i].auto_rank >= 0 ? 1 : 0;
  return n;
}();
inline constexpr std::array<int, kNumAutoKnobs> kKnobAutoOrder = [] {
  std::array<int, kNumAutoKnobs> o{};
  int n = 0;
  for (int i = 0; i < kNumKnobs; ++i) {
    if (kActuatorTable[i].auto_rank >= 0) o[n++] = i;
  }
  for (int i = 1; i < n; ++i) {
    for (int k = i; k > 0 && kActuatorTable[o[k]].auto_rank < kActuatorTable[o[k - 1]].auto_rank;
         --k) {
      std::swap(o[k], o[k - 1]);
    }
  }
  return o;
}();

// Per-GPU settings beyond the cap (issue #48, docs/stabilization.md): GPU power smoothing
// (NVML's nvmlDevicePowerSmoothing* parameters: the floor as a percentage of the TMP ceiling,
// ramp-up and ramp-down rates, the ramp-down hysteresis) and the fill workload's target power.
// A controller writes them through Command::gpu_settings (per GPU, NaN: unchanged); the
// SafetyLimiter passes a set value through (rejecting a negative one: every row is >= 0; a rate
// may be +infinity, "no limit"); the plant clamps them to what the device offers and refuses
// them (write() Status) where the device has none — only sim::SitePlant applies them today.
// They are a table of their own, not rows of kActuatorTable: its rows size the PPO action
// factors (rl/plant_features.hpp, stored in policy files), the claims bitset and the knob
// arrays, none of which commands these. Not claimable: every controller's set entries merge
// (control/controller.hpp merge_command()).
inline constexpr std::array kGpuSettingTable = {
    ActuatorDef{.name = "smoothing_floor",
                .scope = ActuatorScope::kGpu,
                .unit = "% of the TMP ceiling",
                .range = RangeSource::kDevice,
                .shield_rank = -1,
                .flag_name = "smoothing_floor",
                .action_name = "",
                .help = "power smoothing's primary floor (NVML PERCENT_TMP_FLOOR); 0: no floor",
                .keys = {},
                .ladder = {},
                .auto_rank = -1,
                .static_pin = false,
                .feature = ""},
    ActuatorDef{.name = "smoothing_ramp_up",
                .scope = ActuatorScope::kGpu,
                .unit = "W/s",
                .range = RangeSource::kDevice,
                .shield_rank = -1,
                .flag_name = "smoothing_ramp_up",
                .action_name = "",
                .help = "power smoothing's ramp-up rate (NVML RAMP_UP_RATE); > 0, inf: none",
                .keys = {},
                .ladder = {},
                .auto_rank = -1,
                .static_pin = false,
                .feature = ""},
    ActuatorDef{.name = "smoothing_ramp_down",
                .scope = ActuatorScope::kGpu,
                .unit = "W/s",
                .range = RangeSource::kDevice,
                .shield_rank = -1,
                .flag_name = "smoothing_ramp_down",
                .action_name = "",
                .help = "power smoothing's ramp-down rate (NVML RAMP_DOWN_RATE); > 0, inf: none",
                .keys = {},
                .ladder = {},
                .auto_rank = -1,
                .static_pin = false,
                .feature = ""},
    ActuatorDef{.name = "smoothing_hysteresis",
                .scope = ActuatorScope::kGpu,
                .unit = "ms",
                .range = RangeSource::kDevice,
                .shield_rank = -1,
                .flag_name = "smoothing_hysteresis",
                .action_name = "",
                .help = "power smoothing's ramp-down hysteresis (NVML RAMP_DOWN_HYSTERESIS)",
                .keys = {},
                .ladder = {},
                .auto_rank = -1,
                .static_pin = false,
                .feature = ""},
    ActuatorDef{.name = "fill",
                .scope = ActuatorScope::kGpu,
                .unit = "W",
                .range = RangeSource::kDevice,
                .shield_rank = -1,
                .flag_name = "fill",
                .action_name = "",
                .help = "the fill workload's target power while the job holds the GPU; 0: off",
                .keys = {},
                .ladder = {},
                .auto_rank = -1,
                .static_pin = false,
                .feature = ""},
};
inline constexpr int kNumGpuSettings = static_cast<int>(kGpuSettingTable.size());

// Indices of kGpuSettingTable's rows (checked against the names below).
enum class GpuSetting : int {
  kSmoothingFloor = 0,
  kSmoothingRampUp = 1,
  kSmoothingRampDown = 2,
  kSmoothingHysteresis = 3,
  kFill = 4,
};
static_assert(kGpuSettingTable[0].name == "smoothing_floor" &&
              kGpuSettingTable[1].name == "smoothing_ramp_up" &&
              kGpuSettingTable[2].name == "smoothing_ramp_down" &&
              kGpuSettingTable[3].name == "smoothing_hysteresis" &&
              kGpuSettingTable[4].name == "fill");

using GpuSettingValues = std::array<double, kNumGpuSettings>;  // NaN: unchanged / unset
inline constexpr GpuSettingValues kNoGpuSettings = [] {
  GpuSettingValues v{};
  for (double& x : v) x = std::numeric_limits<double>::quiet_NaN();
  return v;
}();

}  // namespace fw
