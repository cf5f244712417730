#include "runtime/sim_node_plant.hpp"

#include <cmath>

#include "actuation/fake_power_cap_actuator.hpp"
#include "hw/gpu_catalog.hpp"
#include "sim/scenario.hpp"

namespace fw {
namespace {

class SimNodePlant : public NodePlant {
 public:
  SimNodePlant(NodePlantConfig cfg, JobChannel* jobs) : NodePlant(std::move(cfg), jobs) {}

  Status open(const std::string& scenario_path) {
    auto sc = sim::load_scenario(scenario_path, cfg_.sim_overrides);
    if (!sc.ok()) return sc.status();
    const sim::Scenario& scenario = sc.value();
    defaults_.budget = scenario.budget;
    defaults_.episode_s = scenario.duration_s;
    defaults_.model_plant = [scenario](uint64_t seed) { return sim::make_plant(scenario, seed); };
    std::vector<double> caps_w;
    for (const auto& g : scenario.gpus)
      caps_w.push_back(g.power_cap_w > 0 ? g.power_cap_w : kUnset);
    adopt(sim::make_plant(scenario, cfg_.seed), caps_w);
    return Status::Ok();
  }

  // The plant's caps in force at the start: caps_w[g] where set, else the GPU's default.
  void adopt(std::unique_ptr<Plant> plant, const std::vector<double>& caps_w) {
    sim_ = std::move(plant);
    sim_info_ = sim_->info();
    info_ = sim_info_;
    reachable_.assign(sim_info_.jobs.size(), true);
    reach_knobs();
    std::vector<FakeGpuCap> fake;
    for (size_t g = 0; g < info_.gpus.size(); ++g) {
      const GpuInfo& gi = info_.gpus[g];
      const double cap = g < caps_w.size() && !std::isnan(caps_w[g]) ? caps_w[g] : gi.default_cap_w;
      fake.push_back({static_cast<int>(g), {gi.min_cap_w, gi.max_cap_w, gi.default_cap_w}, cap});
      const hw::GpuCatalogEntry* spec = hw::find_gpu(gi.model);
      node_gpus_.push_back({static_cast<int>(g), "sim-" + std::to_string(g),
                            "simulated " + gi.model,
                            spec && spec->power_avg_1s ? "sim:avg_1s" : "sim:instant",
                            spec && spec->power_avg_1s ? "avg_1s" : "instant", true});
    }
    caps_ = std::make_unique<FakePowerCapActuator>(std::move(fake));
  }

  Status read(double now_s, Snapshot& out) override {
    // What the simulator leaves alone of a reused snapshot is not its: the last read's overlay.
    for (JobReading& j : out.jobs) {
      j.starts_in_s = j.ends_in_s = j.checkpoint_in_iters = j.checkpoint_s = kUnset;
    }
    FW_RETURN_IF_ERROR(sim_->read(now_s, out));
    for (size_t g = 0; g < out.gpus.size() && g < caps_->gpus().size(); ++g) {
      auto cap = caps_->cap_w(static_cast<int>(g));
      if (cap.ok()) out.gpus[g].cap_w = cap.value();
    }
    for (size_t j = 0; j < out.jobs.size() && j < channel_jobs_.size(); ++j) {
      announce(channel_jobs_[j].reading, out.jobs[j]);
    }
    out.time_s = now_s;
    return Status::Ok();
  }

  Status smoothing_support() const override {
    return Status::NotSupported(
        "power smoothing: the simulated node (sim backend) has none; the site simulator of "
        "`flexwatt stabilize` models it (docs/stabilization.md)");
  }
  Status fill_support() const override {
    return Status::NotSupported(
        "fill: the simulated node (sim backend) runs no fill workload; the site simulator of "
        "`flexwatt stabilize` models it (docs/stabilization.md)");
  }

