#include "eval/evaluation.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "eval/eval_table.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::eval {
namespace {

EvalRequest small_request(const std::string& controllers, int threads) {
  auto s =
      sim::load_scenario(std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/grpo-7b-a100.yaml", {});
  EXPECT_TRUE(s.ok()) << s.status().message();
  EvalRequest req;
  req.scenario = *s;
  req.scenario.duration_s = 120;
  req.specs = *parse_controller_list(controllers);
  req.seeds = {1, 2};
  req.threads = threads;
  return req;
}

TEST(Evaluation, ResultsDoNotDependOnTheThreadCount) {
  const EvalRequest one = small_request("uncontrolled,threshold,static:value=8", 1);
  const EvalRequest two = small_request("uncontrolled,threshold,static:value=8", 2);
  auto a = run_evaluation(one);
  auto b = run_evaluation(two);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  nlohmann::json ja = a->to_json(one), jb = b->to_json(two);
  EXPECT_EQ(ja, jb);
  ASSERT_EQ(a->controllers.size(), 3u);
  EXPECT_EQ(a->find("threshold"), 1);
  EXPECT_EQ(a->controllers[2].label, "static:value=8");
  EXPECT_EQ(a->controllers[0].episodes.size(), 2u);
  EXPECT_GT(a->controllers[0].tokens.mean, 0);
  // static is in the list, so it is the reference and every row has ratios to it.
  EXPECT_EQ(ja["reference"], "static:value=8");
  EXPECT_DOUBLE_EQ(ja["controllers"][2]["vs_reference"]["tokens"].get<double>(), 1.0);
  EXPECT_TRUE(ja["controllers"][0]["vs_lookahead"].is_null());
}

TEST(Evaluation, RejectsNoSeedsAndBadOptions) {
  EvalRequest req = small_request("uncontrolled", 1);
  req.seeds.clear();
  EXPECT_FALSE(run_evaluation(req).ok());
  auto bad = run_evaluation(small_request("pid:kp=-1", 1));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("kp=-1"), std::string::npos);
}

TEST(Evaluation, CalibrationSeedsAvoidTheEvaluationSeeds) {
  EvalRequest req = small_request("uncontrolled", 1);
  req.seeds = {1000001, 7};
  auto r = run_evaluation(req);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (uint64_t c : r->calibration_seeds) {
    EXPECT_NE(c, 1000001u);
    EXPECT_NE(c, 7u);
  }
}

// energy_vs: every row against the baseline's episode of the same seed; the baseline itself
// scores 0; an unlisted "uncontrolled" is run on the side (no extra row); none asked: no key.
TEST(Evaluation, EnergyVsTheUncappedRunOfTheSameSeed) {
  EvalRequest listed = small_request("uncontrolled,static:knob=caps,value=250", 1);
  listed.energy_vs = "uncontrolled";
  EvalRequest unlisted = small_request("static:knob=caps,value=250", 1);
  unlisted.energy_vs = "uncontrolled";
  auto a = run_evaluation(listed);
  auto b = run_evaluation(unlisted);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_EQ(b->controllers.size(), 1u);
  EXPECT_EQ(a->energy_vs, "uncontrolled");
  EXPECT_EQ(a->controllers[0].energy_saved.mean, 0);
  EXPECT_EQ(a->controllers[0].throughput_lost.mean, 0);
  const ControllerSummary& capped = a->controllers[1];
  EXPECT_DOUBLE_EQ(capped.energy_saved.mean, b->controllers[0].energy_saved.mean);
  EXPECT_GT(capped.throughput_lost.mean, 0.01);  // a 250 W cap on a 400 W A100 slows it
  // By hand, seed 1: energy per completed-step token against the uncontrolled episode.
  const EpisodeResult &e = capped.episodes[0], &u = a->controllers[0].episodes[0];
  const double saved = 1 - (e.energy_j / e.completed_tokens) / (u.energy_j / u.completed_tokens);
  const double lost = 1 - e.completed_tokens / u.completed_tokens;
  const nlohmann::json j = a->to_json(listed);
  EXPECT_EQ(j["energy_vs"]["reference"], "uncontrolled");
  ASSERT_EQ(capped.episodes.size(), 2u);
  EXPECT_NEAR(j["controllers"][1]["energy_vs"]["edp_change"]["mean"].get<double>(),
              capped.edp_change.mean, 1e-12);
  const EpisodeResult &e2 = capped.episodes[1], &u2 = a->controllers[0].episodes[1];
  const double saved2 =
      1 - (e2.energy_j / e2.completed_tokens) / (u2.energy_j / u2.completed_tokens);
  const double lost2 = 1 - e2.completed_tokens / u2.completed_tokens;
  EXPECT_NEAR(capped.energy_saved.mean, (saved + saved2) / 2, 1e-12);
  EXPECT_NEAR(capped.throughput_lost.mean, (lost + lost2) / 2, 1e-12);
  EXPECT_NE(format_eval_table(listed, *a).find("saved %"), std::string::npos);

  EvalRequest none = small_request("uncontrolled", 1);
  auto c = run_evaluation(none);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->to_json(none).contains("energy_vs"));
  EXPECT_EQ(format_eval_table(none, *c).find("saved %"), std::string::npos);
  none.energy_vs = "pid";  // not in the list, and only uncontrolled is run unlisted
  EXPECT_FALSE(run_evaluation(none).ok());
}

