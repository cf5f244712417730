#include "runtime/nvml_plant.hpp"

#include <cmath>
#include <string>

#include "actuation/nvml_power_cap_actuator.hpp"
#include "hw/gpu_catalog.hpp"
#include "hw/nvml/nvml_library.hpp"

namespace fw {
namespace {

// No job registered: the node's GPUs as one job without knobs, so cap controllers act.
JobInfo whole_node_job(size_t num_gpus) {
  JobInfo node;
  node.name = "node";
  node.kind = "unregistered";
  for (size_t g = 0; g < num_gpus; ++g) node.gpus.push_back(static_cast<int>(g));
  return node;
}

}  // namespace

Result<std::unique_ptr<NvmlPlant>> NvmlPlant::open(const NodePlantConfig& cfg, JobChannel* jobs) {
  std::unique_ptr<NvmlPlant> p(new NvmlPlant(cfg, jobs));
  auto lib = cfg.nvml_library.empty() ? nvml::NvmlLibrary::load()
                                      : nvml::NvmlLibrary::load_path(cfg.nvml_library);
  if (!lib.ok()) return lib.status();
  std::shared_ptr<const nvml::NvmlLibrary> shared = std::move(lib).value();
  auto src = NvmlGpuSource::open(shared, cfg.gpus);
  if (!src.ok()) return src.status();
  auto act = NvmlPowerCapActuator::open(shared, cfg.gpus);
  if (!act.ok()) return act.status();
  p->source_ = std::move(src).value();
  p->caps_ = std::move(act).value();
  p->read_order_ = p->caps_->gpus();
  for (int g : p->read_order_) {
    const GpuDeviceInfo& d = p->source_->info(g);
    CapConstraints c = p->caps_->constraints(g);
    GpuInfo gi;
    const hw::GpuCatalogEntry* spec = hw::find_gpu_by_device_name(d.name);
    gi.model = spec ? std::string(spec->name) : d.name;
    gi.min_cap_w = std::isnan(c.min_w) ? 0 : c.min_w;
    gi.max_cap_w = std::isnan(c.max_w) ? 0 : c.max_w;
    gi.default_cap_w = std::isnan(c.default_w) ? gi.max_cap_w : c.default_w;
    gi.tdp_w = spec ? spec->tdp_w : gi.max_cap_w;
    p->info_.gpus.push_back(gi);
    // Without nvmlDeviceGetUUID: "index-N" keeps the UUID label present and unique on the node.
    p->node_gpus_.push_back({g, d.uuid.empty() ? "index-" + std::to_string(g) : d.uuid, d.name,
                             std::string(power_source_name(d.power_source))});
  }
  return p;
}

std::vector<int> NvmlPlant::job_gpu_indices() const {
  std::vector<int> indices;
  for (const NodeGpu& g : node_gpus_) indices.push_back(g.index);
  return indices;
}

bool NvmlPlant::refresh_jobs() {
  if (!jobs_) {
    if (!jobs_read_) {
      jobs_read_ = true;
      info_.jobs = {whole_node_job(info_.gpus.size())};
    }
    return false;
  }
  bool first = false;
  if (!read_channel(&first)) return false;
  job_ids_.clear();
  for (const ChannelJob& j : channel_jobs_) job_ids_.push_back(j.id);
  info_.jobs.clear();
  const std::vector<int> all = whole_node_job(info_.gpus.size()).gpus;
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
  if (info_.jobs.empty()) info_.jobs.push_back(whole_node_job(info_.gpus.size()));
  return !first;
}

void NvmlPlant::adopt_caps_in_force() {
  for (size_t g = 0; g < info_.gpus.size() && g < caps_->gpus().size(); ++g) {
    auto cap = caps_->cap_w(caps_->gpus()[g]);
    if (cap.ok() && std::isfinite(cap.value())) info_.gpus[g].default_cap_w = cap.value();
  }
}

double NvmlPlant::clock_event_reasons(size_t g) const {
  return g < clock_event_reasons_.size() ? clock_event_reasons_[g] : kUnset;
}

Status NvmlPlant::read(double now_s, Snapshot& out) {
  // read_gpus, keeping each GPU's clock-event reasons of this read (NaN: the device gives none).
  out.gpus.resize(read_order_.size());
  clock_event_reasons_.assign(read_order_.size(), kUnset);
  for (size_t i = 0; i < read_order_.size(); ++i) {
    GpuSample sample;
    FW_RETURN_IF_ERROR(source_->read(read_order_[i], now_s, sample));
    out.gpus[i] = sample.reading;
    if (sample.has_clock_event_reasons) {
      clock_event_reasons_[i] = static_cast<double>(sample.clock_event_reasons);
    }
  }
  out.jobs.assign(info_.jobs.size(), JobReading{});
  for (size_t j = 0; j < out.jobs.size(); ++j) {
    if (j < channel_jobs_.size() && j < job_ids_.size() && channel_jobs_[j].id == job_ids_[j]) {
      out.jobs[j] = channel_jobs_[j].reading;
    }
    out.jobs[j].job = static_cast<int>(j);
  }
  out.time_s = now_s;
  return Status::Ok();
}

Status NvmlPlant::write(const Command& cmd) {
  Status first;
  for (size_t g = 0; g < cmd.power_cap_w.size() && g < caps_->gpus().size(); ++g) {
    const double w = cmd.power_cap_w[g];
    if (std::isnan(w)) continue;
    auto r = caps_->set(caps_->gpus()[g], w);
    if (!r.ok() && first.ok()) first = r.status();
  }
  for (size_t j = 0; j < cmd.knobs.size(); ++j) {
    if (jobs_ && j < channel_jobs_.size()) jobs_->set_knobs(channel_jobs_[j].id, cmd.knobs[j]);
  }
  return first;
}

}  // namespace fw
