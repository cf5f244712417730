// agent.yaml keys added for tests/demos (time_scale) and for timing (loop_priority,
// server.worker_nice): ranges, the sim-only rule, and the shipped deploy/agent.yaml.
#include "agent/agent_config.hpp"

#include <gtest/gtest.h>

#include <string>

#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::agent {
namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(AgentConfig, TimeScaleIsForTheSimBackendOnly) {
  auto sim = parse_agent_config("backend: sim:x.yaml\ntime_scale: 20\n", "a.yaml");
  ASSERT_TRUE(sim.ok()) << sim.status().message();
  EXPECT_DOUBLE_EQ(sim->plant.time_scale, 20);
  auto hw = parse_agent_config("backend: nvml\ntime_scale: 20\n", "a.yaml");
  ASSERT_FALSE(hw.ok());
  EXPECT_EQ(hw.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has(hw.status().message(), "a.yaml")) << hw.status().message();
  EXPECT_TRUE(has(hw.status().message(), "time_scale")) << hw.status().message();
  EXPECT_FALSE(parse_agent_config("backend: sim:x.yaml\ntime_scale: 0.5\n", "a.yaml").ok());
  EXPECT_DOUBLE_EQ(parse_agent_config("period_s: 0.5\n", "a.yaml")->plant.time_scale, 1);
}

TEST(AgentConfig, LoopPriorityAndWorkerNiceRanges) {
  auto c = parse_agent_config("loop_priority: 10\nserver:\n  worker_nice: 5\n", "a.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->loop_priority, 10);
  EXPECT_EQ(c->server.worker_nice, 5);
  auto d = parse_agent_config("period_s: 0.5\n", "a.yaml");
  EXPECT_EQ(d->loop_priority, 0);
  EXPECT_EQ(d->server.worker_nice, 10);
  EXPECT_FALSE(parse_agent_config("loop_priority: 100\n", "a.yaml").ok());
  EXPECT_FALSE(parse_agent_config("server:\n  worker_nice: 20\n", "a.yaml").ok());
}

TEST(AgentConfig, ShippedDeployFileLoads) {
  auto c = load_agent_config(FLEXWATT_SOURCE_DIR "/deploy/agent.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->loop_priority, 10);
  EXPECT_EQ(c->server.unix_socket_mode, 0660);
}

TEST(AgentConfig, SocketModeIsOctalAsWritten) {
  for (const char* m : {"0660", "660", "0o660", "\"0660\""}) {
    auto c = parse_agent_config(std::string("server:\n  socket_mode: ") + m + "\n", "a.yaml");
    ASSERT_TRUE(c.ok()) << m << ": " << c.status().message();
    EXPECT_EQ(c->server.unix_socket_mode, 0660) << m;
  }
  auto bad = parse_agent_config("server:\n  socket_mode: 0680\n", "a.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(has(bad.status().message(), "socket_mode")) << bad.status().message();
  EXPECT_FALSE(parse_agent_config("server:\n  socket_mode: 1777\n", "a.yaml").ok());
}

// policy_dirs: where a policy file named in a controller spec may be read from (the API or the
// config); absolute directories, file:line:field errors like the other keys.
TEST(AgentConfig, PolicyDirsAreAbsoluteDirectoriesWithShippedDefaults) {
  auto c =
      parse_agent_config("policy_dirs: [/srv/policies, /var/lib/flexwatt/policies]\n", "a.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->policy_dirs,
            (std::vector<std::string>{"/srv/policies", "/var/lib/flexwatt/policies"}));
  auto none = parse_agent_config("policy_dirs: []\n", "a.yaml");  // no policy file at all
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_TRUE(none->policy_dirs.empty());
  auto d = parse_agent_config("period_s: 0.5\n", "a.yaml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->policy_dirs, default_policy_dirs());
  bool var_lib = false, shipped = false;
  for (const std::string& dir : d->policy_dirs) {
    EXPECT_EQ(dir.front(), '/') << dir;
    var_lib = var_lib || dir == "/var/lib/flexwatt/policies";
    shipped = shipped || has(dir, "/share/flexwatt/policies");
  }
  EXPECT_TRUE(var_lib);
  EXPECT_TRUE(shipped);
  auto scalar = parse_agent_config("period_s: 0.5\npolicy_dirs: /srv/policies\n", "a.yaml");
  ASSERT_FALSE(scalar.ok());
  EXPECT_TRUE(has(scalar.status().message(), "a.yaml:2: policy_dirs: "))
      << scalar.status().message();
  auto rel = parse_agent_config("policy_dirs:\n  - /srv/policies\n  - policies\n", "a.yaml");
  ASSERT_FALSE(rel.ok());
  EXPECT_TRUE(has(rel.status().message(), "a.yaml:3: policy_dirs.1: ")) << rel.status().message();
  EXPECT_TRUE(has(rel.status().message(), "absolute")) << rel.status().message();
  EXPECT_FALSE(parse_agent_config("policy_dirs: [\"\"]\n", "a.yaml").ok());
}

}  // namespace
}  // namespace fw::agent
