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
#include "sim/fit_gpu.hpp"

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

// Warnings and notes of a fit on stderr (the JSON carries them too).
void print_messages(const std::vector<std::string>& warnings, const std::vector<std::string>& notes,
                    bool json) {
  for (const auto& w : warnings) std::fprintf(stderr, "fit: warning: %s\n", w.c_str());
  if (json) return;
  for (const auto& n : notes) std::fprintf(stderr, "fit: note: %s\n", n.c_str());
}

int run_sweep(const std::string& in, const std::string& gpu_name, const std::string& job,
              const std::string& base, const std::string& out, bool check, bool json) {
  auto sweeps = sim::read_sweep_csv(in, job);
  if (!sweeps.ok()) return fail("fit", sweeps.status());
  nlohmann::json all = nlohmann::json::array();
  bool found = false;
  for (const auto& m : *sweeps) {
    if (!job.empty() && m.job != job) continue;
    found = true;
    auto cls = sim::gpu_for_sweep(m, gpu_name);
    if (!cls.ok()) return fail("fit", cls.status());
    const sim::GpuPreset& gpu = *cls->gpu;
    auto f = sim::fit_sweep(m, gpu, base, sim::SimParams{});
    if (!f.ok()) return fail("fit", f.status());
    nlohmann::json j = sim::sweep_fit_json(*f);
    j["gpu"] = {{"model", std::string(gpu.name)}, {"source", cls->source}};
    const std::string yaml = sim::sweep_fit_yaml(*f, gpu, f->gpus);
    if (!json) std::printf("%s", sim::sweep_fit_table(*f).c_str());
    print_messages(f->warnings, f->notes, json);
    if (check) {
      auto c = sim::check_sweep_fit(*f, yaml, 1);
      if (!c.ok()) return fail("fit", c.status());
      j["check"] = sim::sweep_check_json(*c);
      if (!json) std::printf("%s", sim::sweep_check_table(*c).c_str());
    }
    all.push_back(j);
    Status st = write_text(out, yaml);
    if (!st.ok()) return fail("fit", st);
    if (!out.empty()) break;  // one scenario per file: the first (or --job) job
  }
  if (!found) return fail("fit", Status::InvalidArgument(in + ": no job '" + job + "'"));
  if (json) std::printf("%s\n", nlohmann::json{{"simulated", true}, {"fits", all}}.dump(2).c_str());
  return 0;
}

int run_trace(const std::string& in, const std::string& gpu_name, const std::string& base,
              const std::string& out, bool check, double level_w, bool json) {
  auto log = sim::read_power_log(in, 0.5);
  if (!log.ok()) return fail("fit", log.status());
  auto cls = sim::gpu_for_log(in, *log, gpu_name);
  if (!cls.ok()) return fail("fit", cls.status());
  const sim::GpuPreset& gpu = *cls->gpu;
  auto f = sim::fit_trace(*log, gpu, base.empty() ? "dense-pt" : base, sim::SimParams{});
  if (!f.ok()) return fail("fit", Status::InvalidArgument(in + ": " + f.status().message()));
  const std::string yaml = sim::trace_fit_yaml(*f, gpu, "fit-trace");
  Status st = write_text(out, yaml);
  if (!st.ok()) return fail("fit", st);
  nlohmann::json j = sim::trace_fit_json(*f);
  j["simulated"] = true;
  j["gpu"] = {{"model", std::string(gpu.name)}, {"source", cls->source}};
  if (!json) std::printf("%s", yaml.c_str());
  print_messages(f->warnings, f->notes, json);
  if (check) {
    auto c = sim::check_trace_fit(*log, *f, yaml, level_w, 1);
    if (!c.ok()) return fail("fit", c.status());
    j["check"] = sim::trace_check_json(*c);
    auto r = sim::report_trace_fit(*log, *f, yaml, level_w, 1);
    if (!r.ok()) return fail("fit", r.status());
    j["report"] = sim::fit_report_json(*r);
    if (!json) std::printf("%s", sim::fit_report_table(*r).c_str());
    // Said on stderr too (with --json as well): stdout may go to a file no one reads. The exit
    // code stays 0: the twin was written, and the report says how far to trust it.
    if (r->verdict == "not reliable") {
      std::fprintf(stderr,
                   "fit: warning: the twin is not reliable (%s): do not draw conclusions from "
                   "simulations of it\n",
                   r->reason.c_str());
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
  std::string in, gpu_name, job, base, out;
  bool check = false, json = false;
  double level_w = 0;
  app.add_option("input", in, "sweep CSV, nvidia-smi CSV log or flexwatt trace")->required();
  app.add_option("--gpu", gpu_name,
                 "GPU model the measurements come from (default: from the log's name column, "
                 "its power levels or the sweep's caps; asked for when they do not decide)");
  app.add_option("--job", job, "sweep: fit only this job (default: every job)");
  app.add_option("--base", base, "workload preset the fit starts from (default: by job name)");
  app.add_option("--out", out, "scenario YAML to write")->check(output_file());
  app.add_flag("--check", check,
               "re-simulate the fit and print measured vs simulated (a trace: the fit report, "
               "each figure with its error and a verdict)");
  app.add_option("--level-w", level_w,
                 "trace --check: node budget of the report's first violation rows (default the "
                 "log's p90 of 1 s means)");
  app.add_flag("--json", json, "print JSON");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (!gpu_name.empty() && !sim::find_gpu_preset(gpu_name)) {
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
  if (is_sweep_csv(in)) return run_sweep(in, gpu_name, job, base, out, check, json);
  return run_trace(in, gpu_name, base, out, check, level_w, json);
}

}  // namespace

FW_VERB("fit", "fit a simulated twin of a job to a cap sweep or a power log", run_fit);

}  // namespace fw::cli
