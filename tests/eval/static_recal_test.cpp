// static on a workload that changes (registry/builtin_controllers.cpp): calib_s
// calibrates on the first calib_s of the episode only (the operator's information, not the
// whole drifting episode); recal_s recalibrates every recal_s on the workload as it is then,
// with the recalibrations' cost stated; recal_s with calib_s 0 is the hindsight per-segment
// reference.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "registry/controller_registry.hpp"
#include "sim/scenario.hpp"

namespace fw::eval {
namespace {

// The 7B job with its completion lengths cut to 0.4x from 600 s on.
const char* kDrop =
    "name: drop\nduration_s: 1200\nsample_period_s: 0.5\nsim: {dt_s: 0.1, noise_w: 1.0}\n"
    "gpus: [{model: a100-sxm4-80gb, count: 1}]\n"
    "budget: {watts: 314.6, scope: gpu, window_s: 30}\n"
    "jobs: [{name: g, kind: grpo, model: qwen2.5-7b, gpus: 1, group_size: 8, "
    "gen_concurrency: 16, completion_median_tokens: 160, "
    "completion_len_curve: [[0, 1], [600, 1], [601, 0.4]]}]\n";

struct Env {
  sim::Scenario scenario;
  registry::ControllerEnv env;
};

// As eval's make_env() (evaluation.cpp), calibration seeds 1000001-1000002.
std::unique_ptr<Env> drop_env() {
  auto s = sim::parse_scenario(kDrop, "drop", {});
  EXPECT_TRUE(s.ok()) << s.status().message();
  auto e = std::make_unique<Env>();
  e->scenario = *s;
  registry::ControllerEnv& env = e->env;
  env.info = sim::make_plant(e->scenario, 1)->info();
  env.budget = e->scenario.budget;
  env.sample_period_s = e->scenario.sample_period_s;
  env.duration_s = e->scenario.duration_s;
  const sim::Scenario* sc = &e->scenario;
  env.make_plant = [sc](uint64_t seed) { return sim::make_plant(*sc, seed); };
  env.make_plant_at = [sc](double t0_s) -> PlantFactory {
    auto shifted = std::make_shared<sim::Scenario>(*sc);
    for (sim::JobSpec& j : shifted->jobs) j.grpo.curve_shift_s = t0_s;
    return [shifted](uint64_t seed) { return sim::make_plant(*shifted, seed); };
  };
  env.calibration_seeds = {1000001, 1000002};
  return e;
}

nlohmann::json notes(const registry::ControllerEnv& env, const std::string& spec) {
  auto p = registry::prepare_controller(*parse_controller_spec(spec), env);
  EXPECT_TRUE(p.ok()) << spec << ": " << p.status().message();
  return p.ok() ? p->notes : nlohmann::json::object();
}

const std::string kCap = "static:knob=group_size,gen_concurrency=16";

TEST(StaticRecal, CalibratesOnTheFirstSecondsAndRecalibratesOnTheWorkloadThen) {
  auto e = drop_env();
  const nlohmann::json once = notes(e->env, kCap + ",calib_s=300");
  ASSERT_TRUE(once.contains("calibration")) << once.dump();
  EXPECT_EQ(once["calibration"]["span_s"], 300.0);
  const nlohmann::json re = notes(e->env, kCap + ",calib_s=300,recal_s=600");
  ASSERT_TRUE(re.contains("schedule")) << re.dump();
  ASSERT_EQ(re["schedule"].size(), 2u) << re.dump();
  EXPECT_EQ(re["schedule"][0]["start_s"], 0.0);
  EXPECT_EQ(re["schedule"][1]["start_s"], 600.0);
  // The first calibration is the calibrated-once static's: the same start of the run.
  EXPECT_EQ(re["schedule"][0]["setting"]["group_size"], once["setting"]["group_size"]) << re.dump();
  // Shorter completions after 600 s: shorter updates, a larger safe group.
  EXPECT_GT(re["schedule"][1]["setting"]["group_size"].get<double>(),
            re["schedule"][0]["setting"]["group_size"].get<double>())
      << re.dump();
  // Cost: the recalibration's episodes, each 300 s of the node's time; the first is free.
  EXPECT_EQ(re["schedule"][0]["cost_s"], 0.0);
  EXPECT_DOUBLE_EQ(re["recalibration_cost_s"].get<double>(),
                   re["schedule"][1]["episodes"].get<double>() * 300.0);
  EXPECT_GT(re["recalibration_cost_s"].get<double>(), 0.0);
  // Hindsight per segment: each segment on its whole span, no cost, labelled.
  const nlohmann::json hs = notes(e->env, kCap + ",recal_s=600");
  ASSERT_EQ(hs["schedule"].size(), 2u) << hs.dump();
  EXPECT_EQ(hs["schedule"][1]["calibration_span_s"], 600.0);
  EXPECT_EQ(hs["recalibration_cost_s"], 0.0);
  EXPECT_NE(hs["kind"].get<std::string>().find("hindsight"), std::string::npos);
}

}  // namespace
}  // namespace fw::eval
