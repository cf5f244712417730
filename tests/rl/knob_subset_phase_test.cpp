// --knobs (a subset of knobs the policy acts on) and --decide-on phase (decisions at phase
// boundaries) in the environment and the controller (docs/rl.md).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <vector>

#include "control/actuator.hpp"
#include "control/control_loop.hpp"
#include "rl/plant_env.hpp"
#include "rl/plant_features.hpp"
#include "rl/ppo_controller.hpp"
#include "rl/ppo_trainer.hpp"
#include "scripted_plant.hpp"

namespace fw::rl {
namespace {

using testing::gpu_budget;
using testing::ScriptedPlant;

// ScriptedPlant whose job generates for the first gen_s of every cycle_s, then updates; a
// step still completes every step_s (20 s). With cycle 10 s, the phase boundaries are
// t = 10, 20, 30, … (generation starts; steps complete at multiples of 20 s).
class PhasedPlant : public ScriptedPlant {
 public:
  double cycle_s = 10, gen_s = 6;
  bool phases = true;
  using ScriptedPlant::ScriptedPlant;
  Status read(double now_s, Snapshot& out) override {
    FW_RETURN_IF_ERROR(ScriptedPlant::read(now_s, out));
    const double in = std::fmod(now_s + 1e-9, cycle_s);
    if (phases) out.jobs[0].phase = in < gen_s ? Phase::kGenerate : Phase::kUpdate;
    if (!phases) out.jobs[0].steps_total = 0;
    return Status::Ok();
  }
};

Result<std::unique_ptr<PlantEnv>> make_env(PlantEnvConfig c, bool phases = true) {
  return PlantEnv::create(
      [phases](uint64_t, const std::vector<std::string>&) -> Result<PlantEpisode> {
        PlantEpisode ep;
        auto p = std::make_unique<PhasedPlant>(12, 8);
        p->phases = phases;
        ep.plant = std::move(p);
        ep.budget = gpu_budget(400);
        return ep;
      },
      c);
}

TEST(KnobSubset, SpecHasOnlyTheChosenKnobAndRoundTrips) {
  const ActionSpec& s = plant_action_spec(KnobActionMode::kLevel, 1);
  EXPECT_EQ(s.names, std::vector<std::string>({"gen_concurrency"}));
  EXPECT_EQ(s.categories, std::vector<int>({kKnobLevels[0]}));
  auto l = plant_action_layout(s);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->mode, KnobActionMode::kLevel);
  EXPECT_EQ(l->knob_mask, 1u);
  auto both = plant_action_layout(plant_action_spec(KnobActionMode::kStep));
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->knob_mask, kAllKnobs);
  EXPECT_EQ(*parse_knob_mask("gen_concurrency"), 1u);
  EXPECT_EQ(*parse_knob_mask("group_size,gen_concurrency"), 3u);
  EXPECT_EQ(knob_mask_name(2), "group_size");
  EXPECT_FALSE(parse_knob_mask("batch").ok());
}

TEST(PowerCapFactor, SpecNamesAndLevels) {
  const ActionSpec& s = plant_action_spec(KnobActionMode::kLevel, 2 | kPowerCapBit);
  EXPECT_EQ(s.names, std::vector<std::string>({"group_size", "power_cap"}));
  EXPECT_EQ(s.categories, std::vector<int>({kKnobLevels[1], kKnobLevels[kPowerCapFactor]}));
  auto l = plant_action_layout(s);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->knob_mask, 2u | kPowerCapBit);
  EXPECT_EQ(*parse_knob_mask("power_cap,group_size"), 2u | kPowerCapBit);
  EXPECT_EQ(knob_mask_name(kMaxActionMask), "gen_concurrency,group_size,power_cap");
  EXPECT_EQ(*parse_knob_mask("all"), kAllKnobs);  // "all" stays the two knobs
  GpuInfo a100{"a100", 100, 400, 400, 400};
  EXPECT_DOUBLE_EQ(cap_level_w(a100, 0), 200);
  EXPECT_DOUBLE_EQ(cap_level_w(a100, 5), 300);
  EXPECT_DOUBLE_EQ(cap_level_w(a100, 10), 400);
  EXPECT_DOUBLE_EQ(cap_level_w(a100, 99), 400);
  GpuInfo narrow{"narrow", 250, 400, 400, 400};
  EXPECT_DOUBLE_EQ(cap_level_w(narrow, 0), 250);  // clamped to the settable range
}

