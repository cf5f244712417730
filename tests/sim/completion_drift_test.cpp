// Non-stationary GRPO completion lengths: the `completion_len_curve` key (a piecewise-linear
// factor of trace time on the job's median completion length), its parsing and its effect.

#include <gtest/gtest.h>

#include "sim/scenario.hpp"
#include "sim/workload.hpp"

namespace fw::sim {
namespace {

std::string grpo_yaml(const std::string& extra) {
  return "name: t\ngpus: [{model: a100-sxm4-80gb, count: 1}]\nbudget: {watts: 400}\n"
         "sim: {noise_w: 0}\njobs: [{kind: grpo, model: qwen2.5-7b, completion_median_tokens: "
         "160" +
         extra + "}]\n";
}

// Completion tokens per completed step (decode tokens over steps) in [t0, t1) of trace time,
// the job run alone at full clock.
struct Segment {
  double tokens_per_step, seconds_per_step;
};
std::vector<Segment> per_segment(const JobSpec& spec, const std::vector<double>& edges_s) {
  WorkloadState st;
  st.rng = Rng(7);
  start_job(spec, st, 0.1);
  std::vector<Segment> out;
  double t = 0;
  for (size_t k = 0; k + 1 < edges_s.size(); ++k) {
    while (t < edges_s[k]) {
      advance_job(spec, st, 0.1, 1.0);
      t += 0.1;
    }
    const double tok0 = st.tokens_total, steps0 = st.steps_total;
    while (t < edges_s[k + 1]) {
      advance_job(spec, st, 0.1, 1.0);
      t += 0.1;
    }
    const double steps = st.steps_total - steps0;
    out.push_back({(st.tokens_total - tok0) / std::max(1.0, steps),
                   (edges_s[k + 1] - edges_s[k]) / std::max(1.0, steps)});
  }
  return out;
}

TEST(CompletionDrift, FactorIsPiecewiseLinearAndHeldAtTheEnds) {
  GrpoParams p;
  EXPECT_DOUBLE_EQ(completion_len_factor(p, 123), 1.0);  // no curve: no drift
  p.completion_len_curve = {{100, 1.0}, {300, 2.0}, {500, 0.5}};
  EXPECT_DOUBLE_EQ(completion_len_factor(p, 0), 1.0);
  EXPECT_DOUBLE_EQ(completion_len_factor(p, 200), 1.5);
  EXPECT_DOUBLE_EQ(completion_len_factor(p, 300), 2.0);
  EXPECT_DOUBLE_EQ(completion_len_factor(p, 400), 1.25);
  EXPECT_DOUBLE_EQ(completion_len_factor(p, 9000), 0.5);
  p.curve_shift_s = 200;  // a plant built as at trace time 200 s (recalibration)
  EXPECT_DOUBLE_EQ(completion_len_factor(p, 100), 2.0);
}

TEST(CompletionDrift, ParsesAndRejectsBadCurves) {
  auto s = parse_scenario(grpo_yaml(", completion_len_curve: [[0, 1], [600, 2.5]]"), "t", {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->jobs[0].grpo.completion_len_curve.size(), 2u);
  EXPECT_DOUBLE_EQ(s->jobs[0].grpo.completion_len_curve[1][0], 600);
  EXPECT_DOUBLE_EQ(s->jobs[0].grpo.completion_len_curve[1][1], 2.5);
  EXPECT_EQ(s->to_json()["jobs"][0]["completion_len_curve"].size(), 2u);
  for (const char* bad :
       {", completion_len_curve: [[0, 1], [0, 2]]", ", completion_len_curve: [[0, 1], [10, 0]]",
        ", completion_len_curve: [[0, 1, 3]]", ", completion_len_curve: 3"}) {
    auto b = parse_scenario(grpo_yaml(bad), "t", {});
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find("completion_len_curve"), std::string::npos)
        << b.status().message();
  }
}

// A job whose lengths double after 1500 s: tokens per step and seconds per step grow with
// the curve; the same job without a curve stays level.
TEST(CompletionDrift, TokensAndStepTimeFollowTheCurve) {
  auto flat = parse_scenario(grpo_yaml(""), "t", {});
  auto grow = parse_scenario(
      grpo_yaml(", completion_len_curve: [[0, 1], [1500, 1], [1600, 2], [4000, 2]]"), "t", {});
  ASSERT_TRUE(flat.ok() && grow.ok());
  const std::vector<double> edges = {0, 1500, 1600, 3100};
  const auto f = per_segment(flat->jobs[0], edges);
  const auto g = per_segment(grow->jobs[0], edges);
  const double flat_ratio = f[2].tokens_per_step / f[0].tokens_per_step;
  const double grow_ratio = g[2].tokens_per_step / g[0].tokens_per_step;
  EXPECT_NEAR(flat_ratio, 1.0, 0.15);
  // Lognormal lengths clipped at completion_max_tokens (1024): the mean grows a little
  // less than the median's factor 2.
  EXPECT_GT(grow_ratio, 1.6);
  EXPECT_LT(grow_ratio, 2.1);
  EXPECT_GT(g[2].seconds_per_step, 1.2 * g[0].seconds_per_step);
  // Before the drift the two jobs are the same job, random stream included.
  EXPECT_DOUBLE_EQ(f[0].tokens_per_step, g[0].tokens_per_step);
}

}  // namespace
}  // namespace fw::sim
