// flexwatt pipeline plan: per-stage power caps that remove energy bloat from a 1F1B pipeline,
// planned from a stage profile (pipeline/planner.hpp).

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/flag_checks.hpp"
#include "cli/verb.hpp"
#include "hw/gpu_catalog.hpp"
#include "pipeline/one_f_one_b.hpp"
#include "pipeline/planner.hpp"
#include "pipeline/stage_profile.hpp"
#include "sim/gpu_model.hpp"
#include "sim/pipeline_fit.hpp"

namespace fw::cli {
namespace {

// The GPU's settable maximum: a planned cap above it cannot be written to the device (the
// profile's GPUs drew more than the catalogue's maximum, e.g. an A100-SXM at a 500 W limit).
double g_max_cap_w = 0;

nlohmann::json setting_json(const pipeline::CapSetting& c) {
  nlohmann::json j{{"forward_mhz", c.forward_mhz}, {"backward_mhz", c.backward_mhz}};
  if (c.uncapped) {
    j["cap_w"] = nullptr;
  } else {
    j["cap_w"] = c.cap_w;
    if (c.cap_w > g_max_cap_w) j["above_max_cap"] = true;
  }
  return j;
}

// The schedule's shape (which segments of a stage have ops), for the output.
const pipeline::OneFOneB* g_dag = nullptr;
bool has_ops(size_t s, int p) {
  const auto ph = static_cast<pipeline::Phase>(p);
  const int st = static_cast<int>(s);
  return g_dag->count(st, pipeline::Instr::kForward, ph) +
             g_dag->count(st, pipeline::Instr::kBackward, ph) >
         0;
}

nlohmann::json stages_json(
    const std::vector<std::array<pipeline::CapSetting, pipeline::kPhases>>& st, bool per_phase) {
  nlohmann::json a = nlohmann::json::array();
  for (size_t s = 0; s < st.size(); ++s) {
    nlohmann::json j{{"stage", s}};
    if (per_phase) {  // a segment without ops on this stage: null
      for (int p = 0; p < pipeline::kPhases; ++p) {
        j[pipeline::phase_name(static_cast<pipeline::Phase>(p))] =
            has_ops(s, p) ? setting_json(st[s][p]) : nlohmann::json();
      }
    } else {
      j.update(setting_json(st[s][0]));
    }
    a.push_back(j);
  }
  return a;
}

nlohmann::json mode_json(const pipeline::ModePlan& m, bool straggler) {
  const bool per_phase = m.mode == "schedule";
  nlohmann::json j{{"energy_saved", m.energy_saved},
                   {"time_increase", m.time_increase},
                   {"time_s", m.time_s},
                   {"energy_j", m.energy_j},
                   {"pipeline_time_s", m.pipeline_time_s},
                   {"pipeline_energy_j", m.pipeline_energy_j},
                   {"stages", stages_json(m.stages, per_phase)}};
  if (straggler) {
    j["others"] = stages_json(m.others, per_phase);
    j["others_time_s"] = m.others_time_s;
  }
  nlohmann::json fr = nlohmann::json::array();
  for (const auto& p : m.frontier) fr.push_back({{"time_s", p.time_s}, {"energy_j", p.energy_j}});
  j["frontier"] = fr;
  return j;
}

std::string cap_text(const pipeline::CapSetting& c) {
  char b[64];
  if (c.uncapped) {
    std::snprintf(b, sizeof b, "uncapped (%.0f/%.0f MHz)", c.forward_mhz, c.backward_mhz);
  } else {
    std::snprintf(b, sizeof b, "%.0f W%s (%.0f/%.0f MHz)", c.cap_w,
                  c.cap_w > g_max_cap_w ? "*" : "", c.forward_mhz, c.backward_mhz);
  }
  return b;
}

void print_table(const pipeline::Plan& p, const std::string& path) {
  std::printf("pipeline plan: %s\n", path.c_str());
  std::printf("  %d stages x tp %d, %d micro-batches, %d pipelines, blocking %.2f W/GPU", p.stages,
              p.tp, p.microbatches, p.pipelines, p.blocking_w);
  if (p.straggler_factor > 1) std::printf(", one pipeline %.3gx slower", p.straggler_factor);
  std::printf("\n  baseline (every GPU at its highest clock): %.4f s, %.1f J per pipeline\n",
              p.baseline_pipeline_time_s, p.baseline_pipeline_energy_j);
  for (const auto* m : {&p.constant, &p.schedule}) {
    std::printf("  %-8s energy %+.2f %%  time %+.2f %%\n", m->mode.c_str(), -100 * m->energy_saved,
                100 * m->time_increase);
  }
  const auto& b = p.best();
  std::printf("  settings (%s; forward/backward clock the cap allows):\n", b.mode.c_str());
  for (size_t s = 0; s < b.stages.size(); ++s) {
    if (b.mode == "schedule") {
      std::printf("    stage %zu:", s);
      const char* sep = "";
      for (int ph = 0; ph < pipeline::kPhases; ++ph) {
        if (!has_ops(s, ph)) continue;
        std::printf("%s %s %s", sep, pipeline::phase_name(static_cast<pipeline::Phase>(ph)),
                    cap_text(b.stages[s][ph]).c_str());
        sep = ",";
      }
      std::printf("\n");
    } else {
      std::printf("    stage %zu: %s\n", s, cap_text(b.stages[s][0]).c_str());
    }
  }
  bool above = false;
  for (const auto& st : b.stages) {
    for (const auto& c : st) above = above || (!c.uncapped && c.cap_w > g_max_cap_w);
  }
  if (above) {
    std::printf("  (* above the GPU's %.0f W maximum cap: the profile's GPUs drew more)\n",
                g_max_cap_w);
  }
  std::printf("  planned in %.3f s (%.3f s CPU)\n", p.planning_s, p.planning_cpu_s);
}

// `pipeline validate`: fit each model's uniform-limit Zeus runs, predict its per-stage-limit
// runs (sim/pipeline_fit.hpp), every row. Simulated against measured.
struct ValidateSet {
  const char* file;  // <file>_zeus_{global,local}.csv
  const char* gpu;   // its blocking power: the catalogue's (hw/gpu_catalog.hpp)
};
constexpr ValidateSet kValidateSets[] = {{"A100", "a100-pcie-80gb"}, {"A40", "a40"}};

int run_validate(const std::string& dir, bool gpu_model, bool json) {
  const auto model = gpu_model ? sim::PipelineModel::kGpuModel : sim::PipelineModel::kCapResponse;
  nlohmann::json out{{"model", gpu_model ? "gpu-model" : "cap-response"},
                     {"data", dir},
                     {"simulated_vs_measured", true},
                     {"tolerance", 0.05},
                     {"sets", nlohmann::json::array()}};
  for (const auto& set : kValidateSets) {
    const std::string base = dir + "/" + set.file;
    auto global = sim::read_zeus_csv(base + "_zeus_global.csv");
    if (!global.ok()) return fail("pipeline", global.status());
    auto local = sim::read_zeus_csv(base + "_zeus_local.csv");
    if (!local.ok()) return fail("pipeline", local.status());
    const sim::GpuPreset& preset = *sim::find_gpu_preset(set.gpu);
    auto v =
        sim::validate_pipeline_runs(*global, *local, preset, preset.blocking_w, model, !gpu_model);
    if (!v.ok()) return fail("pipeline", v.status());
    nlohmann::json js{{"file", set.file},
                      {"gpu", set.gpu},
                      {"blocking_w", preset.blocking_w},
                      {"fits", nlohmann::json::array()},
                      {"rows", nlohmann::json::array()}};
    if (!json) std::printf("%s (%s, blocking %.2f W)\n", set.file, set.gpu, preset.blocking_w);
    for (const auto& f : v->fits) {
      js["fits"].push_back({{"model", f.model},
                            {"partition", f.partition},
                            {"t_unit_s", f.t_unit_s},
                            {"imbalance", f.imbalance},
                            {"head", f.head},
                            {"uncapped_w", f.response.uncapped_w},
                            {"uniform_max_err", f.max_err}});
      if (!json) {
        std::printf(
            "  fit %-17s imbalance %.2f head %.2f%s: uniform runs max |err| %.1f %%\n",
            f.model.c_str(), f.imbalance, f.head,
            gpu_model
                ? ""
                : (" uncapped " + std::to_string(int(f.response.uncapped_w + 0.5)) + " W").c_str(),
            100 * f.max_err);
      }
    }
    int within = 0, split_within = 0, split_rows = 0;
    if (!json) {
      std::printf("  %-17s %-11s %-32s %9s %9s %7s %7s | %7s %7s\n", "model", "partition", "caps W",
                  "time s", "measured", "d time", "d energy", "split t", "split e");
    }
    for (const auto& r : v->rows) {
      const bool ok = std::abs(r.time_err()) <= 0.05 && std::abs(r.energy_err()) <= 0.05;
      within += ok;
      const bool has_split = std::isfinite(r.split_time_s);
      const double st = has_split ? r.split_time_s / r.run.time_s - 1 : NAN;
      const double se = has_split ? r.split_energy_j / r.run.energy_j - 1 : NAN;
      if (has_split) {
        ++split_rows;
        split_within += std::abs(st) <= 0.05 && std::abs(se) <= 0.05;
      }
      std::string caps;
      for (double c : r.run.caps_w) caps += std::to_string(static_cast<int>(c)) + " ";
      nlohmann::json row{{"model", r.run.model},
                         {"partition", r.run.partition},
                         {"line", r.run.line},
                         {"caps_w", r.run.caps_w},
                         {"time_s", r.time_s},
                         {"measured_time_s", r.run.time_s},
                         {"energy_j", r.energy_j},
                         {"measured_energy_j", r.run.energy_j},
                         {"time_err", r.time_err()},
                         {"energy_err", r.energy_err()},
                         {"within", ok}};
      if (has_split) {
        row["split_time_err"] = st;
        row["split_energy_err"] = se;
        row["split_work"] = r.split_work;
      }
      js["rows"].push_back(row);
      if (!json) {
        const std::string part =
            r.run.partition == "uniform_transformer" ? "uniform" : r.run.partition.substr(7);
        char split[40] = "      -       -";
        if (has_split) std::snprintf(split, sizeof split, "%+6.1f%% %+6.1f%%", 100 * st, 100 * se);
        std::printf("  %-17s %-11.11s %-32s %9.2f %9.2f %+6.1f%% %+6.1f%% | %s%s\n",
                    r.run.model.c_str(), part.c_str(), caps.c_str(), r.time_s, r.run.time_s,
                    100 * r.time_err(), 100 * r.energy_err(), split, ok ? "" : "  MISS");
      }
    }
    js["within"] = within;
    js["split_within"] = split_within;
    js["split_rows"] = split_rows;
    if (!json) {
      std::printf("  %d of %zu rows within +-5 %% in time and energy", within, v->rows.size());
      if (!gpu_model) {
        std::printf("; with the work split fitted to the rows themselves (diagnostic): %d of %d",
                    split_within, split_rows);
      }
      std::printf("\n");
    }
    out["sets"].push_back(js);
  }
  if (json) std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

int run_pipeline(int argc, char** argv) {
  CLI::App app(
      "Plan per-stage power caps for a pipeline-parallel (1F1B) job from a stage profile\n"
      "(CSV: stage,instruction,frequency,time,energy; one GPU, one micro-batch pass per row,\n"
      "the Perseus artifact's format). Prints the least-energy setting within --slowdown-max\n"
      "of the iteration time with every GPU at its highest clock, for one cap per stage\n"
      "(constant) and one cap per stage and phase (schedule: warm-up, steady, cool-down).\n\n"
      "Examples:\n"
      "  flexwatt pipeline plan stage_profile_gpt3-175b+a100_sxm_bf16.csv --microbatches 12\n"
      "  flexwatt pipeline plan prof.csv --gpu a40 --microbatches 96 --straggler-factor 1.2 "
      "--json",
      "pipeline");
  app.require_subcommand(1);
  auto* plan_cmd = app.add_subcommand("plan", "plan per-stage caps from a stage profile");
  std::string path, gpu_name = "a100-sxm4-80gb";
  pipeline::PlanOptions opt;
  double blocking_w = 0;
  bool json = false;
  plan_cmd->add_option("profile", path, "stage profile CSV")->required();
  plan_cmd->add_option("--gpu", gpu_name,
                       "GPU model: cap range and blocking power (default a100-sxm4-80gb)");
  plan_cmd->add_option("--microbatches", opt.microbatches, "micro-batches per pipeline (12)")
      ->check(CLI::Range(1, 100000));
  plan_cmd->add_option("--tp", opt.tp, "GPUs per stage, tensor parallel (8)")
      ->check(CLI::Range(1, 1024));
  plan_cmd
      ->add_option("--global-batch", opt.global_batch,
                   "micro-batches per iteration over all pipelines (1536)")
      ->check(CLI::Range(1, 100000000));
  plan_cmd->add_option("--slowdown-max", opt.slowdown_max, "time increase allowed (0.012)")
      ->check(finite_in(0, 1));
  plan_cmd
      ->add_option("--straggler-factor", opt.straggler_factor,
                   "one pipeline this many times slower (1: none)")
      ->check(finite_in(1, 10));
  plan_cmd
      ->add_option("--blocking-w", blocking_w,
                   "power of a waiting GPU (default: the catalogue's for --gpu: A100 83.64, "
                   "A40 70.38 W; none for H100/H200)")
      ->check(finite_in(0, 2000, true));
  plan_cmd
      ->add_option("--segments", opt.segments,
                   "schedule segments per stage: 5 (fill, warm-up, steady, cool-down, "
                   "drain) or 3 (warm-up, steady, cool-down); default 5")
      ->check(CLI::IsMember({3, 5}));
  double max_cap_w = 0;
  plan_cmd
      ->add_option("--max-cap-w", max_cap_w,
                   "highest cap the plan may use (default: none; uncapped is always "
                   "allowed and runs the profile's highest clock)")
      ->check(finite_in(0, 5000, true));
  plan_cmd->add_flag("--json", json, "print JSON");
  auto* val_cmd = app.add_subcommand(
      "validate",
      "simulator vs the measured Zeus runs: fit each model's uniform-limit runs "
      "(*_zeus_global.csv), predict its per-stage-limit runs (*_zeus_local.csv), every row");
  std::string data_dir = "data/perseus";
  bool gpu_model = false;
  val_cmd->add_option("--data", data_dir, "folder with the artifact's CSVs (data/perseus)");
  val_cmd->add_flag("--gpu-model", gpu_model,
                    "use the GPU power model's clock for a cap (the earlier model) in place of "
                    "the cap response measured on the uniform runs");
  val_cmd->add_flag("--json", json, "print JSON");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (*val_cmd) return run_validate(data_dir, gpu_model, json);

  const hw::GpuCatalogEntry* gpu = hw::find_gpu(gpu_name);
  if (!gpu) {
    return fail("pipeline", Status::InvalidArgument("--gpu: unknown '" + gpu_name +
                                                    "' (known: " + hw::gpu_names() + ")"));
  }
  opt.blocking_w = blocking_w > 0 ? blocking_w : gpu->blocking_w;  // the catalogue's (0: unknown)
  if (!(opt.blocking_w > 0)) {
    return fail("pipeline", Status::InvalidArgument("--blocking-w: no default for '" + gpu_name +
                                                    "'; give the power of a waiting GPU"));
  }
  opt.min_cap_w = gpu->min_cap_w;
  if (max_cap_w > 0) opt.max_cap_w = max_cap_w;
  g_max_cap_w = gpu->max_cap_w;
  auto prof = pipeline::read_stage_profile(path);
  if (!prof.ok()) return fail("pipeline", prof.status());
  auto plan = pipeline::plan_pipeline(*prof, opt);
  if (!plan.ok()) return fail("pipeline", plan.status());
  const pipeline::OneFOneB dag(prof->num_stages(), opt.microbatches);
  g_dag = &dag;
  const auto& p = *plan;
  if (!json) {
    print_table(p, path);
    return 0;
  }
  const auto& b = p.best();
  const bool straggler = p.straggler_factor > 1;
  nlohmann::json j{{"profile", path},
                   {"gpu", gpu_name},
                   {"computed_from_profile", true},
                   {"stages", p.stages},
                   {"microbatches", p.microbatches},
                   {"tp", p.tp},
                   {"pipelines", p.pipelines},
                   {"blocking_w", p.blocking_w},
                   {"slowdown_max", p.slowdown_max},
                   {"straggler_factor", p.straggler_factor},
                   {"energy_saved", b.energy_saved},
                   {"time_increase", b.time_increase},
                   {"mode", b.mode},
                   {"baseline",
                    {{"time_s", p.baseline_time_s},
                     {"energy_j", p.baseline_energy_j},
                     {"pipeline_time_s", p.baseline_pipeline_time_s},
                     {"pipeline_energy_j", p.baseline_pipeline_energy_j}}},
                   {"constant", mode_json(p.constant, straggler)},
                   {"schedule", mode_json(p.schedule, straggler)},
                   {"planning_s", p.planning_s},
                   {"planning_cpu_s", p.planning_cpu_s}};
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}

}  // namespace

FW_VERB("pipeline", "plan per-stage power caps for a pipeline-parallel job (stage profile)",
        run_pipeline);

}  // namespace fw::cli