TEST(PowerCapFactor, LevelAndStepWriteTheJobsCaps) {
  ScriptedPlant plant(12, 8);  // one GPU, cap measured at 400 W
  Snapshot s;
  ASSERT_TRUE(plant.read(0, s).ok());
  Command cmd = blank_command(plant.info());
  // Level mode, cap only: level 3 = 65 % of 400 W.
  const std::array<double, 1> lv{3};
  EXPECT_EQ(apply_knob_action(plant.info(), s, 0, lv, cmd, KnobActionMode::kLevel, kPowerCapBit),
            1);
  EXPECT_DOUBLE_EQ(cmd.power_cap_w[0], 260);
  EXPECT_TRUE(std::isnan(cmd.knobs[0][0]) && std::isnan(cmd.knobs[0][1]));
  // The measured cap already at the level: nothing commanded, no churn.
  const std::array<double, 1> top{10};
  EXPECT_EQ(apply_knob_action(plant.info(), s, 0, top, cmd, KnobActionMode::kLevel, kPowerCapBit),
            0);
  EXPECT_TRUE(std::isnan(cmd.power_cap_w[0]));
  // Step mode with a knob: group "stay", cap "down" one level from 400 W.
  const std::array<double, 2> step{1, 0};
  EXPECT_EQ(
      apply_knob_action(plant.info(), s, 0, step, cmd, KnobActionMode::kStep, 2 | kPowerCapBit), 1);
  EXPECT_TRUE(std::isnan(cmd.knobs[0][1]));
  EXPECT_DOUBLE_EQ(cmd.power_cap_w[0], 380);
}

TEST(PowerCapFactor, OneLevelForEveryGpuOfTheJobOnlyItsGpus) {
  PlantInfo info;
  info.gpus = {
      {"a100", 100, 400, 400, 400}, {"a100", 100, 400, 400, 400}, {"h100", 200, 700, 700, 700}};
  JobInfo j;
  j.name = "two-gpu";
  j.gpus = {1, 2};
  info.jobs = {j};
  Snapshot s;
  s.gpus.resize(3);
  for (auto& g : s.gpus) g.cap_w = 400;
  s.gpus[2].cap_w = 700;
  s.jobs.resize(1);
  Command cmd = blank_command(info);
  const std::array<double, 1> lv{6};  // 80 % of each GPU's maximum
  EXPECT_EQ(apply_knob_action(info, s, 0, lv, cmd, KnobActionMode::kLevel, kPowerCapBit), 1);
  EXPECT_TRUE(std::isnan(cmd.power_cap_w[0]));  // not the job's GPU
  EXPECT_DOUBLE_EQ(cmd.power_cap_w[1], 320);
  EXPECT_DOUBLE_EQ(cmd.power_cap_w[2], 560);
}

TEST(KnobSubset, ApplyLeavesTheOtherKnobUnset) {
  ScriptedPlant plant(12, 8);
  Snapshot s;
  ASSERT_TRUE(plant.read(0, s).ok());
  Command cmd = blank_command(plant.info());
  // Step mode, group_size only: one entry, "down".
  const std::array<double, 1> down{0};
  EXPECT_EQ(apply_knob_action(plant.info(), s, 0, down, cmd, KnobActionMode::kStep, 2), 1);
  EXPECT_TRUE(std::isnan(cmd.knobs[0][0]));
  EXPECT_EQ(cmd.knobs[0][1], 6);
}

TEST(KnobSubset, EnvActsOnConcurrencyOnlyAndGroupSizeStaysConfigured) {
  PlantEnvConfig c;
  c.episode_s = 60;
  c.action_mode = KnobActionMode::kLevel;
  c.knob_mask = 1;
  auto env = make_env(c);
  ASSERT_TRUE(env.ok()) << env.status().message();
  EXPECT_EQ((*env)->action_spec().dim(), 1);
  std::array<double, kPlantObsDim> obs{};
  ASSERT_TRUE((*env)->reset(1, obs).ok());
  // Level 0 is gen_concurrency 1; the whole episode, group_size stays at its configured 8.
  const std::array<double, 1> a{0};
  bool done = false;
  while (!done) {
    auto r = (*env)->step(a, obs);
    ASSERT_TRUE(r.ok());
    done = r->truncated;
    EXPECT_DOUBLE_EQ(obs[11], (8.0 - 1) / 15) << "group_size_frac moved";
  }
  EXPECT_DOUBLE_EQ(obs[10], 0.0);  // gen_concurrency at 1, its minimum
  // The two-knob action is rejected by a one-knob env.
  const std::array<double, 2> two{0, 0};
  ASSERT_TRUE((*env)->reset(2, obs).ok());
  EXPECT_FALSE((*env)->step(two, obs).ok());
}

