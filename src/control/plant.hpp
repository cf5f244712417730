#pragma once
// Plant: what a control loop controls — the simulator or a real node. The loop,
// controllers and recorder are the same code for both.
//
// Contract: read() is called with non-decreasing times; a simulator advances its
// virtual time to now_s, a real node samples its sensors. write() applies a command
// that the SafetyLimiter has already clamped; the plant may still reject it (Status).
// A plant that can branch (the simulator) returns a deep copy from clone(), random
// streams included; hardware returns nullptr.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "vocab/command.hpp"
#include "vocab/snapshot.hpp"

namespace fw {

struct KnobRange {
  bool available = false;  // the job exposes this knob
  double min = 0, max = 0, step = 1;
};

struct GpuInfo {
  std::string model;     // e.g. "a100-sxm4-80gb"
  double min_cap_w = 0;  // settable power-limit range
  double max_cap_w = 0;
  double default_cap_w = 0;
  double tdp_w = 0;  // nameplate
};

struct JobInfo {
  std::string name;
  std::string kind;       // "grpo", "pretrain", ...
  std::vector<int> gpus;  // plant GPU indices the job runs on
  // A pipeline job's stage per gpus[i] (its registration's "pipeline_stages"; empty: not said):
  // what this node runs of a multi-node pipeline, for the `plan` controller's per-node share.
  std::vector<int> pipeline_stages;
  std::array<KnobRange, kNumKnobs> knob_ranges{};
  KnobValues default_knobs = kNoKnobs;
};

struct PlantInfo {
  std::vector<GpuInfo> gpus;
  std::vector<JobInfo> jobs;
  double nameplate_w() const {
    double s = 0;
    for (const auto& g : gpus) s += g.tdp_w;
    return s;
  }
};

class Plant {
 public:
  virtual ~Plant() = default;
  virtual const PlantInfo& info() const = 0;
  // Fills `out` with the readings at now_s (reusing its storage).
  virtual Status read(double now_s, Snapshot& out) = 0;
  virtual Status write(const Command& cmd) = 0;
  virtual std::unique_ptr<Plant> clone() const { return nullptr; }
};

// Builds a fresh plant for a run seed (calibration, sweeps, evaluation workers). The one
// plant-factory type of the code base.
using PlantFactory = std::function<std::unique_ptr<Plant>(uint64_t seed)>;

}  // namespace fw
