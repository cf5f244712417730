// The registry's `frontier` entry (builtin_controllers.cpp, frontier_setup.hpp).

#include <gtest/gtest.h>

#include "controllers/frontier_controller.hpp"
#include "registry/controller_registry.hpp"
#include "sim/scenario.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::registry {
namespace {

ControllerEnv env_for(const std::string& rel) {
  auto s = sim::load_scenario(std::string(FLEXWATT_SOURCE_DIR) + "/" + rel, {});
  EXPECT_TRUE(s.ok()) << s.status().message();
  ControllerEnv env;
  env.info = sim::make_plant(*s, 1)->info();
  env.budget = s->budget;
  const sim::Scenario sc = *s;
  env.make_plant = [sc](uint64_t seed) { return sim::make_plant(sc, seed); };
  return env;
}

Result<PreparedController> prepare(const std::string& text, const ControllerEnv& env) {
  auto spec = parse_controller_spec(text);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return prepare_controller(*spec, env);
}

TEST(FrontierEntry, PlansOnTheSimulatedJobsOfflineProfile) {
  const ControllerEnv env = env_for("scenarios/caps-pp4-a100pcie-x8.yaml");
  auto p = prepare("frontier", env);
  ASSERT_TRUE(p.ok()) << p.status().message();
  auto c = p->make(1);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->name(), "frontier");
  const auto& f = static_cast<const FrontierController&>(*c);
  ASSERT_EQ(f.base_caps_w().size(), 4u);
  EXPECT_LE(f.base_plan().constant.time_increase, 0.012 + 1e-9);
  EXPECT_GT(f.base_plan().constant.energy_saved, 0.0);
  // A smaller slowdown saves no more.
  auto tight = prepare("frontier:slowdown=0", env);
  ASSERT_TRUE(tight.ok()) << tight.status().message();
  auto ct = tight->make(1);
  EXPECT_LE(static_cast<const FrontierController&>(*ct).base_plan().constant.energy_saved,
            f.base_plan().constant.energy_saved + 1e-12);
}

TEST(FrontierEntry, RefusesAJobThatIsNotAPipelineAndAFileWithoutMicrobatches) {
  const ControllerEnv env = env_for("scenarios/caps-pretrain-a100x8.yaml");
  auto p = prepare("frontier", env);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("not a pipeline job"), std::string::npos)
      << p.status().message();
  const std::string file =
      std::string(FLEXWATT_SOURCE_DIR) + "/data/perseus/stage_profile_gpt3-175b+a40_bf16.csv";
  auto q = prepare("frontier:profile=" + file, env);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("microbatches"), std::string::npos) << q.status().message();
  auto r = prepare("frontier:profile=" + file + ",microbatches=12,dp=2,blocking_w=70.38", env);
  EXPECT_TRUE(r.ok()) << r.status().message();
}

}  // namespace
}  // namespace fw::registry
