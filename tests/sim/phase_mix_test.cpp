// GRPO stragglers and phase-mix pauses: the `stragglers` and `pauses` keys of a GRPO job
// (workload.hpp GrpoParams), their parsing and their effect on progress and load.

#include <gtest/gtest.h>

#include "sim/scenario.hpp"
#include "sim/workload.hpp"

namespace fw::sim {
namespace {

std::string grpo_yaml(const std::string& extra) {
  return "name: t\ngpus: [{model: a100-sxm4-80gb, count: 1}]\nbudget: {watts: 400}\n"
         "sim: {noise_w: 0}\njobs: [{kind: grpo, model: qwen2.5-7b" +
         extra + "}]\n";
}

// Decode tokens and mean SM activity over [t0, t1) of job time, the job run alone at full
// clock in 0.1 s steps.
struct Span {
  double tokens = 0, mean_u = 0, mean_m = 0;
};
std::vector<Span> per_span(const JobSpec& spec, const std::vector<double>& edges_s) {
  WorkloadState st;
  st.rng = Rng(7);
  start_job(spec, st, 0.1);
  std::vector<Span> out;
  double t = 0;
  for (size_t k = 0; k + 1 < edges_s.size(); ++k) {
    while (t < edges_s[k] - 1e-9) {
      advance_job(spec, st, 0.1, 1.0);
      t += 0.1;
    }
    Span s;
    const double tok0 = st.tokens_total;
    int n = 0;
    while (t < edges_s[k + 1] - 1e-9) {
      const Load l = advance_job(spec, st, 0.1, 1.0);
      s.mean_u += l.u;
      s.mean_m += l.m;
      ++n;
      t += 0.1;
    }
    s.tokens = st.tokens_total - tok0;
    s.mean_u /= std::max(1, n);
    s.mean_m /= std::max(1, n);
    out.push_back(s);
  }
  return out;
}

TEST(PhaseMix, ParsesAndRejectsBadBlocks) {
  auto s = parse_scenario(
      grpo_yaml(", stragglers: [{factor: 1.5, start_s: 100, end_s: 200}], pauses: [{start_s: "
                "300, end_s: 900, every_s: 120, length_s: 30, sm: 0.1, mem: 0.05}]"),
      "t", {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  const GrpoParams& g = s->jobs[0].grpo;
  ASSERT_EQ(g.stragglers.size(), 1u);
  EXPECT_DOUBLE_EQ(g.stragglers[0].factor, 1.5);
  ASSERT_EQ(g.pauses.size(), 1u);
  EXPECT_DOUBLE_EQ(g.pauses[0].every_s, 120);
  EXPECT_DOUBLE_EQ(g.pauses[0].load.u, 0.1);
  EXPECT_EQ(s->to_json()["jobs"][0]["stragglers"].size(), 1u);
  EXPECT_EQ(s->to_json()["jobs"][0]["pauses"].size(), 1u);
  for (const char* bad : {", stragglers: [{factor: 0.5, start_s: 0, end_s: 10}]",
                          ", stragglers: [{factor: 2, start_s: 10, end_s: 5}]",
                          ", stragglers: [{factor: 2, start_s: 0, end_s: 5, node: 1}]",
                          ", stragglers: 3", ", pauses: [{start_s: 0, end_s: 10, every_s: 0}]",
                          ", pauses: [{start_s: 0, end_s: 100, every_s: 10, length_s: -1}]"}) {
    auto b = parse_scenario(grpo_yaml(bad), "t", {});
    ASSERT_FALSE(b.ok()) << bad;
    const std::string msg = b.status().message();
    EXPECT_TRUE(
        msg.find("stragglers") != std::string::npos || msg.find("pauses") != std::string::npos ||
        msg.find("factor") != std::string::npos || msg.find("every_s") != std::string::npos ||
        msg.find("length_s") != std::string::npos || msg.find("end_s") != std::string::npos ||
        msg.find("node") != std::string::npos)
        << bad << ": " << msg;
  }
}

// A straggler of factor 2 between 600 and 1200 s halves the decode tokens there and the SM
// activity with them (the job's GPUs wait half the time); before and after, the job is the
// job without one.
TEST(PhaseMix, StragglerSlowsTheJobBetweenItsTimes) {
  auto plain = parse_scenario(grpo_yaml(""), "t", {});
  auto slow =
      parse_scenario(grpo_yaml(", stragglers: [{factor: 2, start_s: 600, end_s: 1200}]"), "t", {});
  ASSERT_TRUE(plain.ok() && slow.ok()) << slow.status().message();
  const std::vector<double> edges = {0, 600, 1200, 1800};
  const auto p = per_span(plain->jobs[0], edges);
  const auto s = per_span(slow->jobs[0], edges);
  EXPECT_DOUBLE_EQ(p[0].tokens, s[0].tokens);  // the same job before, random stream included
  EXPECT_NEAR(s[1].tokens / p[1].tokens, 0.5, 0.1);
  EXPECT_NEAR(s[1].mean_u / p[1].mean_u, 0.5, 0.1);
  EXPECT_GT(s[2].tokens, 0.8 * p[2].tokens);  // back to full pace after end_s
}

// Pauses of 60 s every 240 s within [600, 1800): no progress in a pause, the pause's load; the
// share of time paused is 60 / 300 (the pattern restarts at the segment's start).
TEST(PhaseMix, PausesStopProgressAtTheirLoad) {
  auto plain = parse_scenario(grpo_yaml(""), "t", {});
  auto paused = parse_scenario(grpo_yaml(", pauses: [{start_s: 600, end_s: 1800, every_s: 240, "
                                         "length_s: 60, sm: 0.0, mem: 0.02}]"),
                               "t", {});
  ASSERT_TRUE(plain.ok() && paused.ok()) << paused.status().message();
  const GrpoParams& g = paused->jobs[0].grpo;
  EXPECT_FALSE(grpo_pause_at(g, 500) != nullptr);
  EXPECT_FALSE(grpo_pause_at(g, 600 + 239) != nullptr);
  EXPECT_TRUE(grpo_pause_at(g, 600 + 241) != nullptr);
  EXPECT_FALSE(grpo_pause_at(g, 600 + 301) != nullptr);
  EXPECT_FALSE(grpo_pause_at(g, 1900) != nullptr);
  // In a pause (840-900 s): no tokens, the pause's load.
  const auto q = per_span(paused->jobs[0], {0, 600, 840.5, 899.5, 1800});
  const auto p = per_span(plain->jobs[0], {0, 600, 840.5, 899.5, 1800});
  EXPECT_DOUBLE_EQ(q[0].tokens, p[0].tokens);
  EXPECT_EQ(q[2].tokens, 0.0);
  EXPECT_NEAR(q[2].mean_u, 0.0, 1e-12);
  EXPECT_NEAR(q[2].mean_m, 0.02, 1e-12);
  EXPECT_GT(q[1].tokens, 0.0);
  // The segment's progress: 4 pauses of 60 s in 1200 s (20 % of the time).
  const double q_seg = q[1].tokens + q[2].tokens + q[3].tokens;
  const double p_seg = p[1].tokens + p[2].tokens + p[3].tokens;
  EXPECT_NEAR(q_seg / p_seg, 0.8, 0.08);
  // Shifted as a plant built at 600 s (recalibration): the pattern moves with curve_shift_s.
  GrpoParams shifted = g;
  shifted.curve_shift_s = 600;
  EXPECT_TRUE(grpo_pause_at(shifted, 241) != nullptr);
  EXPECT_DOUBLE_EQ(grpo_straggler_factor(shifted, 241), 1.0);
}

}  // namespace
}  // namespace fw::sim
