// flexwatt fit: a simulated twin of the user's job from measurements (sim/fit.hpp) — a
// power-cap sweep CSV, or an uncapped nvidia-smi log / flexwatt trace. Writes scenario YAML.

#include "sim/fit.hpp"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/flag_checks.hpp"
#include "cli/verb.hpp"
#include "core/csv.hpp"
#include "core/text_file.hpp"

namespace fw::cli {
namespace {

// No --out: nothing to write (the YAML goes to stdout).
Status write_text(const std::string& path, const std::string& text) {
  return path.empty() ? Status::Ok() : write_text_file(path, text);
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
    all.push_back(sim::sweep_fit_json(*f));
    if (!json) std::printf("%s", sim::sweep_fit_table(*f).c_str());
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
  nlohmann::json j = sim::trace_fit_json(*f);
  j["simulated"] = true;
  if (!json) std::printf("%s", yaml.c_str());
  if (check) {
    auto c = sim::check_trace_fit(*log, *f, yaml, level_w, 1);
    if (!c.ok()) return fail("fit", c.status());
    j["check"] = sim::trace_check_json(*c);
    if (!json) std::printf("%s", sim::trace_check_table(*c).c_str());
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
  app.add_option("--out", out, "scenario YAML to write")->check(output_file());
  app.add_flag("--check", check, "trace: re-simulate the fit, print measured vs simulated");
  app.add_option("--level-w", level_w, "trace --check: node level for the 30 s window share");
  app.add_flag("--json", json, "print JSON");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  const sim::GpuPreset* gpu = sim::find_gpu_preset(gpu_name);
  if (!gpu) {
    return fail("fit", Status::InvalidArgument("--gpu: unknown '" + gpu_name +
                                               "' (known: " + sim::gpu_preset_names() + ")"));
  }
  std::error_code ec;
  if (std::filesystem::exists(in, ec) && !std::filesystem::is_regular_file(in, ec) &&
      !std::filesystem::is_directory(in, ec)) {
    return fail("fit", Status::InvalidArgument(in + ": not a regular file: fit reads its input "
                                                    "twice (its kind, then its rows), which a pipe "
                                                    "or stream does not allow; save it to a file"));
  }
  if (is_sweep_csv(in)) return run_sweep(in, *gpu, job, base, out, json);
  return run_trace(in, *gpu, base, out, check, level_w, json);
}

}  // namespace

FW_VERB("fit", "fit a simulated twin of a job to a cap sweep or a power log", run_fit);

}  // namespace fw::cli
