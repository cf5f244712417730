// fleet-sim's argument checks (no etcd needed: they fail before any connection).

#include "fleet_sim/fleet_sim.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>

#include "fleet_sim/sim_node.hpp"
#include "sim/scenario.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::fleet {
namespace {

TEST(FleetSim, OnePositivePfiPerSimulatedJob) {
  FleetSimOptions o;
  o.etcd = {"http://127.0.0.1:1"};
  o.nodes = 16;
  o.out_dir = "/nonexistent";
  EXPECT_EQ(fleet_sim_jobs(o), 18);  // 16 + 16 / 8 joining later
  o.nodes = 4;
  EXPECT_EQ(fleet_sim_jobs(o), 5);  // at least one joins later
  o.job_pfi = {1, 2, 3};
  auto r = run_fleet_sim(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("one PFI per simulated job (5)"), std::string::npos);
  o.job_pfi = {1, 2, 3, 0, 1};
  r = run_fleet_sim(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("must be > 0"), std::string::npos);
}

// --dr-depth's range is (0, 1] as its --help says (issue 45): 1 is a full curtailment (a 0 W
// target), which the site cannot hold and the coordinator reports as a shortfall.
TEST(FleetSim, DrDepthOfOneIsAccepted) {
  FleetSimOptions o;
  o.etcd = {"http://127.0.0.1:1"};
  o.scenario = "dr";
  o.out_dir = "/nonexistent";
  o.mix = "nope";  // the check after the depth's: no connection is tried
  o.dr_depth = 1.0;
  auto r = run_fleet_sim(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("mix"), std::string::npos) << r.status().message();
  for (double bad : {0.0, -0.1, 1.01}) {
    o.dr_depth = bad;
    r = run_fleet_sim(o);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("dr_depth: must be in (0, 1]"), std::string::npos)
        << r.status().message();
  }
}

// --node-plant: sim or replay, replay only with a mix (its event's jobs); checked before any
// connection is tried.
TEST(FleetSim, TheReplayPlantNeedsAMix) {
  FleetSimOptions o;
  o.etcd = {"http://127.0.0.1:1"};
  o.scenario = "dr";
  o.out_dir = "/nonexistent";
  o.node_plant = "replay";
  auto r = run_fleet_sim(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node_plant: replay needs a mix"), std::string::npos)
      << r.status().message();
  o.node_plant = "curves";
  r = run_fleet_sim(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node_plant: 'curves' is not one of sim, replay"),
            std::string::npos)
      << r.status().message();
  EXPECT_FALSE(fleet_sim_mix_event("caiso").ok());
}

TEST(FleetSim, ApsMixScalesTheFieldsGpusOntoTheNodes) {
  auto m = fleet_sim_mix("aps", 64);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 6u);
  // 32, 32, 48, 32, 48, 48 GPUs of 240 over 64 nodes: 8.53, 8.53, 12.8, 8.53, 12.8, 12.8.
  std::vector<int> nodes;
  for (const auto& j : *m) nodes.push_back(j.nodes);
  EXPECT_EQ(nodes, (std::vector<int>{9, 8, 13, 8, 13, 13}));
  EXPECT_EQ((*m)[0].name, "ft_llama_8b_dolly");
  EXPECT_DOUBLE_EQ((*m)[0].tier_min, 0.75);
  EXPECT_TRUE((*m)[4].pausable);
  EXPECT_FALSE((*m)[1].pausable);
  auto small = fleet_sim_mix("aps", 6);
  ASSERT_TRUE(small.ok());
  for (const auto& j : *small) EXPECT_EQ(j.nodes, 1);
  EXPECT_FALSE(fleet_sim_mix("aps", 5).ok());
  EXPECT_FALSE(fleet_sim_mix("caiso", 64).ok());
  auto heavy = fleet_sim_mix("training-heavy", 64);  // 128, 128, 64, 32 of 352 GPUs
  ASSERT_TRUE(heavy.ok()) << heavy.status().message();
  nodes.clear();
  for (const auto& j : *heavy) nodes.push_back(j.nodes);
  EXPECT_EQ(nodes, (std::vector<int>{23, 23, 12, 6}));
  FleetSimOptions o;
  o.etcd = {"http://127.0.0.1:1"};
  o.out_dir = "/nonexistent";
  o.mix = "aps";
  auto r = run_fleet_sim(o);  // scenario site
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("mix: only with scenario dr"), std::string::npos);
}

