#include "runtime/nvml_plant.hpp"

#include <algorithm>
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

// The plant's cap writer: NVML's, called on the deadline worker.
template <class Devices>
class DeadlineCaps : public PowerCapActuator {
 public:
  DeadlineCaps(std::shared_ptr<Devices> d, std::shared_ptr<CallDeadline> dl)
      : d_(std::move(d)), dl_(std::move(dl)) {}
  // Fixed at open, never written after: safe to read while a call runs.
  const std::vector<int>& gpus() const override { return d_->caps->gpus(); }
  CapConstraints constraints(int gpu) const override { return d_->caps->constraints(gpu); }
  PersistenceMode persistence_mode(int gpu) const override {
    return d_->caps->persistence_mode(gpu);
  }
  Result<double> cap_w(int gpu) override {
    auto out = std::make_shared<Result<double>>(Status::Internal("not run"));
    FW_RETURN_IF_ERROR(dl_->run([d = d_, out, gpu] { *out = d->caps->cap_w(gpu); }));
    return *out;
  }

 protected:
  Result<CapWrite> write(int gpu, double cap_w) override {
    auto out = std::make_shared<Result<CapWrite>>(Status::Internal("not run"));
    FW_RETURN_IF_ERROR(dl_->run([d = d_, out, gpu, cap_w] { *out = d->caps->set(gpu, cap_w); }));
    return *out;
  }

 private:
  std::shared_ptr<Devices> d_;
  std::shared_ptr<CallDeadline> dl_;
};

}  // namespace

Result<std::unique_ptr<NvmlPlant>> NvmlPlant::open(const NodePlantConfig& cfg, JobChannel* jobs) {
  std::unique_ptr<NvmlPlant> p(new NvmlPlant(cfg, jobs));
  auto lib = cfg.nvml_library.empty() ? nvml::NvmlLibrary::load()
                                      : nvml::NvmlLibrary::load_path(cfg.nvml_library);
  if (!lib.ok()) return lib.status();
  std::shared_ptr<const nvml::NvmlLibrary> shared = std::move(lib).value();
  auto src = NvmlGpuSource::open(shared, cfg.gpus);
  if (!src.ok()) return src.status();
  // The cap writer takes the GPUs the source opened: a lost one is skipped by both.
  std::vector<int> opened;
  if (cfg.gpus.empty()) {
    for (int g = 0; g < src.value()->device_count(); ++g) opened.push_back(g);
  } else {
    opened = cfg.gpus;  // the configured order
  }
  std::erase_if(opened, [&](int g) { return !src.value()->probed(g); });
  for (const NvmlGpuSource::LostGpu& l : src.value()->lost()) {
    p->lost_gpus_.push_back({l.gpu, "", l.reason});
  }
  auto act = NvmlPowerCapActuator::open(shared, opened);
  if (!act.ok()) return act.status();
  p->dev_ = std::make_shared<Devices>();
  p->dev_->source = std::move(src).value();
  p->dev_->caps = std::move(act).value();
  p->deadline_ = std::make_shared<CallDeadline>(cfg.nvml_deadline_s, "NVML");
  p->caps_ = std::make_unique<DeadlineCaps<Devices>>(p->dev_, p->deadline_);
  p->read_order_ = p->caps_->gpus();
  for (int g : p->read_order_) {
    const GpuDeviceInfo& d = p->dev_->source->info(g);
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
                             std::string(power_source_name(d.power_source)),
                             std::string(power_averaging_name(d.power_averaging)),
                             d.energy_source == EnergySource::kCounter});
  }
  return p;
}

std::vector<int> NvmlPlant::job_gpu_indices() const {
  std::vector<int> indices;
  for (const NodeGpu& g : node_gpus_) indices.push_back(g.index);
  return indices;
}

void NvmlPlant::drop_gpu(size_t i, const std::string& reason) {
  lost_gpus_.push_back({read_order_[i], node_gpus_[i].uuid, reason});
  caps_->mark_lost(read_order_[i]);
  read_order_.erase(read_order_.begin() + static_cast<std::ptrdiff_t>(i));
  info_.gpus.erase(info_.gpus.begin() + static_cast<std::ptrdiff_t>(i));
  node_gpus_.erase(node_gpus_.begin() + static_cast<std::ptrdiff_t>(i));
  gpus_changed_ = true;
}

bool NvmlPlant::refresh_jobs() {
  const bool gpus_changed = gpus_changed_;
  gpus_changed_ = false;
  if (!jobs_) {
    if (!jobs_read_ || gpus_changed) {
      jobs_read_ = true;
      info_.jobs = {whole_node_job(info_.gpus.size())};
    }
    return gpus_changed;
  }
  bool first = false;
  if (!read_channel(&first) && !gpus_changed) return false;
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
  return !first || gpus_changed;
}

void NvmlPlant::adopt_caps_in_force() {
  for (size_t g = 0; g < info_.gpus.size() && g < read_order_.size(); ++g) {
    auto cap = caps_->cap_w(read_order_[g]);
    if (cap.ok() && std::isfinite(cap.value())) info_.gpus[g].default_cap_w = cap.value();
  }
}

double NvmlPlant::clock_event_reasons(size_t g) const {
  return g < clock_event_reasons_.size() ? clock_event_reasons_[g] : kUnset;
}

Status NvmlPlant::read(double now_s, Snapshot& out) {
  // read_gpus, keeping each GPU's clock-event reasons of this read (NaN: the device gives none).
  // The calls run on the deadline worker, into buffers the worker owns until it returns.
  struct Reads {
    std::vector<GpuSample> samples;
    std::vector<Status> status;
  };
  auto reads = std::make_shared<Reads>();
  FW_RETURN_IF_ERROR(deadline_->run([d = dev_, reads, order = read_order_, now_s] {
    reads->samples.resize(order.size());
    reads->status.resize(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      reads->status[i] = d->source->read(order[i], now_s, reads->samples[i]);
      if (!reads->status[i].ok()) break;
    }
  }));
  out.gpus.resize(read_order_.size());
  clock_event_reasons_.assign(read_order_.size(), kUnset);
  for (size_t i = 0; i < read_order_.size(); ++i) {
    const Status& st = reads->status[i];
    if (st.code() == StatusCode::kUnavailable) {
      const std::string what = "GPU " + std::to_string(read_order_[i]) + " (" + node_gpus_[i].uuid +
                               ") is lost and dropped from control; the " +
                               std::to_string(read_order_.size() - 1) +
                               " others stay controlled: " + st.message();
      drop_gpu(i, st.message());
      return Status::Unavailable(what);
    }
    FW_RETURN_IF_ERROR(st);
    const GpuSample& sample = reads->samples[i];
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
  if (cmd.sets_gpu_settings()) {
    return Status::NotSupported(
        "write: power smoothing and fill settings are not written through the NVML plant yet "
        "(docs/stabilization.md); nothing applied");
  }
  Status first;
  for (size_t g = 0; g < cmd.power_cap_w.size() && g < read_order_.size(); ++g) {
    const double w = cmd.power_cap_w[g];
    if (std::isnan(w)) continue;
    auto r = caps_->set(read_order_[g], w);
    if (!r.ok() && first.ok()) first = r.status();
  }
  for (size_t j = 0; j < cmd.knobs.size(); ++j) {
    if (jobs_ && j < channel_jobs_.size()) jobs_->set_knobs(channel_jobs_[j].id, cmd.knobs[j]);
  }
  return first;
}

}  // namespace fw
