#include "runtime/nvml_plant.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "actuation/nvml_power_cap_actuator.hpp"
#include "core/format.hpp"
#include "hw/gpu_catalog.hpp"
#include "nvml/nvml_library.hpp"

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
  // Power smoothing over the same GPUs; a driver without it leaves the plant without it.
  if (p->read_order_.empty()) {
    p->smoothing_support_ = Status::NotSupported("power smoothing: no GPU to set it on");
  } else if (auto sm = NvmlPowerSmoothingActuator::open(shared, p->read_order_); sm.ok()) {
    p->dev_->smoothing = std::move(sm).value();
    for (int g : p->read_order_) {
      Status st = p->dev_->smoothing->support(g);
      if (st.ok()) continue;
      p->smoothing_support_ = st;
      break;
    }
  } else {
    p->smoothing_support_ = sm.status();
  }
  const std::string& m = p->smoothing_support_.message();
  if (!p->smoothing_support_.ok() && m.rfind("power smoothing", 0) != 0) {
    p->smoothing_support_ = p->smoothing_support_.with_context("power smoothing");
  }
  return p;
}

Status NvmlPlant::fill_support() const {
  if (fill_jobs_.load()) return Status::Ok();
  return Status::NotSupported(
      "fill: no job on this node declared a fill hook (on hardware the fill workload is the job "
      "client's: it registers with \"fill\": true; docs/stabilization.md)");
}

const PowerSmoothingSettings* NvmlPlant::smoothing_in_force(int gpu) const {
  auto it = smoothing_in_force_.find(gpu);
  return it == smoothing_in_force_.end() ? nullptr : &it->second;
}

void NvmlPlant::take_smoothing(const std::map<int, PowerSmoothingSettings>& saved,
                               const std::map<int, PowerSmoothingSettings>& in_force) {
  saved_smoothing_.clear();
  for (const auto& [g, s] : saved) saved_smoothing_.push_back({g, s, ""});
  for (const auto& [g, s] : in_force) smoothing_in_force_[g] = s;
}

Status NvmlPlant::save_smoothing(const std::vector<SavedSmoothing>& kept) {
  if (!dev_->smoothing) {
    if (kept.empty()) return Status::Ok();
    return Status(smoothing_support_.code(),
                  "power smoothing saved for GPU " + std::to_string(kept[0].gpu) +
                      " cannot be put back here: " + smoothing_support_.message());
  }
  struct Job {
    Status status;
    std::map<int, PowerSmoothingSettings> saved;
  };
  auto job = std::make_shared<Job>();
  FW_RETURN_IF_ERROR(deadline_->run([d = dev_, job, kept] {
    job->status = d->smoothing->save_with(kept);
    job->saved = d->smoothing->saved();
  }));
  FW_RETURN_IF_ERROR(job->status);
  // In force now: what was read, except where a kept record still has to be put back.
  std::map<int, PowerSmoothingSettings> in_force = job->saved;
  for (const SavedSmoothing& k : kept) in_force.erase(k.gpu);
  take_smoothing(job->saved, in_force);
  return Status::Ok();
}

Status NvmlPlant::restore_smoothing() {
  if (!dev_->smoothing) return Status::Ok();
  std::vector<int> lost;
  for (const LostGpu& l : lost_gpus_) lost.push_back(l.index);
  struct Job {
    Status status;
    std::map<int, PowerSmoothingSettings> saved, restored;
  };
  auto job = std::make_shared<Job>();
  FW_RETURN_IF_ERROR(deadline_->run([d = dev_, job, lost] {
    PowerSmoothingActuator& a = *d->smoothing;
    std::vector<int> gpus;
    for (int g : a.changed()) {
      if (std::find(lost.begin(), lost.end(), g) == lost.end()) gpus.push_back(g);
    }
    if (gpus.empty()) return;
    job->status = a.restore(gpus);
    job->saved = a.saved();
    for (int g : gpus) {
      if (a.changed().count(g) == 0) job->restored[g] = a.saved().at(g);
    }
  }));
  if (!job->saved.empty()) take_smoothing(job->saved, job->restored);
  return job->status;
}

