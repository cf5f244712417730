#include "experiment/demo.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fw::experiment {
namespace {

DemoRequest small_demo(const std::string& out) {
  const std::string src = FLEXWATT_SOURCE_DIR;
  DemoRequest d;
  d.scenario_path = src + "/scenarios/grpo-7b-a100.yaml";
  d.policy_path = src + "/policies/grpo-7b-a100.json";
  d.knobs_policy_path = src + "/policies/grpo-7b-a100-knobs.json";
  d.out_dir = std::string(FLEXWATT_BINARY_DIR) + "/test-tmp/" + out;
  d.seeds = 1;
  d.duration_s = 60;
  std::filesystem::remove_all(d.out_dir);
  return d;
}

TEST(Demo, WritesTheReportDirectoryAndTheComparison) {
  const DemoRequest d = small_demo("demo");
  auto r = run_demo(d);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->report.controllers.size(), 9u);  // with the knob-only static
  const nlohmann::json& sim = r->json["comparison"]["simulated"];
  EXPECT_TRUE(sim.contains("tokens_vs_static"));
  EXPECT_TRUE(sim.contains("tokens_vs_static_cap"));
  EXPECT_TRUE(sim["knobs_policy"].contains("tokens_vs_static"));
  EXPECT_EQ(r->json["comparison"]["published"]["tokens_vs_static"], kPubTokens);
  for (const char* f : {"report.json", "summary.csv", "power.svg"}) {
    EXPECT_TRUE(std::filesystem::exists(d.out_dir + "/" + f)) << f;
  }
  std::ifstream csv(d.out_dir + "/summary.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header,
            "controller,tokens_mean,tokens_ci95,energy_j_mean,tokens_per_mwh_mean,"
            "violation_rate_0.5s,violation_rate_30s,violation_rate_300s,violation_rate_offsets,"
            "violation_rate_sliding,completed_step_tokens_mean,steps_per_hour_mean,"
            "steps_violating_mean,simulated");
  const std::string text = format_demo_comparison(d, *r);
  EXPECT_NE(text.find("+18.1 %"), std::string::npos) << text;
  EXPECT_NE(text.find("knob-only PPO"), std::string::npos);
}

TEST(Demo, RejectsMissingFilesAndShortRuns) {
  DemoRequest d = small_demo("demo-bad");
  d.policy_path += ".nope";
  auto r = run_demo(d);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(".nope"), std::string::npos);
  d = small_demo("demo-bad");
  d.duration_s = 30;
  EXPECT_EQ(run_demo(d).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fw::experiment