// The 8-GPU pretraining node, its job started at 0.
sim::Scenario pretrain_node() {
  auto sc = sim::load_scenario(
      std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/caps-pretrain-a100x8.yaml", {});
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  sim::Scenario s = sc.ok() ? *sc : sim::Scenario{};
  for (auto& j : s.jobs) j.start_s = 0;
  return s;
}

TEST(SimNode, APausedJobStandsStillAndItsGpusIdle) {
  SimNode n("n", pretrain_node(), 7);
  double t = 0;
  for (; t < 20; t += 0.25) ASSERT_TRUE(n.step(t, n.nameplate_w()).ok());
  const double running_w = n.power_w(), tokens = n.tokens();
  ASSERT_GT(tokens, 0);
  for (; t < 30; t += 0.25) ASSERT_TRUE(n.step(t, n.min_w(), true).ok());
  EXPECT_TRUE(n.paused());
  EXPECT_DOUBLE_EQ(n.tokens(), tokens);  // no progress while paused
  EXPECT_LT(n.power_w(), 0.5 * running_w);
  EXPECT_LT(n.power_w(), n.min_w());  // idle GPUs draw under the minimum caps
  EXPECT_GT(n.tokens_uncontrolled(), tokens);
  for (; t < 40; t += 0.25) ASSERT_TRUE(n.step(t, n.nameplate_w()).ok());
  EXPECT_FALSE(n.paused());
  EXPECT_NEAR(n.paused_s(), 10, 0.3);
  EXPECT_GT(n.tokens(), tokens);  // it resumes where it stopped
}

// Issue 48 (synchronous stops): a node's job announces its end in its record, and once stopped
// it makes no more progress at any budget, its GPUs idle, and the time is not a pause.
TEST(SimNode, AStoppedJobAnnouncedItsEndAndItsGpusIdleForGood) {
  SimNode n("n", pretrain_node(), 7);
  double t = 0;
  for (; t < 20; t += 0.25) ASSERT_TRUE(n.step(t, n.nameplate_w()).ok());
  n.set_ends_at(1.9e9);
  const NodeRecord r = n.record(1.8e9);
  ASSERT_FALSE(r.jobs.empty());
  EXPECT_DOUBLE_EQ(r.jobs[0].ends_at_unix_s, 1.9e9);
  const double running_w = n.power_w(), tokens = n.tokens();
  n.stop();
  for (; t < 30; t += 0.25) ASSERT_TRUE(n.step(t, n.nameplate_w()).ok());
  EXPECT_TRUE(n.stopped());
  EXPECT_DOUBLE_EQ(n.tokens(), tokens);
  EXPECT_LT(n.power_w(), 0.5 * running_w);
  EXPECT_LT(n.power_w(), n.min_w());
  EXPECT_DOUBLE_EQ(n.paused_s(), 0);
}

// The probe measures each budget from the job's running state (a node run uncapped for warm_s,
// copied per budget), not from a fresh node whose job starts at 0: the curve the split trusts
// is the live run's. Each point equals a node run uncapped to warm_s, then at the budget.
TEST(SimNode, DrawCurveProbeMeasuresFromTheRunningState) {
  auto sc = sim::load_scenario(
      std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/caps-pretrain-a100x8.yaml", {});
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  sim::Scenario s = *sc;
  for (auto& j : s.jobs) j.start_s = 0;
  const double warm_s = 30, settle_s = 5, measure_s = 10, tick_s = 0.25;
  auto probe = probe_draw_curve(s, 7, 2, settle_s, measure_s, tick_s, warm_s);
  ASSERT_TRUE(probe.ok()) << probe.status().message();
  ASSERT_EQ(probe->size(), 2u);
  auto fresh = probe_draw_curve(s, 7, 2, settle_s, measure_s, tick_s);
  ASSERT_TRUE(fresh.ok());
  for (const DrawCurvePoint& p : *probe) {
    SimNode n("by-hand", s, 7);
    int64_t i = 1;
    for (; double(i) * tick_s <= warm_s + 1e-9; ++i) {
      ASSERT_TRUE(n.step(double(i) * tick_s, n.nameplate_w()).ok());
    }
    double e = 0, tok0 = 0, free0 = 0;
    int m = 0;
    for (;; ++i) {
      const double t = double(i) * tick_s;
      if (t > warm_s + settle_s + measure_s + 1e-9) break;
      ASSERT_TRUE(n.step(t, p.budget_w).ok());
      if (t <= warm_s + settle_s + 1e-9) {
        tok0 = n.tokens();
        free0 = n.tokens_uncontrolled();
        continue;
      }
      e += n.power_w();
      ++m;
    }
    EXPECT_NEAR(p.draw_w, e / m, 1e-6 * p.draw_w) << p.budget_w;
    EXPECT_NEAR(p.throughput_rel, (n.tokens() - tok0) / (n.tokens_uncontrolled() - free0), 1e-9)
        << p.budget_w;
  }
  // Not the fresh node's reading: the first seconds of a job are not its running state.
  EXPECT_NE((*probe)[0].draw_w, (*fresh)[0].draw_w);
}

// Each mix is its event file's jobs: names, GPUs, tiers and pausing as `dr replay` reads them,
// the workload standing in for the file's sweep job.
TEST(FleetSim, EveryMixIsItsReplayEventsJobs) {
  const std::map<std::string, std::string> sweep_workload = {{"ft_llama_8b_dolly", "llama-8b-ft"},
                                                             {"infer_llama_8b", "llama-8b-ft"},
                                                             {"pt_mpt_13b_lg", "mpt-13b-pt"}};
  for (const auto& [mix, file] :
       std::map<std::string, std::string>{{"aps", "aps-2025-05-01.yaml"},
                                          {"training-heavy", "mix-training-heavy.yaml"},
                                          {"inference-heavy", "mix-inference-heavy.yaml"}}) {
    SCOPED_TRACE(mix);
    YAML::Node y = YAML::LoadFile(std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/dr/" + file);
    auto event = fleet_sim_mix_event(mix);  // what --node-plant replay loads
    ASSERT_TRUE(event.ok());
    EXPECT_EQ(*event, "scenarios/dr/" + file);
    auto m = fleet_sim_mix(mix, 64);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_EQ(m->size(), y["jobs"].size());
    for (size_t k = 0; k < m->size(); ++k) {
      const YAML::Node j = y["jobs"][k];
      const FleetSimMixJob& f = (*m)[k];
      EXPECT_EQ(f.name, j["name"].as<std::string>());
      EXPECT_EQ(f.field_gpus, j["gpus"].as<int>());
      EXPECT_DOUBLE_EQ(f.tier_min, j["tier_min"].as<double>());
      EXPECT_EQ(f.pausable, j["pausable"] && j["pausable"].as<bool>());
      EXPECT_EQ(f.workload, sweep_workload.at(j["sweep_job"].as<std::string>()));
    }
  }
}

}  // namespace
}  // namespace fw::fleet
