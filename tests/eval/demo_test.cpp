#include "eval/demo.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "eval/eval_table.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::eval {
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
  // With the joint knob static and threshold/pid's group_size reference (--reference auto).
  EXPECT_EQ(r->report.controllers.size(), 10u);
  const nlohmann::json& sim = r->json["comparison"]["simulated"];
  // Each PPO row against the joint static over what it claims, recomputed from the rows.
  auto row = [&](const std::string& label) -> const ControllerSummary& {
    for (const auto& c : r->report.controllers) {
      if (c.label == label) return c;
    }
    ADD_FAILURE() << "no row " << label;
    return r->report.controllers.front();
  };
  const ControllerSummary& ppo = row("ppo:" + d.policy_path);
  // The reference: the joint static or a listed fixed setting within the row's claims that made
  // more step tokens at no more violations (evaluation.cpp strongest_listed_references).
  EXPECT_EQ(row("static").notes["searched"], "gen_concurrency+group_size+caps");
  const ControllerSummary& joint = row(sim["reference"].get<std::string>());
  EXPECT_GE(joint.completed_tokens.mean, row("static").completed_tokens.mean);
  EXPECT_LE(joint.offset_violation_rate.mean, row("static").offset_violation_rate.mean);
  EXPECT_NEAR(sim["tokens_vs_static"].get<double>(),
              ppo.completed_tokens.mean / joint.completed_tokens.mean - 1, 1e-12);
  EXPECT_NEAR(sim["tokens_per_mwh_vs_static"].get<double>(),
              ppo.tokens_per_mwh.mean / joint.tokens_per_mwh.mean - 1, 1e-12);
  const ControllerSummary& kppo = row("ppo:" + d.knobs_policy_path);
  const ControllerSummary& kjoint = row(sim["knobs_policy"]["reference"].get<std::string>());
  EXPECT_GE(kjoint.completed_tokens.mean, row(kDemoStaticKnobs).completed_tokens.mean);
  EXPECT_NEAR(sim["knobs_policy"]["tokens_vs_static"].get<double>(),
              kppo.completed_tokens.mean / kjoint.completed_tokens.mean - 1, 1e-12);
  EXPECT_TRUE(sim.contains("tokens_vs_static_cap"));
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
  // Ours as computed beside the published figure, on the same line.
  char ours[64];
  std::snprintf(ours, sizeof ours, "%+.1f %%", 100 * sim["tokens_vs_static"].get<double>());
  const size_t at = text.find("tokens vs the reference");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string line = text.substr(at, text.find('\n', at) - at);
  EXPECT_NE(line.find("+18.1 %"), std::string::npos) << line;
  EXPECT_NE(line.find(ours), std::string::npos) << line << " / " << ours;
  EXPECT_NE(text.find("knob-only PPO"), std::string::npos);
}

// Two specs that resolve to one setting give the same results on every seed: the table shows
// them once ("A = B") and the rows that took the dropped one as reference point at the kept one.
TEST(Demo, IdenticalRowsAreMergedForTheTable) {
  EvalReport rep;
  auto row = [](const std::string& label, double tokens) {
    ControllerSummary c;
    c.label = label;
    c.completed_tokens = {tokens, 10};
    c.tokens = {tokens, 10};
    c.energy_j = {1e6, 1};
    c.episodes.resize(2);
    return c;
  };
  rep.controllers = {row("uncontrolled", 100), row("static:knob=gen_concurrency+group_size", 90),
                     row("pid", 95), row("static:knob=group_size", 90)};
  rep.auto_reference = true;
  rep.row_reference = {1, 1, 3, 3};
  rep.reference = 3;
  const std::vector<std::string> notes = merge_identical_rows(rep);
  ASSERT_EQ(rep.controllers.size(), 3u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(rep.controllers[1].label,
            "static:knob=gen_concurrency+group_size = static:knob=group_size");
  EXPECT_EQ(rep.controllers[2].label, "pid");
  EXPECT_EQ(rep.reference, 1);
  EXPECT_EQ(rep.row_reference, (std::vector<int>{1, 1, 1}));
  EXPECT_NE(notes[0].find("static:knob=group_size: the same results as"), std::string::npos);
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
}  // namespace fw::eval