  Status write(const Command& cmd) override {
    if (cmd.sets_gpu_settings()) {
      return Status::NotSupported(
          "write: power smoothing and fill settings: the simulated node has neither; nothing "
          "applied");
    }
    Status first;
    Command sim_cmd;
    for (size_t g = 0; g < cmd.power_cap_w.size() && g < caps_->gpus().size(); ++g) {
      const double w = cmd.power_cap_w[g];
      if (std::isnan(w)) continue;
      auto r = caps_->set(caps_->gpus()[g], w);
      if (!r.ok()) {
        if (first.ok()) first = r.status();
        continue;
      }
      sim_cmd.power_cap_w.resize(info_.gpus.size(), kUnset);
      sim_cmd.power_cap_w[g] = r.value().enforced_w;
    }
    for (size_t j = 0; j < cmd.knobs.size(); ++j) {
      if (jobs_ && j < channel_jobs_.size()) jobs_->set_knobs(channel_jobs_[j].id, cmd.knobs[j]);
    }
    sim_cmd.knobs = cmd.knobs;
    // An unreachable job's knobs stay as they are: nothing hands them to it.
    for (size_t j = 0; j < sim_cmd.knobs.size() && j < reachable_.size(); ++j) {
      if (!reachable_[j]) sim_cmd.knobs[j] = kNoKnobs;
    }
    if (sim_cmd.any_set()) {
      Status s = sim_->write(sim_cmd);
      if (!s.ok() && first.ok()) first = s;
    }
    return first;
  }

  // The simulated jobs are fixed: the channel is read for its ids, report ages and
  // announcements only.
  bool refresh_jobs() override {
    bool first = false;
    if (jobs_) (void)read_channel(&first);
    return reach_knobs();
  }

  MissedDeadlines missed_deadlines() const override { return MissedDeadlines::kCatchUp; }

 private:
  // Channel job j's announcements (starts_in_s, ends_in_s, checkpoint_in_iters, checkpoint_s:
  // what the job's client sent, aged by the channel) on simulated job j, each where the
  // simulator announces none (the cluster simulator never does): the client's seconds are wall
  // seconds, the plant's run time_scale faster, so the seconds are scaled (iterations are not).
  // Progress and phase stay the simulator's.
  void announce(const JobReading& from, JobReading& to) const {
    const double k = cfg_.time_scale;
    if (std::isnan(to.starts_in_s)) to.starts_in_s = from.starts_in_s * k;
    if (std::isnan(to.ends_in_s)) to.ends_in_s = from.ends_in_s * k;
    if (std::isnan(to.checkpoint_in_iters)) to.checkpoint_in_iters = from.checkpoint_in_iters;
    if (std::isnan(to.checkpoint_s)) to.checkpoint_s = from.checkpoint_s * k;
  }

  // Simulated job j's knobs are reachable while channel job j is registered (or always with
  // sim_knobs_without_job); info_ is the scenario's info with the others' knobs unavailable.
  // True when the reachable set changed.
  bool reach_knobs() {
    bool changed = false;
    for (size_t j = 0; j < sim_info_.jobs.size(); ++j) {
      const bool r = cfg_.sim_knobs_without_job || j < channel_jobs_.size();
      if (r == reachable_[j]) continue;
      changed = true;
      reachable_[j] = r;
      for (int k = 0; k < kNumKnobs; ++k) {
        info_.jobs[j].knob_ranges[k].available = r && sim_info_.jobs[j].knob_ranges[k].available;
      }
    }
    return changed;
  }

  std::unique_ptr<Plant> sim_;
  PlantInfo sim_info_;           // the scenario's, every knob as the simulator has it
  std::vector<bool> reachable_;  // per simulated job
};

}  // namespace

Result<std::unique_ptr<NodePlant>> open_sim_node_plant(const NodePlantConfig& cfg,
                                                       const std::string& scenario_path,
                                                       JobChannel* jobs) {
  auto p = std::make_unique<SimNodePlant>(cfg, jobs);
  FW_RETURN_IF_ERROR(p->open(scenario_path));
  return std::unique_ptr<NodePlant>(std::move(p));
}

std::unique_ptr<NodePlant> adopt_sim_plant(const NodePlantConfig& cfg, std::unique_ptr<Plant> plant,
                                           const std::vector<double>& caps_w, JobChannel* jobs) {
  auto p = std::make_unique<SimNodePlant>(cfg, jobs);
  p->adopt(std::move(plant), caps_w);
  return p;
}

}  // namespace fw
