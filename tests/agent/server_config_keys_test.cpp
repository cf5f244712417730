// The agent config keys of the API's connection and audit limits (server.*).

#include <gtest/gtest.h>

#include "agent/agent_config.hpp"

namespace fw::agent {
namespace {

TEST(ServerLimitKeys, ParseIntoServerConfig) {
  auto c = parse_agent_config(
      "server:\n"
      "  idle_timeout_s: 2\n"
      "  head_timeout_s: 3\n"
      "  body_timeout_s: 4\n"
      "  max_connections: 100\n"
      "  max_connections_per_client: 8\n"
      "  audit_log_max_bytes: 1048576\n"
      "  audit_log_keep: 5\n"
      "  audit_rate_per_s: 2\n"
      "  audit_burst: 10\n",
      "a.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  const ServerConfig& s = c->server;
  EXPECT_DOUBLE_EQ(s.idle_timeout_s, 2);
  EXPECT_DOUBLE_EQ(s.head_timeout_s, 3);
  EXPECT_DOUBLE_EQ(s.body_timeout_s, 4);
  EXPECT_EQ(s.max_connections, 100);
  EXPECT_EQ(s.max_connections_per_client, 8);
  EXPECT_EQ(s.audit_log_max_bytes, 1048576u);
  EXPECT_EQ(s.audit_log_keep, 5);
  EXPECT_DOUBLE_EQ(s.audit_rate_per_s, 2);
  EXPECT_DOUBLE_EQ(s.audit_burst, 10);
  auto d = parse_agent_config("period_s: 0.5\n", "a.yaml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->server.max_connections_per_client, ServerConfig{}.max_connections_per_client);
}

TEST(ServerLimitKeys, OutOfRangeValuesAreRefused) {
  for (const char* bad :
       {"  head_timeout_s: 0\n", "  max_connections: 0\n", "  max_connections_per_client: -1\n",
        "  audit_log_max_bytes: 10\n", "  audit_log_keep: 1000\n", "  audit_rate_per_s: 0\n",
        "  idle_timeout_s: x\n"}) {
    EXPECT_FALSE(parse_agent_config(std::string("server:\n") + bad, "a.yaml").ok()) << bad;
  }
}

}  // namespace
}  // namespace fw::agent
