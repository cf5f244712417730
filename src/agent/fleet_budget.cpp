#include "agent/fleet_budget.hpp"

#include <cmath>

namespace fw::agent {
namespace {

double reading(const Snapshot& s, size_t gpu, double GpuReading::*field) {
  if (gpu >= s.gpus.size()) return 0;
  const double v = s.gpus[gpu].*field;
  return std::isfinite(v) ? v : 0;
}

}  // namespace

fleet::NodeRecord fleet_record(const std::string& node, const PlantInfo& info,
                               const Snapshot& latest, double now_unix_s,
                               const std::map<std::string, double>& job_pfi) {
  fleet::NodeRecord r;
  r.node = node;
  r.gpus = static_cast<int>(info.gpus.size());
  for (size_t g = 0; g < info.gpus.size(); ++g) {
    r.nameplate_w += info.gpus[g].max_cap_w;
    r.min_w += info.gpus[g].min_cap_w;
    r.draw_w += reading(latest, g, &GpuReading::power_w);
    r.cap_w += reading(latest, g, &GpuReading::cap_w);
  }
  for (const JobInfo& j : info.jobs) {
    fleet::JobRecord jr;
    jr.id = j.name;
    jr.gpus = static_cast<int>(j.gpus.size());
    for (int g : j.gpus) jr.draw_w += reading(latest, static_cast<size_t>(g), &GpuReading::power_w);
    if (jr.gpus > 0) r.jobs.push_back(jr);
  }
  fleet::set_job_pfi(r, job_pfi);
  r.time_unix_s = now_unix_s;
  return r;
}

}  // namespace fw::agent