Status NvmlPlant::write_smoothing(const Command& cmd) {
  const std::string nothing = "; nothing applied";
  struct Job {
    std::vector<int> gpus;
    std::vector<PowerSmoothingRequest> req;
    Status status;
    bool writing = false;  // the first device write began
    size_t written = 0;
    std::map<int, PowerSmoothingSettings> saved, in_force;
  };
  auto job = std::make_shared<Job>();
  // The fill targets per channel job with a fill hook, by NVML index (handed over once the
  // whole command has passed its checks).
  std::map<std::string, std::map<int, double>> fills;
  // Checked whole, without a device call, before anything is written.
  for (size_t i = 0; i < cmd.gpu_settings.size() && i < read_order_.size(); ++i) {
    const GpuSettingValues& v = cmd.gpu_settings[i];
    const int g = read_order_[i];
    const std::string who = "GPU " + std::to_string(g) + " (" + node_gpus_[i].name + ")";
    const double fill_w = v[static_cast<int>(GpuSetting::kFill)];
    if (!std::isnan(fill_w)) {
      bool hooked = false;
      for (size_t j = 0; j < info_.jobs.size() && j < channel_jobs_.size(); ++j) {
        const std::vector<int>& on = info_.jobs[j].gpus;
        if (!channel_jobs_[j].fill ||
            std::find(on.begin(), on.end(), static_cast<int>(i)) == on.end()) {
          continue;
        }
        fills[channel_jobs_[j].id][g] = fill_w;
        hooked = true;
      }
      if (!hooked && fill_w != 0) {
        const Status support = fill_support();
        return Status::NotSupported(
            "write: fill = " + format_g(fill_w) + " W on " + who + ": " +
            (support.ok() ? std::string("its job declared no fill hook") : support.message()) +
            "; a controller's fill is refused here (stabilize: pre_fill=off)" + nothing);
      }
    }
    const double floor_pct = v[static_cast<int>(GpuSetting::kSmoothingFloor)];
    const double up = v[static_cast<int>(GpuSetting::kSmoothingRampUp)];
    const double down = v[static_cast<int>(GpuSetting::kSmoothingRampDown)];
    const double hyst_ms = v[static_cast<int>(GpuSetting::kSmoothingHysteresis)];
    if (std::isnan(floor_pct) && std::isnan(up) && std::isnan(down) && std::isnan(hyst_ms)) {
      continue;
    }
    const Status support = dev_->smoothing ? dev_->smoothing->support(g) : smoothing_support_;
    if (!support.ok()) return Status(support.code(), "write: " + support.message() + nothing);
    const PowerSmoothingLimits lim = dev_->smoothing->limits(g);
    const double frac = floor_pct / 100;
    if (!std::isnan(floor_pct) && !(frac >= lim.floor_frac_min && frac <= lim.floor_frac_max)) {
      return Status::InvalidArgument("write: power smoothing on " + who +
                                     ": smoothing_floor = " + format_g(floor_pct) +
                                     " % is outside [" + format_g(100 * lim.floor_frac_min) + ", " +
                                     format_g(100 * lim.floor_frac_max) +
                                     "] % (the device's settable floor, NVML_FI_PWR_SMOOTHING_MIN/"
                                     "MAX_PERCENT_TMP_FLOOR_SETTING; refused, never clamped)" +
                                     nothing);
    }
    const double ceiling_w =
        std::isfinite(lim.tdp_w) && lim.tdp_w > 0 ? lim.tdp_w : info_.gpus[i].max_cap_w;
    auto rate = [ceiling_w](double w_per_s) {
      return std::isinf(w_per_s) && w_per_s > 0 ? ceiling_w / kNoRampLimitS : w_per_s;
    };
    PowerSmoothingRequest r;
    r.enabled = true;
    r.floor_frac_of_tdp = frac;
    r.ramp_up_w_per_s = rate(up);
    r.ramp_down_w_per_s = rate(down);
    r.ramp_down_hysteresis_ms = hyst_ms;
    job->gpus.push_back(g);
    job->req.push_back(r);
  }
  for (const auto& [id, w] : fills) {
    if (jobs_) jobs_->set_fill(id, w);
  }
  if (job->gpus.empty()) return Status::Ok();
  FW_RETURN_IF_ERROR(deadline_->run([d = dev_, job] {
    PowerSmoothingActuator& a = *d->smoothing;
    // A row left NaN: the device's value.
    for (size_t k = 0; k < job->gpus.size(); ++k) {
      PowerSmoothingRequest& r = job->req[k];
      if (!std::isnan(r.floor_frac_of_tdp) && !std::isnan(r.ramp_up_w_per_s) &&
          !std::isnan(r.ramp_down_w_per_s) && !std::isnan(r.ramp_down_hysteresis_ms)) {
        continue;
      }
      Result<PowerSmoothingReading> now = a.read(job->gpus[k]);
      if (!now.ok()) {
        job->status = now.status();
        return;
      }
      const PowerSmoothingSettings& s = now->settings;
      if (std::isnan(r.floor_frac_of_tdp)) r.floor_frac_of_tdp = s.floor_frac_of_tdp;
      if (std::isnan(r.ramp_up_w_per_s)) r.ramp_up_w_per_s = s.ramp_up_w_per_s;
      if (std::isnan(r.ramp_down_w_per_s)) r.ramp_down_w_per_s = s.ramp_down_w_per_s;
      if (std::isnan(r.ramp_down_hysteresis_ms))
        r.ramp_down_hysteresis_ms = s.ramp_down_hysteresis_ms;
    }
    for (size_t k = 0; k < job->gpus.size(); ++k) {
      Result<PowerSmoothingSettings> v = a.validate(job->gpus[k], job->req[k]);
      if (!v.ok()) {
        job->status = v.status();
        return;
      }
    }
    job->writing = true;
    for (size_t k = 0; k < job->gpus.size(); ++k) {
      Result<PowerSmoothingReading> w = a.set(job->gpus[k], job->req[k]);
      job->saved = a.saved();
      if (!w.ok()) {
        job->status = w.status();
        return;
      }
      job->in_force[job->gpus[k]] = w->settings;
      ++job->written;
    }
  }));
  if (!job->saved.empty()) take_smoothing(job->saved, job->in_force);
  if (job->status.ok()) return Status::Ok();
  if (!job->writing) {
    return Status(job->status.code(), "write: " + job->status.message() + nothing);
  }
  return Status(job->status.code(), "write: " + job->status.message() + " (the settings of " +
                                        std::to_string(job->written) +
                                        " GPUs were written before it)");
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
  const bool changed = read_channel(&first);
  fill_jobs_ = std::any_of(channel_jobs_.begin(), channel_jobs_.end(),
                           [](const ChannelJob& j) { return j.fill; });
  if (!changed && !gpus_changed) return false;
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
    // Its pipeline stages follow its GPUs (a GPU not managed here, or lost, drops both).
    std::vector<int>& stages = info_.jobs.back().pipeline_stages;
    const bool staged = stages.size() == gpus.size();
    std::vector<int> plant_gpus, plant_stages;
    for (size_t i = 0; i < gpus.size(); ++i) {
      for (size_t g = 0; g < node_gpus_.size(); ++g) {
        if (node_gpus_[g].index != gpus[i]) continue;
        plant_gpus.push_back(static_cast<int>(g));
        if (staged) plant_stages.push_back(stages[i]);
      }
    }
    gpus = plant_gpus.empty() ? all : plant_gpus;
    stages = plant_gpus.empty() ? std::vector<int>{} : plant_stages;
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
  const Status settings = cmd.sets_gpu_settings() ? write_smoothing(cmd) : Status::Ok();
  return first.ok() ? settings : first;
}

}  // namespace fw