TEST(EvalTable, HeadlineColumns) {
  const auto cols = eval_table_columns({0.5, 5, 30, 300});
  std::vector<std::string> keys;
  for (const auto& c : cols) keys.push_back(c.key);
  const std::vector<std::string> want = {"completed_step_tokens",
                                         "steps_per_hour",
                                         "tokens_per_step",
                                         "tokens_per_mwh",
                                         "violation_rate_offsets",
                                         "violation_rate_sliding",
                                         "steps_violating",
                                         "completed_step_tokens_vs_reference",
                                         "tokens_per_mwh_vs_reference",
                                         "completed_step_tokens_vs_lookahead",
                                         "limiter_interventions",
                                         "setup_gpu_h"};
  EXPECT_EQ(keys, want);
}

TEST(Evaluation, ReferenceIsExplicitAndWindowsLongerThanTheRunAreNull) {
  EvalRequest req = small_request("uncontrolled,threshold", 1);
  req.reference = "threshold";
  auto r = run_evaluation(req);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const nlohmann::json j = r->to_json(req);
  EXPECT_EQ(j["reference"], "threshold");
  EXPECT_DOUBLE_EQ(j["controllers"][1]["vs_reference"]["tokens"].get<double>(), 1.0);
  EXPECT_TRUE(j["controllers"][0]["violation_rate"]["300"].is_null());  // 120 s run
  EXPECT_FALSE(j["controllers"][0]["violation_rate"]["30"].is_null());
  EXPECT_NE(format_eval_table(req, *r).find("reference (tok/ref, tpm/ref): threshold"),
            std::string::npos);
  req.reference = "pid";
  auto bad = run_evaluation(req);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--reference pid"), std::string::npos);
}

TEST(EvalTable, CellsAndTableFollowTheColumns) {
  const EvalRequest req = small_request("uncontrolled,threshold", 2);
  auto r = run_evaluation(req);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const nlohmann::json j = r->to_json(req);
  const CellContext ctx{*r, j["controllers"][0]};
  const auto cols = eval_table_columns(r->windows_s);
  EXPECT_EQ(cols[0].cell(r->controllers[0], ctx),
            fmt_stat(r->controllers[0].completed_tokens, 1, 0));
  EXPECT_EQ(cols.back().cell(r->controllers[0], ctx), "-");  // uncontrolled needs no setup
  EXPECT_EQ(cols[cols.size() - 2].cell(r->controllers[0], ctx), "0");  // no limiter interventions
  EXPECT_EQ(cols[cols.size() - 3].cell(r->controllers[0], ctx), "-");  // no look-ahead
  const std::string table = format_eval_table(req, *r);
  for (const auto& c : cols) EXPECT_NE(table.find(c.header), std::string::npos) << c.header;
  EXPECT_NE(table.find("SIMULATED"), std::string::npos);
  EXPECT_NE(table.find("threshold "), std::string::npos);
}

// The shipped policies load with this build (policy format, observation, action layout) and
// drive their scenarios; no figure is asserted beyond "it ran and produced tokens".
TEST(Evaluation, ShippedPoliciesLoadAndRun) {
  const std::string src = FLEXWATT_SOURCE_DIR;
  const std::pair<const char*, const char*> cases[] = {
      {"grpo-7b-a100", "grpo-7b-a100"},
      {"grpo-7b-a100", "grpo-7b-a100-knobs"},
      {"grpo-72b-a100x4-rollout", "grpo-72b-a100x4"}};
  for (const auto& [scenario, policy] : cases) {
    auto s = sim::load_scenario(src + "/scenarios/" + scenario + ".yaml", {});
    ASSERT_TRUE(s.ok()) << s.status().message();
    EvalRequest req;
    req.scenario = *s;
    req.scenario.duration_s = 60;
    req.specs = *parse_controller_list("ppo:" + src + "/policies/" + policy + ".json");
    req.seeds = {1};
    auto r = run_evaluation(req);
    ASSERT_TRUE(r.ok()) << policy << ": " << r.status().message();
    EXPECT_GT(r->controllers[0].tokens.mean, 0) << policy;
  }
}

TEST(EvalTable, SummaryCsvColumns) {
  std::string keys;
  for (const auto& c : summary_csv_columns()) keys += c.key + ",";
  EXPECT_EQ(keys,
            "tokens_mean,tokens_ci95,energy_j_mean,tokens_per_mwh_mean,violation_rate_0.5s,"
            "violation_rate_30s,violation_rate_300s,violation_rate_offsets,violation_rate_sliding,"
            "completed_step_tokens_mean,steps_per_hour_mean,steps_violating_mean,");
  EvalReport r;
  r.windows_s = {30};
  ControllerSummary c;
  c.violation_rate = {{0.125, kUnset}};
  EXPECT_EQ(summary_csv_columns()[5].value(c, r), 0.125);
  EXPECT_TRUE(std::isnan(summary_csv_columns()[4].value(c, r)));  // no 0.5 s window
}

}  // namespace
}  // namespace fw::eval
