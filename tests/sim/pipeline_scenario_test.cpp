// Pipeline jobs in scenario files and in sim::Cluster (sim/pipeline_scenario.hpp,
// sim/cluster_pipeline.cpp, sim/pipeline_profile.hpp). Simulated.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "pipeline/stage_profile.hpp"
#include "sim/pipeline_fit.hpp"
#include "sim/pipeline_profile.hpp"
#include "sim/scenario.hpp"
#include "sim_test_util.hpp"

namespace fw::sim {
namespace {

const char* kBase = R"(name: pp
duration_s: 120
gpus:
  - {model: a100-sxm4-80gb, count: 4}
budget: {watts: 1600, scope: job}
jobs:
  - kind: pipeline
    gpus: 4
    stages: 2
    stage_work: [[0.05, 0.10], [0.03, 0.06]]
    load: {sm: 1.0, mem: 0.3, compute_bound: 0.8}
    microbatches: 8
    dp: 2
    tokens_per_iter: 1000
)";

Scenario parse_or_die(const std::string& text, const std::vector<std::string>& sets = {}) {
  auto s = parse_scenario(text, "pp.yaml", sets);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : Scenario{};
}

std::string error_of(const std::string& text) {
  auto s = parse_scenario(text, "pp.yaml", {});
  return s.ok() ? "" : s.status().message();
}

TEST(PipelineScenario, ParsesKeysAndWritesThemToJson) {
  const Scenario s = parse_or_die(std::string(kBase) +
                                  "    stragglers: [{pipeline: 1, factor: 1.5, start_s: 10, "
                                  "end_s: 20}, {pipeline: 0, stage: 1, factor: 2}]\n");
  ASSERT_EQ(s.jobs.size(), 1u);
  const JobSpec& j = s.jobs[0];
  EXPECT_EQ(j.kind, JobKind::kPipeline);
  ASSERT_EQ(j.pipeline.stages.size(), 2u);
  EXPECT_DOUBLE_EQ(j.pipeline.stages[1].backward_s, 0.06);
  EXPECT_EQ(j.pipeline.dp, 2);
  EXPECT_EQ(j.pipeline.microbatches, 8);
  EXPECT_DOUBLE_EQ(j.pipeline.blocking_w, 83.64);  // the Perseus notebook's A100 figure
  EXPECT_DOUBLE_EQ(j.pipeline.load.c, 0.8);
  ASSERT_EQ(j.pipeline.stragglers.size(), 2u);
  EXPECT_EQ(j.pipeline.stragglers[0].pipeline, 1);
  EXPECT_EQ(j.pipeline.stragglers[0].stage, -1);
  EXPECT_EQ(j.pipeline.stragglers[1].stage, 1);
  EXPECT_DOUBLE_EQ(j.pipeline.stragglers[0].end_s, 20);
  const nlohmann::json js = s.to_json();
  EXPECT_EQ(js["jobs"][0]["kind"], "pipeline");
  EXPECT_EQ(js["jobs"][0]["dp"], 2);
  EXPECT_EQ(js["jobs"][0]["stragglers"].size(), 2u);
}

TEST(PipelineScenario, BadInputNamesFileLineAndField) {
  const std::string base = kBase;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = base;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  std::string e = error_of(with("gpus: 4\n    stages", "gpus: 3\n    stages"));
  EXPECT_NE(e.find("pp.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("stages × dp = 4"), std::string::npos) << e;
  e = error_of(with("stage_work: [[0.05, 0.10], [0.03, 0.06]]", "stage_work: [[0.05, 0.10]]"));
  EXPECT_NE(e.find("stage_work"), std::string::npos) << e;
  EXPECT_NE(e.find("expected 2"), std::string::npos) << e;
  e = error_of(with("stage_work: [[0.05, 0.10], [0.03, 0.06]]", "stage_work: [[0.05], [1, 2]]"));
  EXPECT_NE(e.find("[forward_s, backward_s]"), std::string::npos) << e;
  e = error_of(base + "    cap_averaging: window\n");
  EXPECT_NE(e.find("pp.yaml:15"), std::string::npos) << e;
  EXPECT_NE(e.find("cap_averaging"), std::string::npos) << e;
  e = error_of(base + "    stragglers: [{pipeline: 2, factor: 1.2}]\n");
  EXPECT_NE(e.find("pipeline"), std::string::npos) << e;
  e = error_of(base + "    stragglers: [{pipeline: 0}]\n");
  EXPECT_NE(e.find("factor"), std::string::npos) << e;
  e = error_of(base + "    stragglers: [{pipeline: 0, factor: 1.2, start_s: 5, end_s: 5}]\n");
  EXPECT_NE(e.find("end_s"), std::string::npos) << e;
  e = error_of(base + "    profile: x.csv\n");
  EXPECT_NE(e.find("one of stage_work, profile"), std::string::npos) << e;
  e = error_of(base + "    group_size: 4\n");
  EXPECT_NE(e.find("group_size"), std::string::npos) << e;
  e = error_of(with("kind: pipeline", "kind: pipe"));
  EXPECT_NE(e.find("grpo, pretrain, pipeline"), std::string::npos) << e;
  e = error_of(with("    stage_work: [[0.05, 0.10], [0.03, 0.06]]\n", "    profile: nope.csv\n"));
  EXPECT_NE(e.find("profile"), std::string::npos) << e;
}

// A pipeline job in the cluster: steps at 1 / iteration time of pipeline_iteration with the
// settled caps (its ops run phase-resolved: sim::PipelineRun), each GPU at its stage's
// iteration-average power over whole iterations; the job's step hook gives the step start.
TEST(PipelineScenario, ClusterStepsAtTheIterationTime) {
  const Scenario s = parse_or_die(kBase);
  auto plant = make_cluster(s, 1);
  const PipelineJobSpec& spec = s.jobs[0].pipeline;
  const std::vector<double> caps(4, 400.0);
  auto it = pipeline_iteration(spec, caps, 0);
  ASSERT_TRUE(it.ok());
  Snapshot snap;
  ASSERT_TRUE(plant->read(100, snap).ok());
  EXPECT_NEAR(snap.jobs[0].steps_total, std::floor(100 / it->time_s), 1.0);
  EXPECT_DOUBLE_EQ(snap.jobs[0].tokens_total, 1000 * snap.jobs[0].steps_total);
  for (int g = 0; g < 4; ++g) {
    // Whole iterations (the last one's partial energy within 1.5 %).
    EXPECT_NEAR(snap.gpus[g].energy_j / 100, it->gpu_power_w[g], 0.015 * it->gpu_power_w[g]) << g;
    EXPECT_NEAR(snap.gpus[g].sm_util, it->busy_share[g], 1e-9) << g;
  }
  // The job's step hook: the current step started after the last whole iteration.
  const PipelineRun* run = plant->pipeline_run(0);
  ASSERT_NE(run, nullptr);
  EXPECT_NEAR(run->iteration_start_s(), snap.jobs[0].steps_total * it->time_s,
              1e-6 * run->iteration_start_s());
  // Stage 1 has less work: it waits (blocking) and draws less.
  EXPECT_LT(it->gpu_power_w[1], it->gpu_power_w[0]);
  EXPECT_LT(it->busy_share[1], it->busy_share[0]);
  // Energy: every GPU at its iteration-average power for the whole run.
  double e = 0;
  for (int g = 0; g < 4; ++g) e += snap.gpus[g].energy_j;
  EXPECT_NEAR(e, 100 * (it->energy_j / it->time_s), 0.005 * e);
}

TEST(PipelineScenario, StragglerSlowsItsWindowOnlyAndTheOthersBlock) {
  const Scenario s = parse_or_die(std::string(kBase) +
                                  "    stragglers: [{pipeline: 1, factor: 1.5, start_s: 50, "
                                  "end_s: 100}]\n");
  auto plant = make_cluster(s, 1);
  Snapshot a, b, c;
  ASSERT_TRUE(plant->read(49.9, a).ok());
  // Iteration-average powers at the caps in force (per step the power follows the ops).
  auto avg_w = [&](int g) { return plant->pipeline_state(0)->gpu_power_w[g]; };
  const double p0_before = avg_w(0), p2_before = avg_w(2);
  ASSERT_TRUE(plant->read(99.9, b).ok());
  const double p0_during = avg_w(0), p2_during = avg_w(2);
  ASSERT_TRUE(plant->read(149.9, c).ok());
  const double rate_before = a.jobs[0].steps_total / 49.9;
  const double rate_during = (b.jobs[0].steps_total - a.jobs[0].steps_total) / 50;
  const double rate_after = (c.jobs[0].steps_total - b.jobs[0].steps_total) / 50;
  EXPECT_NEAR(rate_during / rate_before, 1 / 1.5, 0.05);
  EXPECT_NEAR(rate_after / rate_before, 1.0, 0.05);
  EXPECT_LT(p0_during, p0_before - 20);     // pipeline 0 waits for the straggler
  EXPECT_NEAR(p2_during, p2_before, 1e-6);  // the straggler's GPU: same power, longer
  EXPECT_GT(b.gpus[2].sm_util, b.gpus[0].sm_util + 0.2);
}

// The stated assumption the frontier controller relies on (frontier_controller.hpp): a cap
// written to a pipeline GPU is in force within 8 s (settling with the clock lags).
TEST(PipelineScenario, CapSettlesWithinEightSeconds) {
  const Scenario s = parse_or_die(kBase);
  auto plant = make_cluster(s, 1);
  Snapshot snap;
  ASSERT_TRUE(plant->read(20, snap).ok());
  const std::vector<double> low = {250, 400, 400, 400};
  auto it_low = pipeline_iteration(s.jobs[0].pipeline, low, 0);
  ASSERT_TRUE(it_low.ok());
  // The power the caps in force give over an iteration (per step it follows the ops).
  auto avg_w = [&] { return plant->pipeline_state(0)->gpu_power_w[0]; };
  const double before = avg_w();
  Command cmd;
  cmd.power_cap_w = low;
  ASSERT_TRUE(plant->write(cmd).ok());
  ASSERT_TRUE(plant->read(20.1, snap).ok());
  EXPECT_GT(avg_w(), it_low->gpu_power_w[0] + 5);  // not yet (lag)
  ASSERT_TRUE(plant->read(28, snap).ok());
  EXPECT_NEAR(avg_w(), it_low->gpu_power_w[0], 0.01 * (before - it_low->gpu_power_w[0]));
  // Raising it back settles slower (clock_up_tau_s 1.5 s) but also within 8 s.
  cmd.power_cap_w = {400, 400, 400, 400};
  ASSERT_TRUE(plant->write(cmd).ok());
  ASSERT_TRUE(plant->read(29, snap).ok());
  EXPECT_LT(avg_w(), before - 5);
  ASSERT_TRUE(plant->read(36, snap).ok());
  EXPECT_NEAR(avg_w(), before, 0.01 * (before - it_low->gpu_power_w[0]));
}

// The settling `frontier`'s schedule mode leads its switches by (frontier_controller.hpp): one
// time constant after a write the cap the physics sees has moved 1 − 1/e of the way, 0.2 s when
// lowering and 1.5 s when raising (sim.clock_tau_s, sim.clock_up_tau_s).
TEST(PipelineScenario, CapSettlesWithTheClockLags) {
  const Scenario s = parse_or_die(kBase);
  auto plant = make_cluster(s, 1);
  Snapshot snap;
  ASSERT_TRUE(plant->read(20, snap).ok());
  const PipelineJobSpec& spec = s.jobs[0].pipeline;
  const double k = 1 - std::exp(-1.0);
  auto clock_at = [&](double cap0) {
    auto it = pipeline_iteration(spec, std::vector<double>{cap0, 400, 400, 400}, 0);
    EXPECT_TRUE(it.ok());
    return it.ok() ? it->clock_x[0] : 0.0;
  };
  Command cmd;
  cmd.power_cap_w = {200, 400, 400, 400};
  ASSERT_TRUE(plant->write(cmd).ok());
  ASSERT_TRUE(plant->read(20.2, snap).ok());  // τ down = 0.2 s
  EXPECT_NEAR(plant->pipeline_state(0)->clock_x[0], clock_at(400 - k * 200), 1e-3);
  ASSERT_TRUE(plant->read(30, snap).ok());
  cmd.power_cap_w = {400, 400, 400, 400};
  ASSERT_TRUE(plant->write(cmd).ok());
  ASSERT_TRUE(plant->read(31.5, snap).ok());  // τ up = 1.5 s
  EXPECT_NEAR(plant->pipeline_state(0)->clock_x[0], clock_at(200 + k * 200), 1e-3);
}

TEST(PipelineScenario, ProfileFitAndOfflineProfileRoundTrip) {
  auto prof = pipeline::read_stage_profile(
      testing::source_path("data/perseus/stage_profile_gpt3-175b+a40_bf16.csv"));
  ASSERT_TRUE(prof.ok()) << prof.status().message();
  const GpuPreset* a40 = find_gpu_preset("a40");
  auto fit = stage_work_from_profile(*prof, *a40);
  ASSERT_TRUE(fit.ok());
  ASSERT_EQ(fit->stages.size(), 8u);
  std::printf("GPT-3 175B A40 profile -> GPU model: max error time %.2f %%, power %.2f %%\n",
              100 * fit->max_time_err, 100 * fit->max_power_err);
  // Measured when written: time 12.0 %, power 11.1 % (the low clocks; docs/simulator.md). A
  // regression guard at those figures, not a target.
  EXPECT_LE(fit->max_time_err, 0.121);
  EXPECT_LE(fit->max_power_err, 0.112);
  PipelineJobSpec spec;
  spec.gpu = a40;
  spec.stages = fit->stages;
  spec.stage_loads = fit->loads;
  auto back = profile_from_spec(spec);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->num_stages(), 8);
  const auto& top = back->at(3, pipeline::Instr::kBackward).points.front();
  EXPECT_DOUBLE_EQ(top.freq_mhz, a40->sm_clock_max_mhz);
  EXPECT_NEAR(top.time_s, fit->stages[3].backward_s, 1e-12);
  EXPECT_NEAR(top.power_w(), gpu_power_w(*a40, fit->loads[3], 1.0), 1e-9);
}

// The 4-stage A100 scenarios' stage work is the gpt3-xl fit to the measured uniform runs.
TEST(PipelineScenario, ShippedA100ScenarioIsTheGpt3XlFit) {
  auto runs = read_zeus_csv(testing::source_path("data/perseus/A100_zeus_global.csv"));
  ASSERT_TRUE(runs.ok());
  std::vector<ZeusRun> xl;
  for (const auto& r : *runs)
    if (r.model == "gpt3-xl") xl.push_back(r);
  const GpuPreset* gpu = find_gpu_preset("a100-pcie-80gb");
  auto fit = fit_pipeline_runs(xl, *gpu, 83.64);
  ASSERT_TRUE(fit.ok());
  auto spec = pipeline_spec_for(xl.front(), *fit, *gpu, 83.64);
  ASSERT_TRUE(spec.ok());
  for (const char* f :
       {"scenarios/caps-pp4-a100pcie-x8.yaml", "scenarios/caps-pp4-a100pcie-x8-straggler.yaml"}) {
    const Scenario s = testing::load_or_die(f);
    ASSERT_EQ(s.jobs.size(), 1u);
    const PipelineJobSpec& p = s.jobs[0].pipeline;
    ASSERT_EQ(p.stages.size(), spec->stages.size());
    for (size_t k = 0; k < p.stages.size(); ++k) {
      EXPECT_NEAR(p.stages[k].forward_s, spec->stages[k].forward_s, 1e-5) << f << " " << k;
      EXPECT_NEAR(p.stages[k].backward_s, spec->stages[k].backward_s, 1e-5) << f << " " << k;
    }
    EXPECT_NEAR(p.load.u, fit->load.u, 1e-3);
    EXPECT_NEAR(p.load.m, fit->load.m, 1e-3);
    EXPECT_NEAR(p.load.c, fit->load.c, 1e-3);
  }
}

}  // namespace
}  // namespace fw::sim
