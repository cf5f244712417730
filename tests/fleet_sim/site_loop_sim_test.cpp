// The coordinator's site loop (fleet/site_loop.hpp) on simulated nodes (fleet_sim/sim_node.hpp),
// without etcd: the fleet-sim "dr" timeline (fleet_sim.hpp) in virtual time, the loop updated
// every second on the site's summed draw, its split given to the nodes through the equal
// allocator one tick later. Simulated figures: the tracking the loop allows on these jobs, the
// coordinator's own (its rounds and etcd on the way) measured by fleet-sim --scenario dr.
// FW_SITE_LOOP_NODES / _SEED / _TRACE: another node count (default 64), seed (1), a printed trace.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/rng.hpp"
#include "fleet/allocator.hpp"
#include "fleet/grid.hpp"
#include "fleet/site_loop.hpp"
#include "fleet_sim/fleet_sim.hpp"
#include "fleet_sim/sim_node.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::fleet {
namespace {

struct SiteRun {
  nlohmann::json scores;
  double performance = 0, hold_performance = 0;
  std::vector<DrawCurvePoint> curve;
};

// nodes × 8 A100 pretraining (scenarios/caps-pretrain-a100x8.yaml, phases drawn in [0, 60 s)),
// duration D: baseline over 0.10-0.25 D, a -25 % target held 0.35-0.85 D (ramps of 0.05 D).
SiteRun run_site(int n_nodes, bool loop_on, bool curves, uint64_t seed, double D = 480) {
  SiteRun out;
  auto sc = sim::load_scenario(
      std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/caps-pretrain-a100x8.yaml", {});
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  if (!sc.ok()) return out;
  Rng rng(seed);
  std::vector<std::unique_ptr<SimNode>> nodes;
  std::vector<NodeRecord> recs;
  double nameplate = 0;
  for (int i = 0; i < n_nodes; ++i) {
    sim::Scenario s = *sc;
    const double offset_s = 60 * rng.uniform();
    for (auto& j : s.jobs) {
      j.start_s = 0;
      j.start_offset_s = offset_s;
    }
    if (i == 0 && curves) {
      auto c = probe_draw_curve(s, seed * 1000);
      EXPECT_TRUE(c.ok()) << c.status().message();
      if (c.ok()) out.curve = *c;
    }
    nodes.push_back(std::make_unique<SimNode>("n" + std::to_string(i), s, seed * 1000 + i));
    nameplate += nodes.back()->nameplate_w();
  }
  std::vector<std::pair<double, double>> curve;
  for (const auto& p : out.curve) {
    curve.emplace_back(p.budget_w, p.draw_w);
    if (std::getenv("FW_SITE_LOOP_TRACE")) {
      std::printf("curve %.0f W: draw %.0f W, throughput %.3f\n", p.budget_w, p.draw_w,
                  p.throughput_rel);
    }
  }
  for (auto& n : nodes) {
    n->set_draw_curve(curve);
    recs.push_back(n->record(0));
  }
  const EqualAllocator alloc;
  SiteDrawModel model;
  if (curves) {
    model = [&](double split_w) {
      const std::vector<double> w = alloc.split(split_w, recs);
      double p = 0;
      for (size_t i = 0; i < recs.size(); ++i) p += curve_draw_w(recs[i].draw_curve, w[i]);
      return p;
    };
  }
  SiteLoopOptions lo;
  lo.enabled = loop_on;
  SiteLoop loop(lo);
  std::vector<double> budget(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) budget[i] = nodes[i]->nameplate_w();
  std::optional<GridTarget> grid;
  double base_sum = 0, baseline = 0, site = 0, free = 0;
  int base_n = 0;
  std::vector<DrTraceRow> rows;
  std::vector<double> hold_tok[2], hold_free[2];
  const bool trace = std::getenv("FW_SITE_LOOP_TRACE") != nullptr;
  for (int64_t k = 1;; ++k) {
    const double t = 0.25 * double(k);
    if (t > D) break;
    if (!grid && t >= 0.25 * D) {
      baseline = base_sum / base_n;
      GridTarget g;
      g.value_w = 0.75 * baseline;
      g.start_unix_s = 0.35 * D;
      g.end_unix_s = 0.85 * D;
      g.ramp_w_per_s = 0.25 * baseline / (0.05 * D);
      grid = g;
    }
    for (int h = 0; h < 2; ++h) {
      if (hold_tok[h].empty() && t >= (h ? 0.85 : 0.35) * D) {
        for (auto& n : nodes) {
          hold_tok[h].push_back(n->tokens());
          hold_free[h].push_back(n->tokens_uncontrolled());
        }
      }
    }
    const double line = effective_budget_w(nameplate, grid, t);
    if (k % 4 == 0) {  // a round every second on what the nodes last reported
      const double split = loop.update(t, site, line, line < nameplate, model);
      const std::vector<double> w = alloc.split(split, recs);
      for (size_t i = 0; i < nodes.size(); ++i) budget[i] = w[i];
      if (trace && k % 40 == 0) {
        std::printf("t %.0f site %.0f line %.0f split %.0f base %.0f margin %.0f int %.0f%s\n", t,
                    site, line, split, loop.base_w(), loop.margin_w(), loop.integral_w(),
                    loop.dip() ? " dip" : "");
      }
    }
    site = free = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      EXPECT_TRUE(nodes[i]->step(t, budget[i]).ok());
      site += nodes[i]->power_w();
      free += nodes[i]->uncontrolled_w();
    }
    if (t >= 0.10 * D && t < 0.25 * D) base_sum += site, ++base_n;
    rows.push_back({t, site, free, grid && grid->value_w ? *grid->value_w : 0});
  }
  out.scores = dr_scores(rows, baseline, 0.35 * D, 0.85 * D, 0.30 * D, D);
  for (size_t i = 0; i < nodes.size(); ++i) {
    out.performance += nodes[i]->tokens() / nodes[i]->tokens_uncontrolled() / double(nodes.size());
    out.hold_performance += (hold_tok[1][i] - hold_tok[0][i]) /
                            (hold_free[1][i] - hold_free[0][i]) / double(nodes.size());
  }
  std::printf(
      "[site-loop-sim] simulated, %d nodes, loop %d, curves %d: %s performance %.4f "
      "hold %.4f\n",
      n_nodes, int(loop_on), int(curves), out.scores.dump().c_str(), out.performance,
      out.hold_performance);
  return out;
}

int nodes_from_env() {
  const char* v = std::getenv("FW_SITE_LOOP_NODES");
  return v ? std::max(2, std::atoi(v)) : 64;
}

uint64_t seed_from_env() {
  const char* v = std::getenv("FW_SITE_LOOP_SEED");
  return v ? std::max(1, std::atoi(v)) : 1;
}

double get(const SiteRun& r, const char* k) { return r.scores[k].get<double>(); }

// The site, 64 nodes x 8 A100, the -25 % event: open loop (split = target), the loop
// on its integral alone, and the loop with the jobs' curves as feed-forward. Either loop holds
// the target on 1-minute means: no minute above it, none above by 1 % of the baseline, the
// 1-minute means at most 2 % of the baseline under it, less than half the open loop's
// over-cut, more throughput. (The over-cut per tick, the rule, also counts the site's
// swing between ticks under the target: printed, judged in docs/fleet.md.)
TEST(SiteLoopSim, TracksTheTargetWithTheJobsCurvesAsFeedForward) {
  const int n = nodes_from_env();
  const SiteRun open = run_site(n, false, false, seed_from_env());
  const SiteRun integral = run_site(n, true, false, seed_from_env());
  const SiteRun r = run_site(n, true, true, seed_from_env());
  ASSERT_FALSE(r.scores.is_null());
  ASSERT_GE(r.curve.size(), 2u);
  for (const SiteRun* x : {&integral, &r}) {
    EXPECT_EQ(get(*x, "minutes_above_target"), 0.0);
    EXPECT_LE(get(*x, "worst_1min_excess_frac"), 0.01);
    EXPECT_LE(get(*x, "mean_overcut_1min_frac"), 0.02);
    EXPECT_LT(get(*x, "mean_overcut_frac"), 0.5 * get(open, "mean_overcut_frac"));
    EXPECT_GT(x->performance, open.performance);
  }
  ASSERT_FALSE(r.scores["ramp_down_s"].is_null());
  EXPECT_LE(r.scores["ramp_down_s"].get<double>(), 60.0);
}

}  // namespace
}  // namespace fw::fleet
