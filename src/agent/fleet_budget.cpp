#include "agent/fleet_budget.hpp"

#include <algorithm>
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
  for (size_t k = 0; k < info.jobs.size(); ++k) {
    const JobInfo& j = info.jobs[k];
    fleet::JobRecord jr;
    jr.id = j.name;
    jr.gpus = static_cast<int>(j.gpus.size());
    for (int g : j.gpus) jr.draw_w += reading(latest, static_cast<size_t>(g), &GpuReading::power_w);
    // The start and end it announces (the coordinator's start and stop gates stagger them).
    if (k < latest.jobs.size()) {
      auto at = [&](double in_s) {  // 0: none announced
        return std::isfinite(in_s) ? now_unix_s + std::max(0.0, in_s) : 0.0;
      };
      jr.starts_at_unix_s = at(latest.jobs[k].starts_in_s);
      jr.ends_at_unix_s = at(latest.jobs[k].ends_in_s);
    }
    if (jr.gpus > 0) r.jobs.push_back(jr);
  }
  fleet::set_job_pfi(r, job_pfi);
  r.time_unix_s = now_unix_s;
  return r;
}

void MeasuredDrawCurve::add(double budget_w, double draw_w) {
  if (!std::isfinite(budget_w) || !std::isfinite(draw_w) || !(nameplate_w_ > floor_w_)) return;
  const double x = (budget_w - floor_w_) / (nameplate_w_ - floor_w_);
  const int k = std::clamp(static_cast<int>(std::floor(x * kBins)), 0, kBins - 1);
  bins_[k].budget += std::clamp(budget_w, floor_w_, nameplate_w_);
  bins_[k].draw += std::max(0.0, draw_w);
  ++bins_[k].n;
}

std::vector<std::pair<double, double>> MeasuredDrawCurve::curve() const {
  std::vector<std::pair<double, double>> out;
  for (const Bin& b : bins_) {
    if (b.n < min_samples_) continue;
    const double budget = b.budget / b.n;
    if (!out.empty() && !(budget > out.back().first)) continue;
    out.emplace_back(budget, b.draw / b.n);
  }
  if (out.size() < 2) out.clear();
  return out;
}

std::vector<std::pair<double, double>> node_draw_curve(
    const std::vector<std::pair<double, double>>& per_gpu, int gpus) {
  std::vector<std::pair<double, double>> out;
  for (const auto& [cap, draw] : per_gpu) out.emplace_back(cap * gpus, draw * gpus);
  return out;
}

double node_floor_w(const PlantInfo& info) {
  double w = 0;
  for (const GpuInfo& g : info.gpus) w += g.min_cap_w;
  return w;
}

bool clamp_caps_to_share(Command& command, const PlantInfo& info, const Snapshot& latest,
                         double share_w) {
  const size_t n = info.gpus.size();
  if (n == 0) return false;
  if (command.power_cap_w.size() != n) command.power_cap_w.resize(n, std::nan(""));
  std::vector<double> caps(n);
  double sum = 0, floor = 0;
  for (size_t g = 0; g < n; ++g) {
    const GpuInfo& gi = info.gpus[g];
    double c = command.power_cap_w[g];
    if (std::isnan(c)) c = g < latest.gpus.size() ? latest.gpus[g].cap_w : std::nan("");
    if (!std::isfinite(c)) c = gi.max_cap_w;
    caps[g] = std::clamp(c, gi.min_cap_w, std::max(gi.min_cap_w, gi.max_cap_w));
    sum += caps[g];
    floor += gi.min_cap_w;
  }
  const double limit = std::max(share_w, floor);
  if (sum <= limit + 1e-6) return false;
  const double f = sum > floor ? std::max(0.0, (limit - floor) / (sum - floor)) : 0.0;
  for (size_t g = 0; g < n; ++g) {
    const double lo = info.gpus[g].min_cap_w;
    command.power_cap_w[g] = lo + f * (caps[g] - lo);
  }
  return true;
}

}  // namespace fw::agent
