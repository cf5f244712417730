#include "eval/simulation_run.hpp"

#include <cmath>

#include "core/version.hpp"
#include "telemetry/trace_writer.hpp"

namespace fw::eval {
namespace {

nlohmann::json trace_meta(const SimulationRequest& req, const sim::Cluster& plant) {
  const sim::Scenario& s = req.scenario;
  nlohmann::json meta;
  meta["producer"] = "flexwatt sim (simulated)";
  meta["simulated"] = true;
  meta["version"] = kVersion;
  meta["scenario"] = s.to_json();
  meta["seed"] = req.seed;
  meta["overrides"] = req.overrides;
  meta["controller"] = "none";
  nlohmann::json models = nlohmann::json::array();
  for (const auto& g : plant.info().gpus) models.push_back(g.model);
  meta["gpu_models"] = models;
  nlohmann::json names = nlohmann::json::array();
  for (const auto& j : plant.info().jobs) names.push_back(j.name);
  meta["job_names"] = names;
  nlohmann::json offsets = nlohmann::json::array();  // resolved phase offsets (fleet.start)
  for (size_t j = 0; j < s.jobs.size(); ++j) offsets.push_back(plant.job_spec(j).start_offset_s);
  meta["job_start_offsets_s"] = offsets;
  return meta;
}

nlohmann::json summary_json(const SimulationRequest& req, const sim::Cluster& plant, int64_t n,
                            const std::vector<double>& sum_w, const Snapshot& last) {
  nlohmann::json summary;
  summary["simulated"] = true;
  summary["scenario"] = req.scenario.name;
  summary["seed"] = req.seed;
  summary["duration_s"] = req.scenario.duration_s;
  summary["samples"] = n;
  summary["out"] = req.out_dir;
  double total_mean_w = 0;
  nlohmann::json gpus = nlohmann::json::array();
  for (size_t i = 0; i < sum_w.size(); ++i) {
    const double mean = n > 0 ? sum_w[i] / static_cast<double>(n) : 0;
    total_mean_w += mean;
    gpus.push_back({{"gpu", i}, {"mean_power_w", mean}});
  }
  summary["gpus"] = gpus;
  summary["mean_total_power_w"] = total_mean_w;
  nlohmann::json jobs = nlohmann::json::array();
  for (size_t j = 0; j < last.jobs.size(); ++j) {
    jobs.push_back({{"job", plant.info().jobs[j].name},
                    {"tokens_total", last.jobs[j].tokens_total},
                    {"steps_total", last.jobs[j].steps_total}});
  }
  summary["jobs"] = jobs;
  return summary;
}

}  // namespace

Result<nlohmann::json> run_simulation(const SimulationRequest& req,
                                      const SimulationProgressFn& progress) {
  const sim::Scenario& s = req.scenario;
  auto plant = sim::make_cluster(s, req.seed);
  FW_ASSIGN_OR_RETURN(auto writer, TraceWriter::create(req.out_dir));
  const int64_t n = static_cast<int64_t>(std::floor(s.duration_s / s.sample_period_s + 1e-9));
  Snapshot snap;
  std::vector<double> sum_w(plant->info().gpus.size(), 0.0);
  for (int64_t k = 1; k <= n; ++k) {
    const double t = static_cast<double>(k) * s.sample_period_s;
    FW_RETURN_IF_ERROR(plant->read(t, snap));
    writer->append(snap);
    for (size_t i = 0; i < snap.gpus.size(); ++i) sum_w[i] += snap.gpus[i].power_w;
    if (progress && k % 2000 == 0) progress(t, s.duration_s);
  }
  FW_RETURN_IF_ERROR(writer->close(trace_meta(req, *plant)));
  return summary_json(req, *plant, n, sum_w, snap);
}

}  // namespace fw::eval
