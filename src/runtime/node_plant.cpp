#include "runtime/node_plant.hpp"

#include <cmath>
#include <string>

#include "actuation/fake_power_cap_actuator.hpp"
#include "actuation/nvml_power_cap_actuator.hpp"
#include "hw/gpu_catalog.hpp"
#include "hw/nvml/nvml_library.hpp"
#include "sim/scenario.hpp"
#include "telemetry/nvml_source.hpp"

namespace fw {

struct NodePlant::Hardware {
  std::unique_ptr<NvmlGpuSource> source;
  std::vector<int> read_order;  // NVML indices, plant order
};

NodePlant::NodePlant(NodePlantConfig cfg, JobChannel* jobs) : cfg_(std::move(cfg)), jobs_(jobs) {}
NodePlant::~NodePlant() = default;

Result<std::unique_ptr<NodePlant>> NodePlant::open(const NodePlantConfig& cfg, JobChannel* jobs) {
  std::unique_ptr<NodePlant> p(new NodePlant(cfg, jobs));
  if (!(cfg.time_scale > 0)) return Status::InvalidArgument("time_scale must be > 0");
  if (cfg.time_scale != 1 && cfg.backend.rfind("sim:", 0) != 0) {
    return Status::InvalidArgument("time_scale: only the sim backend runs faster than real time");
  }
  if (cfg.backend == "nvml" || cfg.backend == "fake-nvml") {
    if (cfg.backend == "fake-nvml" && cfg.nvml_library.empty()) {
      return Status::InvalidArgument("backend fake-nvml: nvml_library (the fake library) not set");
    }
    FW_RETURN_IF_ERROR(p->open_hardware());
  } else if (cfg.backend.rfind("sim:", 0) == 0 && cfg.backend.size() > 4) {
    FW_RETURN_IF_ERROR(p->open_sim(cfg.backend.substr(4)));
  } else {
    return Status::InvalidArgument("backend: '" + cfg.backend +
                                   "' is not one of nvml, fake-nvml, sim:SCENARIO");
  }
  p->refresh_jobs();
  return p;
}

Status NodePlant::open_hardware() {
  auto lib = cfg_.nvml_library.empty() ? nvml::NvmlLibrary::load()
                                       : nvml::NvmlLibrary::load_path(cfg_.nvml_library);
  if (!lib.ok()) return lib.status();
  std::shared_ptr<const nvml::NvmlLibrary> shared = std::move(lib).value();
  auto src = NvmlGpuSource::open(shared, cfg_.gpus);
  if (!src.ok()) return src.status();
  auto act = NvmlPowerCapActuator::open(shared, cfg_.gpus);
  if (!act.ok()) return act.status();
  hw_ = std::make_unique<Hardware>();
  hw_->source = std::move(src).value();
  caps_ = std::move(act).value();
  hw_->read_order = caps_->gpus();
  for (int g : hw_->read_order) {
    const GpuDeviceInfo& d = hw_->source->info(g);
    CapConstraints c = caps_->constraints(g);
    GpuInfo gi;
    const hw::GpuCatalogEntry* spec = hw::find_gpu_by_device_name(d.name);
    gi.model = spec ? std::string(spec->name) : d.name;
    gi.min_cap_w = std::isnan(c.min_w) ? 0 : c.min_w;
    gi.max_cap_w = std::isnan(c.max_w) ? 0 : c.max_w;
    gi.default_cap_w = std::isnan(c.default_w) ? gi.max_cap_w : c.default_w;
    gi.tdp_w = spec ? spec->tdp_w : gi.max_cap_w;
    info_.gpus.push_back(gi);
    // Without nvmlDeviceGetUUID: "index-N" keeps the UUID label present and unique on the node.
    node_gpus_.push_back({g, d.uuid.empty() ? "index-" + std::to_string(g) : d.uuid, d.name});
  }
  return Status::Ok();
}

Status NodePlant::open_sim(const std::string& scenario_path) {
  auto sc = sim::load_scenario(scenario_path, cfg_.sim_overrides);
  if (!sc.ok()) return sc.status();
  sim_ = sim::make_plant(sc.value(), cfg_.seed);
  scenario_budget_ = sc.value().budget;
  scenario_duration_s_ = sc.value().duration_s;
  sim_factory_ = [scenario = sc.value()](uint64_t seed) { return sim::make_plant(scenario, seed); };
  info_ = sim_->info();
  std::vector<FakeGpuCap> fake;
  for (size_t g = 0; g < info_.gpus.size(); ++g) {
    const GpuInfo& gi = info_.gpus[g];
    double cap =
        sc.value().gpus[g].power_cap_w > 0 ? sc.value().gpus[g].power_cap_w : gi.default_cap_w;
    fake.push_back({static_cast<int>(g), {gi.min_cap_w, gi.max_cap_w, gi.default_cap_w}, cap});
    node_gpus_.push_back(
        {static_cast<int>(g), "sim-" + std::to_string(g), "simulated " + gi.model});
  }
  caps_ = std::make_unique<FakePowerCapActuator>(std::move(fake));
  return Status::Ok();
}

bool NodePlant::refresh_jobs() {
  if (!jobs_) {
    if (!sim_ && !jobs_read_) {
      jobs_read_ = true;
      JobInfo node;
      node.name = "node";
      node.kind = "unregistered";
      for (size_t g = 0; g < info_.gpus.size(); ++g) node.gpus.push_back(static_cast<int>(g));
      info_.jobs = {node};
    }
    return false;
  }
  // Compare the ids, not only the generation: the two reads of the channel are not atomic.
  std::vector<ChannelJob> now = jobs_->jobs();
  bool same = now.size() == channel_jobs_.size();
  for (size_t j = 0; same && j < now.size(); ++j) same = now[j].id == channel_jobs_[j].id;
  channel_jobs_ = std::move(now);
  const bool first = !jobs_read_;
  jobs_read_ = true;
  if (sim_ || (same && !first)) return false;  // sim: the simulated jobs are fixed
  job_ids_.clear();
  for (const ChannelJob& j : channel_jobs_) job_ids_.push_back(j.id);
  info_.jobs.clear();
  std::vector<int> all;
  for (size_t g = 0; g < info_.gpus.size(); ++g) all.push_back(static_cast<int>(g));
  for (const ChannelJob& j : channel_jobs_) {
    info_.jobs.push_back(j.info);
    std::vector<int>& gpus = info_.jobs.back().gpus;
    if (gpus.empty()) {
      gpus = all;  // a job on the whole node
      continue;
    }
    std::vector<int> plant_gpus;
    for (int nvml : gpus) {
      for (size_t g = 0; g < node_gpus_.size(); ++g) {
        if (node_gpus_[g].index == nvml) plant_gpus.push_back(static_cast<int>(g));
      }
    }
    gpus = plant_gpus.empty() ? all : plant_gpus;
  }
  if (info_.jobs.empty()) {
    // No job registered: the node's GPUs as one job without knobs, so cap controllers act.
    JobInfo node;
    node.name = "node";
    node.kind = "unregistered";
    node.gpus = all;
    info_.jobs.push_back(node);
  }
  return !first;
}

void NodePlant::adopt_caps_in_force() {
  if (sim_) return;
  for (size_t g = 0; g < info_.gpus.size() && g < caps_->gpus().size(); ++g) {
    auto cap = caps_->cap_w(caps_->gpus()[g]);
    if (cap.ok() && std::isfinite(cap.value())) info_.gpus[g].default_cap_w = cap.value();
  }
}

const std::string& NodePlant::job_id(size_t j) const {
  static const std::string kNone;
  return j < channel_jobs_.size() ? channel_jobs_[j].id : kNone;
}

double NodePlant::clock_event_reasons(size_t g) const {
  return g < clock_event_reasons_.size() ? clock_event_reasons_[g] : kUnset;
}

double NodePlant::job_report_age_s(size_t j) const {
  return j < channel_jobs_.size() ? channel_jobs_[j].report_age_s : kUnset;
}

Status NodePlant::read(double now_s, Snapshot& out) {
  if (sim_) {
    FW_RETURN_IF_ERROR(sim_->read(now_s, out));
    for (size_t g = 0; g < out.gpus.size() && g < caps_->gpus().size(); ++g) {
      auto cap = caps_->cap_w(static_cast<int>(g));
      if (cap.ok()) out.gpus[g].cap_w = cap.value();
    }
    out.time_s = now_s;
    return Status::Ok();
  }
  // read_gpus, keeping each GPU's clock-event reasons of this read (NaN: the device gives none).
  out.gpus.resize(hw_->read_order.size());
  clock_event_reasons_.assign(hw_->read_order.size(), kUnset);
  for (size_t i = 0; i < hw_->read_order.size(); ++i) {
    GpuSample sample;
    FW_RETURN_IF_ERROR(hw_->source->read(hw_->read_order[i], now_s, sample));
    out.gpus[i] = sample.reading;
    if (sample.has_clock_event_reasons) {
      clock_event_reasons_[i] = static_cast<double>(sample.clock_event_reasons);
    }
  }
  out.jobs.assign(info_.jobs.size(), JobReading{});
  for (size_t j = 0; j < out.jobs.size(); ++j) {
    if (j < channel_jobs_.size() && channel_jobs_[j].id == job_ids_[j]) {
      out.jobs[j] = channel_jobs_[j].reading;
    }
    out.jobs[j].job = static_cast<int>(j);
  }
  out.time_s = now_s;
  return Status::Ok();
}

Status NodePlant::write(const Command& cmd) {
  Status first;
  Command sim_cmd;
  for (size_t g = 0; g < cmd.power_cap_w.size() && g < caps_->gpus().size(); ++g) {
    double w = cmd.power_cap_w[g];
    if (std::isnan(w)) continue;
    auto r = caps_->set(caps_->gpus()[g], w);
    if (!r.ok()) {
      if (first.ok()) first = r.status();
      continue;
    }
    if (sim_) {
      sim_cmd.power_cap_w.resize(info_.gpus.size(), kUnset);
      sim_cmd.power_cap_w[g] = r.value().enforced_w;
    }
  }
  for (size_t j = 0; j < cmd.knobs.size(); ++j) {
    if (jobs_ && j < channel_jobs_.size()) jobs_->set_knobs(channel_jobs_[j].id, cmd.knobs[j]);
  }
  if (sim_) {
    sim_cmd.knobs = cmd.knobs;
    if (sim_cmd.any_set()) {
      Status s = sim_->write(sim_cmd);
      if (!s.ok() && first.ok()) first = s;
    }
  }
  return first;
}

}  // namespace fw
