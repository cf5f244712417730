// flexwatt pipeline plan: per-stage power caps that remove energy bloat from a 1F1B pipeline,
// planned from a stage profile (pipeline/planner.hpp).

#include <cstdio>
#include <string>

#include "cli/flag_checks.hpp"
#include "cli/pipeline_profile.hpp"
#include "cli/verb.hpp"
#include "core/format.hpp"
#include "hw/gpu_catalog.hpp"
#include "pipeline/one_f_one_b.hpp"
#include "pipeline/plan_report.hpp"
#include "pipeline/planner.hpp"
#include "pipeline/stage_profile.hpp"
#include "sim/pipeline_validation_report.hpp"

namespace fw::cli {
namespace {

int run_validate(const std::string& dir, bool gpu_model, const std::string& stage_work, bool json) {
  auto r = sim::pipeline_validation_report(dir, gpu_model, stage_work);
  if (!r.ok()) return fail("pipeline", r.status());
  std::fputs(json ? (r->json.dump(2) + "\n").c_str() : r->text.c_str(), stdout);
  return 0;
}

int run_pipeline(int argc, char** argv) {
  CLI::App app(
      "Plan per-stage power caps for a pipeline-parallel (1F1B) job from a stage profile\n"
      "(CSV: stage,instruction,frequency,time,energy; one GPU, one micro-batch pass per row,\n"
      "the Perseus artifact's format). Prints the least-energy setting within --slowdown-max\n"
      "of the baseline's iteration time (no cap written: each GPU at its maximum cap), for one\n"
      "cap per stage (constant) and per stage one cap per segment of its 1F1B phases\n"
      "(schedule; each segment at least --min-segment-s, the cap settling time), caps within\n"
      "the GPU's range, with a proven bound on what any such plan can save.\n\n"
      "Examples:\n"
      "  flexwatt pipeline plan stage_profile_gpt3-175b+a100_sxm_bf16.csv --microbatches 12\n"
      "  flexwatt pipeline plan prof.csv --gpu a40 --microbatches 96 --straggler-factor 1.2 "
      "--json\n"
      "  flexwatt pipeline plan prof.csv --allow-above-max --min-segment-s 0  (Perseus's set-up)\n"
      "A running job's profile: flexwatt pipeline profile --help.",

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
                   "5: fill, warm-up, steady, cool-down and drain may each be a segment; 3: fill "
                   "stays with warm-up, drain with cool-down (default 5)")
      ->check(CLI::IsMember({3, 5}));
  double max_cap_w = 0;
  plan_cmd
      ->add_option("--max-cap-w", max_cap_w,
                   "highest cap the plan may write (default: the GPU's maximum); a constraint "
                   "only: the baseline stays the GPU uncapped")
      ->check(finite_in(0, 5000, true));
  plan_cmd->add_flag("--allow-above-max", opt.allow_above_max,
                     "plan caps above the GPU's maximum, from the profile's highest clock (the "
                     "profiled GPUs' limit was higher; Perseus's baseline)");
  opt.min_segment_s = pipeline::kCapSettlingS;
  plan_cmd
      ->add_option("--min-segment-s", opt.min_segment_s,
                   strprintf("shortest schedule segment, its ops at the fastest clocks (default "
                             "%.3g: the cap settling time measured in the simulator, an "
                             "assumption)",
                             pipeline::kCapSettlingS))
      ->check(finite_in(0, 1e6));
  plan_cmd->add_flag("--json", json, "print JSON");
  auto* val_cmd = app.add_subcommand(
      "validate",
      "simulator vs the measured Zeus runs: fit each model's uniform-limit runs "
      "(*_zeus_global.csv), predict its per-stage-limit runs (*_zeus_local.csv), every row.\n"
      "Example: flexwatt pipeline validate --data ../shared/data/perseus --stage-work "
      "data/perseus/stage_work.csv --json");
  std::string data_dir = "data/perseus";
  bool gpu_model = false;
  val_cmd->add_option("--data", data_dir, "folder with the artifact's CSVs (data/perseus)");
  val_cmd->add_flag("--gpu-model", gpu_model,
                    "use the GPU power model's clock for a cap (the earlier model) in place of "
                    "the cap response measured on the uniform runs");
  std::string stage_work = "data/perseus/stage_work.csv";
  val_cmd->add_option(
      "--stage-work", stage_work,
      "per-stage forward/backward seconds measured on the jobs (CSV: gpu,model,partition,stage,"
      "forward_s,backward_s; default data/perseus/stage_work.csv, from the Perseus artifact's "
      "op timings): its work split predicts every row again (columns prof; only the split is "
      "taken from it, the rest is fitted on the uniform runs), rows with a cap outside the "
      "uniform runs' caps flagged, not predicted; not read with --gpu-model; '' to skip");
  val_cmd->add_flag("--json", json, "print JSON");
  ProfileCommand profile;
  profile.add(app);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (*val_cmd) return run_validate(data_dir, gpu_model, stage_work, json);
  if (*profile.cmd) return profile.run();

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
  opt.max_cap_w = gpu->max_cap_w;
  if (max_cap_w > 0) opt.cap_limit_w = max_cap_w;
  auto prof = pipeline::read_stage_profile(path);
  if (!prof.ok()) return fail("pipeline", prof.status());
  auto plan = pipeline::plan_pipeline(*prof, opt);
  if (!plan.ok()) return fail("pipeline", plan.status());
  const pipeline::OneFOneB dag(prof->num_stages(), opt.microbatches);
  const pipeline::PlanReportContext ctx{path, gpu_name, gpu->max_cap_w, &dag};
  std::fputs(json ? (pipeline::plan_json(*plan, ctx).dump(2) + "\n").c_str()
                  : pipeline::format_plan(*plan, ctx).c_str(),
             stdout);
  return 0;
}

}  // namespace

FW_VERB("pipeline",
        "plan per-stage power caps for a pipeline-parallel job (stage profile); profile a "
        "running one",
        run_pipeline);

}  // namespace fw::cli
