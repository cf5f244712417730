#include "rl/ppo_controller.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <new>

#include "control/actuator.hpp"
#include "control/control_loop.hpp"
#include "rl/plant_env.hpp"
#include "rl/plant_features.hpp"
#include "rl/ppo_trainer.hpp"
#include "scripted_plant.hpp"
#include "toy_envs.hpp"

// GCC flags free() in a replaced operator delete as mismatched; the pair below matches.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// Counts C++ heap allocations of this thread while enabled by replacing the global
// operator new (policy_test.cpp interposes malloc for the same purpose; one binary cannot
// define malloc twice). Policy::act's Eigen path is covered there.
namespace {
thread_local bool g_count_news = false;
thread_local long g_news = 0;
}  // namespace
void* operator new(std::size_t n) {
  if (g_count_news) ++g_news;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace fw::rl {
namespace {

using testing::gpu_budget;
using testing::ScriptedPlant;

// A policy trained for two iterations on the scripted plant (the train smoke test).
Policy trained_policy() {
  std::vector<std::unique_ptr<Env>> envs;
  for (int e = 0; e < 2; ++e) {
    PlantEnvConfig c;
    c.episode_s = 60;
    auto env = PlantEnv::create(
        [](uint64_t, const std::vector<std::string>&) -> Result<PlantEpisode> {
          PlantEpisode ep;
          ep.plant = std::make_unique<ScriptedPlant>(12);
          ep.budget = gpu_budget(300);
          return ep;
        },
        c);
    EXPECT_TRUE(env.ok());
    envs.push_back(std::move(env).value());
  }
  PpoConfig pc;
  pc.seed = 3;
  pc.hidden = {16, 16};
  pc.num_steps = 12;  // one 60 s episode of 5 s decisions
  pc.num_minibatches = 2;
  pc.update_epochs = 2;
  auto t = PpoTrainer::create(std::move(envs), pc);
  EXPECT_TRUE(t.ok()) << t.status().message();
  for (int i = 0; i < 2; ++i) EXPECT_TRUE((*t)->iterate().ok());
  return (*t)->policy({{"scenario_family", "scripted"}, {"decision_period_s", 5.0}});
}

TEST(PpoController, PolicyFileCarriesTheSpecs) {
  const nlohmann::json j = trained_policy().to_json();
  EXPECT_EQ(j["observation"]["names"], nlohmann::json(plant_obs_spec().names));
  EXPECT_EQ(j["action"]["names"], nlohmann::json({"gen_concurrency", "group_size"}));
  EXPECT_EQ(j["action"]["categories"], nlohmann::json({3, 3}));
  EXPECT_EQ(j["metadata"]["scenario_family"], "scripted");
  EXPECT_EQ(j["metadata"]["training_seed"], 3);
  EXPECT_EQ(j["metadata"]["total_steps"], 2 * 2 * 12);
}

TEST(PpoController, RejectsAMismatchedObservationSpecClearly) {
  // A policy over another environment's observation (4 entries).
  PpoConfig pc;
  pc.hidden = {8};
  pc.num_steps = 20;
  pc.num_minibatches = 2;
  pc.update_epochs = 1;
  auto t = PpoTrainer::create(testing::make_envs(1, 2, false), pc);
  ASSERT_TRUE(t.ok());
  auto bad = PpoController::create((*t)->policy());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().exit_code(), 2);
  EXPECT_NE(bad.status().message().find("observation spec does not match"), std::string::npos)
      << bad.status().message();

  // Same size, one renamed entry: the message names it.
  nlohmann::json j = trained_policy().to_json();
  j["observation"]["names"][3] = "power_60s_rel";
  auto renamed = Policy::from_json(j);
  ASSERT_TRUE(renamed.ok()) << renamed.status().message();
  auto r = PpoController::create(*renamed);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("entry 3 is 'power_60s_rel', expected 'power_120s_rel'"),
            std::string::npos)
      << r.status().message();

  // A plant whose jobs expose no knob.
  PlantInfo none = ScriptedPlant().info();
  none.jobs[0].knob_ranges = {};
  const Status s = PpoController::check_plant(trained_policy(), none);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("scripted"), std::string::npos) << s.message();
}

TEST(PpoController, TakesThePolicysPeriodAndActsLikeThePolicy) {
  Policy p = trained_policy();
  auto c = PpoController::create(p);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ((*c)->period_s(), 5.0);
  EXPECT_EQ((*c)->name(), "ppo");

  // Drive a loop for 30 s; at the end compare the controller's decision with the policy's
  // action on the observation built by the shared builder.
  ScriptedPlant plant(12);
  const BudgetSchedule budget = gpu_budget(300);
  LoopConfig lc;
  lc.duration_s = 30;
  ControlLoop loop(plant, budget, lc);
  loop.add_controller(c->get());
  ASSERT_TRUE(loop.run().ok());
  EXPECT_TRUE(loop.done());

  SnapshotRing ring(8);
  Snapshot s;
  ASSERT_TRUE(plant.read(30, s).ok());
  ring.push(s);
  const BudgetUnits units = make_budget_units(plant.info(), BudgetScope::kGpu);
  Observation obs;
  obs.time_s = 30;
  obs.plant = &plant.info();
  obs.budget = &budget.entries[0].budget;
  obs.units = &units;
  obs.history = &ring;
  std::array<double, kPlantObsDim> f{};
  build_plant_features(obs, 0, f);
  std::array<double, 2> a{};
  p.act(f, a);
  Command want = blank_command(plant.info());
  apply_knob_action(plant.info(), s, 0, a, want);
  const Command& got = (*c)->decide(obs);
  for (int q = 0; q < kNumKnobs; ++q) {
    EXPECT_TRUE((std::isnan(got.knobs[0][q]) && std::isnan(want.knobs[0][q])) ||
                got.knobs[0][q] == want.knobs[0][q]);
  }
}

TEST(PpoController, DecideAllocatesNothing) {
  auto c = PpoController::create(trained_policy());
  ASSERT_TRUE(c.ok());
  ScriptedPlant plant(12);
  (*c)->reset(plant.info());
  const BudgetSchedule budget = gpu_budget(300);
  const BudgetUnits units = make_budget_units(plant.info(), BudgetScope::kGpu);
  SnapshotRing ring(601);
  Snapshot s;
  for (int i = 0; i < 700; ++i) {  // fill every slot so pushes reuse storage
    ASSERT_TRUE(plant.read(0.5 * i, s).ok());
    ring.push(s);
  }
  Observation obs;
  obs.time_s = 0.5 * 699;
  obs.plant = &plant.info();
  obs.budget = &budget.entries[0].budget;
  obs.units = &units;
  obs.history = &ring;
  (*c)->decide(obs);  // warm-up
  g_news = 0;
  g_count_news = true;
  int* volatile probe = new int(1);  // the counter itself works
  g_count_news = false;
  delete probe;
  ASSERT_EQ(g_news, 1);
  g_news = 0;
  g_count_news = true;
  // The same observation gives the same command every time (and the loop is not optimised
  // away): knob 0 of every call equals the first call's, NaN (not commanded) included.
  int same = 0;
  double first = 0;
  for (int i = 0; i < 100; ++i) {
    const double k = (*c)->decide(obs).knobs[0][0];
    if (i == 0) first = k;
    same += (std::isnan(k) && std::isnan(first)) || k == first ? 1 : 0;
  }
  g_count_news = false;
  EXPECT_EQ(g_news, 0);
  EXPECT_EQ(same, 100);
}

}  // namespace
}  // namespace fw::rl
