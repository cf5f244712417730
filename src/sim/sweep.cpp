#include "sim/sweep.hpp"

namespace fw::sim {

Result<std::vector<PfiPoint>> sweep_caps(const Scenario& s, int job,
                                         const std::vector<double>& caps_w,
                                         const SweepOptions& opt) {
  if (job < 0 || job >= static_cast<int>(s.jobs.size())) {
    return Status::InvalidArgument("sweep: no job " + std::to_string(job));
  }
  const JobSpec& spec = s.jobs[job];
  std::vector<PfiPoint> out;
  Snapshot snap;
  for (double cap : caps_w) {
    Scenario sc = s;
    for (int g : spec.gpus) sc.gpus[g].power_cap_w = cap;
    auto plant = make_cluster(sc, opt.seed);
    const double t0 = spec.start_s + opt.warmup_s;
    FW_RETURN_IF_ERROR(plant->read(t0, snap));
    const double tokens0 = snap.jobs[job].tokens_total;
    const double dt = s.sample_period_s;
    const int64_t n = static_cast<int64_t>(opt.measure_s / dt + 0.5);
    double sum_w = 0;
    for (int64_t k = 1; k <= n; ++k) {
      FW_RETURN_IF_ERROR(plant->read(t0 + static_cast<double>(k) * dt, snap));
      for (int g : spec.gpus) sum_w += snap.gpus[g].power_w;
    }
    const double span = static_cast<double>(n) * dt;
    out.push_back(
        {cap, (snap.jobs[job].tokens_total - tokens0) / span, sum_w / static_cast<double>(n)});
  }
  return out;
}

}  // namespace fw::sim
