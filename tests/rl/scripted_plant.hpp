#pragma once
// A hand-made plant for the plant-environment and PPO-controller tests: one GPU, one job
// exposing gen_concurrency (1..64) and group_size (1..16). Power is base_w + w_per_conc ·
// gen_concurrency, tokens grow at tok_per_conc · gen_concurrency per second, and a training
// step completes every step_s. Exact arithmetic, no noise, so tests can predict every value.

#include <cmath>
#include <memory>

#include "control/plant.hpp"

namespace fw::rl::testing {

class ScriptedPlant : public Plant {
 public:
  double base_w = 200, w_per_conc = 10, tok_per_conc = 10, step_s = 20;
  int writes = 0;

  explicit ScriptedPlant(double gen_concurrency = 10, double group_size = 8)
      : conc_(gen_concurrency), group_(group_size) {
    info_.gpus = {{"scripted", 100, 400, 400, 400}};
    JobInfo j;
    j.name = "job";
    j.kind = "grpo";
    j.gpus = {0};
    j.knob_ranges[0] = {true, 1, 64, 1};
    j.knob_ranges[1] = {true, 1, 16, 1};
    j.default_knobs = {gen_concurrency, group_size};
    info_.jobs = {j};
  }
  const PlantInfo& info() const override { return info_; }
  Status read(double now_s, Snapshot& out) override {
    tokens_ += tok_per_conc * conc_ * (now_s - t_);
    t_ = now_s;
    out.time_s = now_s;
    out.gpus.resize(1);
    out.gpus[0] = GpuReading{};
    out.gpus[0].power_w = power_w();
    out.gpus[0].cap_w = 400;
    out.jobs.resize(1);
    out.jobs[0].job = 0;
    out.jobs[0].phase = Phase::kGenerate;
    out.jobs[0].tokens_total = tokens_;
    out.jobs[0].steps_total = std::floor(now_s / step_s + 1e-9);
    out.jobs[0].knobs = {conc_, group_};
    return Status::Ok();
  }
  Status write(const Command& cmd) override {
    ++writes;
    if (!cmd.knobs.empty()) {
      if (!std::isnan(cmd.knobs[0][0])) conc_ = cmd.knobs[0][0];
      if (!std::isnan(cmd.knobs[0][1])) group_ = cmd.knobs[0][1];
    }
    return Status::Ok();
  }
  double power_w() const { return base_w + w_per_conc * conc_; }
  double gen_concurrency() const { return conc_; }

 private:
  PlantInfo info_;
  double conc_, group_;
  double t_ = 0, tokens_ = 0;
};

// A budget of `watts` per GPU judged over `window_s`.
inline BudgetSchedule gpu_budget(double watts, double window_s = 30) {
  BudgetSchedule b;
  b.entries.push_back({0, Budget{watts, BudgetScope::kGpu, window_s}});
  return b;
}

}  // namespace fw::rl::testing
