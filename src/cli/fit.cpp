// flexwatt fit: a simulated twin of the user's job from measurements (sim/fit.hpp) — a
// power-cap sweep CSV, or an uncapped nvidia-smi log / flexwatt trace. Writes scenario YAML.

#include "sim/fit.hpp"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/verb.hpp"
#include "core/csv.hpp"
#include "sim/scenario.hpp"

namespace fw::cli {
namespace {

Status write_text(const std::string& path, const std::string& text) {
  if (path.empty()) return Status::Ok();
  std::ofstream f(path);
  f << text;
  return f ? Status::Ok() : Status::Internal("cannot write " + path);
}

bool is_sweep_csv(const std::string& path) {
  auto r = CsvReader::open(path);
  if (!r.ok() || !(*r)->next()) return false;
  for (auto f : (*r)->fields()) {
    if (f == "cap_w" || f == "GPU power cap") return true;
  }
  return false;
}

int run_sweep(const std::string& in, const sim::GpuPreset& gpu, const std::string& job,
              const std::string& base, const std::string& out, bool json) {
  auto sweeps = sim::read_sweep_csv(in);
  if (!sweeps.ok()) return fail("fit", sweeps.status());
  nlohmann::json all = nlohmann::json::array();
  bool found = false;
  for (const auto& m : *sweeps) {
    if (!job.empty() && m.job != job) continue;
    found = true;
    auto f = sim::fit_sweep(m, gpu, base, sim::SimParams{});
    if (!f.ok()) return fail("fit", f.status());
    nlohmann::json rows = nlohmann::json::array();
    if (!json)
      std::printf(
          "job %s (base %s): measured vs simulated\n  cap_W  P/Pmax meas  sim   "
          "T/Tmax meas  sim\n",
          f->job.c_str(), f->base_workload.c_str());
    for (const auto& r : f->rows) {
      rows.push_back({{"cap_w", r.cap_w},
                      {"p_meas", r.p_meas},
                      {"p_sim", r.p_sim},
                      {"t_meas", r.t_meas},
                      {"t_sim", r.t_sim},
                      {"power_w_sim", r.power_w_sim}});
      if (!json)
        std::printf("  %5.0f  %11.3f %6.3f  %11.3f %6.3f\n", r.cap_w, r.p_meas, r.p_sim, r.t_meas,
                    r.t_sim);
    }
    if (!json)
      std::printf(
          "  Pmax %.1f vs %.1f W/GPU; PFI %.2f vs %.2f; worst |dP| %.3f |dT| %.3f; "
          "power <= cap: %s\n",
          f->pmax_meas_w, f->pmax_sim_w, f->pfi_meas, f->pfi_sim, f->max_dp, f->max_dt,
          f->power_at_or_below_cap ? "yes" : "no");
    all.push_back({{"job", f->job},
                   {"base", f->base_workload},
                   {"rows", rows},
                   {"pmax_meas_w", f->pmax_meas_w},
                   {"pmax_sim_w", f->pmax_sim_w},
                   {"pfi_meas", f->pfi_meas},
                   {"pfi_sim", f->pfi_sim},
                   {"max_dp", f->max_dp},
                   {"max_dt", f->max_dt},
                   {"power_at_or_below_cap", f->power_at_or_below_cap},
                   {"mix",
                    {{"sm", f->mix.sm},
                     {"mem", f->mix.mem},
                     {"compute_bound", f->mix.compute_bound},
                     {"comm_share", f->mix.comm_share}}}});
    Status st = write_text(out, sim::sweep_fit_yaml(*f, gpu, 8));
    if (!st.ok()) return fail("fit", st);
    if (!out.empty()) break;  // one scenario per file: the first (or --job) job
  }
  if (!found) return fail("fit", Status::InvalidArgument(in + ": no job '" + job + "'"));
  if (json) std::printf("%s\n", nlohmann::json{{"simulated", true}, {"fits", all}}.dump(2).c_str());
  return 0;
}

int run_trace(const std::string& in, const sim::GpuPreset& gpu, const std::string& base,
              const std::string& out, bool check, double level_w, bool json) {
  auto log = sim::read_power_log(in, 0.5);
  if (!log.ok()) return fail("fit", log.status());
  auto f = sim::fit_trace(*log, gpu, base.empty() ? "dense-pt" : base, sim::SimParams{});
  if (!f.ok()) return fail("fit", f.status());
  const std::string yaml = sim::trace_fit_yaml(*f, gpu, "fit-trace");
  Status st = write_text(out, yaml);
  if (!st.ok()) return fail("fit", st);
  nlohmann::json j = {{"simulated", true},           {"gpus", f->gpus},
                      {"high_w", f->high_w},         {"low_w", f->low_w},
                      {"low_phases", f->low_phases}, {"every_s", f->every_s},
                      {"length_s", f->length_s},     {"offset_sd", f->offset_sd_frac},
                      {"noise_sd", f->noise_sd_frac}};
  if (!json) std::printf("%s", yaml.c_str());
  if (check) {
    const sim::PowerLog meas = sim::slice_log(*log, f->first_sample, f->samples);
    const double level = level_w > 0 ? level_w : sim::median_window30_w(meas);
    auto sc = sim::parse_scenario(yaml, "fit-trace", {});
    if (!sc.ok()) return fail("fit", sc.status());
    sim::PowerLog simlog;
    simlog.dt_s = 0.5;
    simlog.gpu_w.resize(sc->gpus.size());
    auto plant = sim::make_cluster(*sc, 1);
    Snapshot snap;
    for (size_t k = 1; k <= f->samples; ++k) {
      if (!plant->read(static_cast<double>(k) * 0.5, snap).ok()) break;
      for (size_t g = 0; g < snap.gpus.size(); ++g) simlog.gpu_w[g].push_back(snap.gpus[g].power_w);
    }
    const auto a = sim::log_stats(meas, level), b = sim::log_stats(simlog, level);
    j["check"] = {{"level_w", level},
                  {"mean_w", {a.mean_w, b.mean_w}},
                  {"peak30_w", {a.peak30_w, b.peak30_w}},
                  {"share_30s_above", {a.share_above, b.share_above}}};
    if (!json) {
      std::printf(
          "check (node, measured vs simulated):\n  mean power      %8.1f %8.1f W\n"
          "  peak 30 s mean  %8.1f %8.1f W\n  trailing 30 s means > %.0f W: %.3f %.3f\n",
          a.mean_w, b.mean_w, a.peak30_w, b.peak30_w, level, a.share_above, b.share_above);
    }
  }
  if (json) std::printf("%s\n", j.dump(2).c_str());
  return 0;
}

int run_fit(int argc, char** argv) {
  CLI::App app(
      "Fit a simulated twin of your job to measurements and write a scenario YAML.\n"
      "Input: a power-cap sweep CSV (job,cap_w,power_w,throughput, or the public A100\n"
      "sweep's columns), or an uncapped nvidia-smi log / flexwatt trace.\n\n"
      "Examples:\n"
      "  flexwatt fit data/a100_power_cap_sweep.csv --gpu a100-sxm4-80gb --job pt_mpt_13b_lg \\\n"
      "      --out my-job.yaml\n"
      "  flexwatt fit power.csv --gpu h100-sxm5 --out my-job.yaml --check",
      "fit");
  std::string in, gpu_name = "a100-sxm4-80gb", job, base, out;
  bool check = false, json = false;
  double level_w = 0;
  app.add_option("input", in, "sweep CSV, nvidia-smi CSV log or flexwatt trace")->required();
  app.add_option("--gpu", gpu_name, "GPU model the measurements come from");
  app.add_option("--job", job, "sweep: fit only this job (default: every job)");
  app.add_option("--base", base, "workload preset the fit starts from (default: by job name)");
  app.add_option("--out", out, "scenario YAML to write");
  app.add_flag("--check", check, "trace: re-simulate the fit, print measured vs simulated");
  app.add_option("--level-w", level_w, "trace --check: node level for the 30 s window share");
  app.add_flag("--json", json, "print JSON");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  const sim::GpuPreset* gpu = sim::find_gpu_preset(gpu_name);
  if (!gpu) {
    return fail("fit", Status::InvalidArgument("--gpu: unknown '" + gpu_name +
                                               "' (known: " + sim::gpu_preset_names() + ")"));
  }
  if (is_sweep_csv(in)) return run_sweep(in, *gpu, job, base, out, json);
  return run_trace(in, *gpu, base, out, check, level_w, json);
}

}  // namespace

FW_VERB("fit", "fit a simulated twin of a job to a cap sweep or a power log", run_fit);

}  // namespace fw::cli