TEST(PhaseDecisions, EnvDecidesOnlyAtBoundariesAfterTheMinimumPeriod) {
  PlantEnvConfig c;
  c.episode_s = 95;
  c.decision_period_s = 5;
  c.decide_on = DecideOn::kPhase;
  c.max_decision_period_s = 60;
  auto env = make_env(c);
  ASSERT_TRUE(env.ok()) << env.status().message();
  std::array<double, kPlantObsDim> obs{};
  ASSERT_TRUE((*env)->reset(1, obs).ok());
  const std::array<double, 2> stay{1, 1};
  std::vector<double> times;
  for (bool done = false; !done;) {
    auto r = (*env)->step(stay, obs);
    ASSERT_TRUE(r.ok());
    done = r->truncated;
    if (!done) times.push_back((*env)->time_s());
  }
  EXPECT_EQ(times, std::vector<double>({10, 20, 30, 40, 50, 60, 70, 80, 90}));

  // A minimum period of 12 s skips the boundary 10 s after a decision.
  c.decision_period_s = 12;
  auto env12 = make_env(c);
  ASSERT_TRUE(env12.ok());
  ASSERT_TRUE((*env12)->reset(1, obs).ok());
  times.clear();
  for (bool done = false; !done;) {
    auto r = (*env12)->step(stay, obs);
    ASSERT_TRUE(r.ok());
    done = r->truncated;
    if (!done) times.push_back((*env12)->time_s());
  }
  EXPECT_EQ(times, std::vector<double>({20, 40, 60, 80}));

  // No boundaries at all: the maximum period decides.
  c.decision_period_s = 5;
  c.max_decision_period_s = 25;
  auto flat = make_env(c, /*phases=*/false);
  ASSERT_TRUE(flat.ok());
  ASSERT_TRUE((*flat)->reset(1, obs).ok());
  times.clear();
  for (bool done = false; !done;) {
    auto r = (*flat)->step(stay, obs);
    ASSERT_TRUE(r.ok());
    done = r->truncated;
    if (!done) times.push_back((*flat)->time_s());
  }
  EXPECT_EQ(times, std::vector<double>({25, 50, 75}));
}

// A one-knob phase policy trained briefly on the phased plant.
Policy phase_policy() {
  std::vector<std::unique_ptr<Env>> envs;
  PlantEnvConfig c;
  c.episode_s = 60;
  c.decide_on = DecideOn::kPhase;
  c.knob_mask = 1;
  auto env = make_env(c);
  EXPECT_TRUE(env.ok());
  envs.push_back(std::move(env).value());
  PpoConfig pc;
  pc.seed = 5;
  pc.hidden = {8};
  pc.num_steps = 8;
  pc.num_minibatches = 2;
  pc.update_epochs = 1;
  auto t = PpoTrainer::create(std::move(envs), pc);
  EXPECT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE((*t)->iterate().ok());
  return (*t)->policy(
      {{"decision_period_s", 5.0}, {"decide_on", "phase"}, {"max_decision_period_s", 60.0}});
}

TEST(PhaseDecisions, ControllerDecidesAtTheSameTicksAsTheEnv) {
  auto c = PpoController::create(phase_policy());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ((*c)->decide_on(), DecideOn::kPhase);
  EXPECT_EQ((*c)->knob_mask(), 1u);
  EXPECT_LT((*c)->period_s(), 0.5);  // polled every sample
  PhasedPlant plant(12, 8);
  const BudgetSchedule budget = gpu_budget(400);
  LoopConfig lc;
  lc.duration_s = 35;
  ControlLoop loop(plant, budget, lc);
  loop.add_controller(c->get());
  ASSERT_TRUE(loop.run().ok());
  // Decisions at t = 0, 10, 20, 30 only: the boundaries, as in the env test above.
  EXPECT_EQ((*c)->decisions(0), 4);
  EXPECT_DOUBLE_EQ((*c)->last_decision_s(0), 30);

  // A period policy (no decide_on in its metadata) keeps the old behaviour.
  nlohmann::json j = phase_policy().to_json();
  j["metadata"].erase("decide_on");
  auto old = Policy::from_json(j);
  ASSERT_TRUE(old.ok());
  auto oc = PpoController::create(*old);
  ASSERT_TRUE(oc.ok());
  EXPECT_EQ((*oc)->decide_on(), DecideOn::kPeriod);
  EXPECT_EQ((*oc)->period_s(), 5.0);
}

}  // namespace
}  // namespace fw::rl
