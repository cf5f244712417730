#pragma once
// A small first-order plant for control tests (not the simulator): each GPU's power
// follows min(demand, cap) with a 1 s lag plus seeded noise, where
//   demand_w = 60 + 20·gen_concurrency + 5·group_size   (knobs 1..16, step 1),
// and the job makes 10·gen_concurrency^0.8·sqrt(min(demand, cap)/demand) tokens per
// second per GPU and one step every 20 s. Clone-capable (a plain copy, RNG included).

#include <algorithm>
#include <cmath>
#include <memory>

#include "control/plant.hpp"
#include "core/rng.hpp"
#include "vocab/budget.hpp"

namespace fw::testing {

class FirstOrderPlant : public Plant {
 public:
  explicit FirstOrderPlant(uint64_t seed, int n_gpus = 1, double noise_w = 2.0, bool knobs = true)
      : rng_(Rng::stream(seed, "test.plant")), noise_w_(noise_w) {
    JobInfo job;
    job.name = "job0";
    job.kind = "grpo";
    for (int g = 0; g < n_gpus; ++g) {
      info_.gpus.push_back({"test-gpu", 100, 400, 400, 400});
      job.gpus.push_back(g);
    }
    if (knobs) {
      job.knob_ranges[0] = {true, 1, 16, 1};
      job.knob_ranges[1] = {true, 1, 16, 1};
      job.default_knobs[0] = job.default_knobs[1] = 16;
    }
    info_.jobs.push_back(job);
    caps_.assign(n_gpus, 400);
    power_.assign(n_gpus, 60);
    energy_.assign(n_gpus, 0);
    knobs_ = kNoKnobs;
    if (knobs) knobs_[0] = knobs_[1] = 16;
  }

  const PlantInfo& info() const override { return info_; }

  double demand_w() const {
    const double c = std::isnan(knobs_[0]) ? 16 : knobs_[0];
    const double g = std::isnan(knobs_[1]) ? 16 : knobs_[1];
    return 60 + 20 * c + 5 * g;
  }

  Status read(double now_s, Snapshot& out) override {
    const double dt = std::max(0.0, now_s - t_);
    t_ = now_s;
    const double demand = demand_w();
    const double conc = std::isnan(knobs_[0]) ? 16 : knobs_[0];
    out.time_s = now_s;
    out.gpus.resize(info_.gpus.size());
    for (size_t g = 0; g < info_.gpus.size(); ++g) {
      const double target = std::min(demand, caps_[g]);
      power_[g] += (target - power_[g]) * (1 - std::exp(-dt / 1.0));
      energy_[g] += power_[g] * dt;
      tokens_ += dt * 10 * std::pow(conc, 0.8) * std::sqrt(target / demand);
      GpuReading& r = out.gpus[g];
      r.gpu = static_cast<int>(g);
      r.power_w = power_[g] + noise_w_ * rng_.normal();
      r.energy_j = energy_[g];
      r.cap_w = caps_[g];
      r.sm_util = std::min(1.0, target / 400);
    }
    out.jobs.resize(1);
    out.jobs[0].job = 0;
    out.jobs[0].phase = Phase::kGenerate;
    out.jobs[0].tokens_total = tokens_;
    out.jobs[0].steps_total = std::floor(now_s / 20);
    out.jobs[0].knobs = knobs_;
    return Status::Ok();
  }

  Status write(const Command& cmd) override {
    ++writes_;
    last_ = cmd;
    for (size_t g = 0; g < cmd.power_cap_w.size() && g < caps_.size(); ++g) {
      const double c = cmd.power_cap_w[g];
      if (std::isnan(c)) continue;
      if (c < info_.gpus[g].min_cap_w || c > info_.gpus[g].max_cap_w) {
        ++bad_writes_;
        return Status::InvalidArgument("cap out of range");
      }
      caps_[g] = c;
    }
    for (size_t j = 0; j < cmd.knobs.size() && j < 1; ++j) {
      for (int k = 0; k < kNumKnobs; ++k) {
        const double v = cmd.knobs[j][k];
        if (std::isnan(v)) continue;
        const KnobRange& r = info_.jobs[0].knob_ranges[k];
        if (!r.available || v < r.min || v > r.max || !std::isfinite(v)) {
          ++bad_writes_;
          return Status::InvalidArgument("knob out of range");
        }
        knobs_[k] = v;
      }
    }
    return Status::Ok();
  }

  std::unique_ptr<Plant> clone() const override { return std::make_unique<FirstOrderPlant>(*this); }

  // Test probes.
  const KnobValues& knobs() const { return knobs_; }
  const std::vector<double>& caps() const { return caps_; }
  int writes() const { return writes_; }
  int bad_writes() const { return bad_writes_; }
  const Command& last_command() const { return last_; }

 private:
  PlantInfo info_;
  Rng rng_;
  double noise_w_;
  double t_ = 0, tokens_ = 0;
  std::vector<double> caps_, power_, energy_;
  KnobValues knobs_;
  int writes_ = 0, bad_writes_ = 0;
  Command last_;
};

// A plant that cannot branch (as hardware).
class UnclonablePlant : public FirstOrderPlant {
 public:
  using FirstOrderPlant::FirstOrderPlant;
  std::unique_ptr<Plant> clone() const override { return nullptr; }
};

// A budget schedule with one entry.
inline BudgetSchedule one_budget(double watts, double window_s = 30,
                                 BudgetScope scope = BudgetScope::kNode) {
  BudgetSchedule b;
  b.entries.push_back({0, Budget{watts, scope, window_s}});
  return b;
}

}  // namespace fw::testing
