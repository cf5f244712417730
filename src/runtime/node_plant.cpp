#include "runtime/node_plant.hpp"

#include "runtime/nvml_plant.hpp"
#include "runtime/sim_node_plant.hpp"

namespace fw {

Result<std::unique_ptr<NodePlant>> NodePlant::open(const NodePlantConfig& cfg, JobChannel* jobs) {
  if (!(cfg.time_scale > 0)) return Status::InvalidArgument("time_scale must be > 0");
  const bool sim = cfg.backend.rfind("sim:", 0) == 0 && cfg.backend.size() > 4;
  if (cfg.time_scale != 1 && !sim) {
    return Status::InvalidArgument("time_scale: only the sim backend runs faster than real time");
  }
  if (cfg.backend == "nvml" || cfg.backend == "fake-nvml") {
    if (cfg.backend == "fake-nvml" && cfg.nvml_library.empty()) {
      return Status::InvalidArgument("backend fake-nvml: nvml_library (the fake library) not set");
    }
    FW_ASSIGN_OR_RETURN(std::unique_ptr<NvmlPlant> p, NvmlPlant::open(cfg, jobs));
    p->refresh_jobs();
    return std::unique_ptr<NodePlant>(std::move(p));
  }
  if (sim) {
    FW_ASSIGN_OR_RETURN(std::unique_ptr<NodePlant> p,
                        open_sim_node_plant(cfg, cfg.backend.substr(4), jobs));
    p->refresh_jobs();
    return p;
  }
  return Status::InvalidArgument("backend: '" + cfg.backend +
                                 "' is not one of nvml, fake-nvml, sim:SCENARIO");
}

bool NodePlant::read_channel(bool* first) {
  // Compare the ids, not only the generation: the two reads of the channel are not atomic.
  std::vector<ChannelJob> now = jobs_->jobs();
  bool same = now.size() == channel_jobs_.size();
  for (size_t j = 0; same && j < now.size(); ++j) same = now[j].id == channel_jobs_[j].id;
  channel_jobs_ = std::move(now);
  *first = !jobs_read_;
  jobs_read_ = true;
  return !same || *first;
}

Status NodePlant::smoothing_support() const {
  return Status::NotSupported("power smoothing: the " + cfg_.backend +
                              " backend's node plant has none (docs/stabilization.md)");
}

Status NodePlant::fill_support() const {
  return Status::NotSupported("fill: the " + cfg_.backend +
                              " backend's node plant runs no fill workload "
                              "(docs/stabilization.md)");
}

const std::string& NodePlant::job_id(size_t j) const {
  static const std::string kNone;
  return j < channel_jobs_.size() ? channel_jobs_[j].id : kNone;
}

double NodePlant::job_report_age_s(size_t j) const {
  return j < channel_jobs_.size() ? channel_jobs_[j].report_age_s : kUnset;
}

}  // namespace fw
