// The agent's history ring (HistoryRing) and GET /v1/history.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agent/history_ring.hpp"
#include "server_fixture.hpp"
#include "test_state.hpp"

namespace fw::agent {
namespace {

using nlohmann::json;

AgentState at(double t, double node_w) {
  AgentState s = testing::sample_state();
  s.time_unix_s = t;
  s.node_power_w = node_w;
  return s;
}

TEST(HistoryRing, KeepsOneSamplePerSpacingAndDropsTheOldest) {
  HistoryRing ring(4, 0.5);
  for (int i = 0; i < 20; ++i) ring.add(at(100 + 0.1 * i, i));  // 10 Hz for 2 s
  EXPECT_EQ(ring.size(), 4u);                                   // 0.5 s apart, capacity 4
  json j = ring.to_json(3600, 100);
  ASSERT_EQ(j["t_unix_s"].size(), 4u);
  EXPECT_NEAR(j["t_unix_s"][1].get<double>() - j["t_unix_s"][0].get<double>(), 0.5, 1e-9);
  EXPECT_EQ(j["capacity"], 4);
}

TEST(HistoryRing, SpanThinningAndColumns) {
  HistoryRing ring(100, 1.0);
  for (int i = 0; i < 50; ++i) {
    AgentState s = at(1000 + i, 600 + i);
    if (i == 49) s.fallback_reason = "no_actuator";
    s.budget.scope = "gpu";  // 650 W per GPU, 2 GPUs: 1300 W per node
    ring.add(s);
  }
  json j = ring.to_json(9.5, 1000);  // samples at t >= 1049 - 9.5
  ASSERT_EQ(j["count"], 10);
  EXPECT_EQ(j["t_unix_s"].back(), 1049.0);
  EXPECT_EQ(j["node_power_w"].back(), 649.0);
  EXPECT_EQ(j["budget_w"][0], 1300.0);
  EXPECT_EQ(j["mean_w"][0], 600.5);
  EXPECT_EQ(j["window_s"], 30.0);
  EXPECT_EQ(j["violations_total"][0], 2);
  EXPECT_EQ(j["fallback_reason"].back(), "no_actuator");
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][1]["index"], 1);
  EXPECT_EQ(j["gpus"][1]["power_w"][0], 310.0);
  EXPECT_EQ(j["gpus"][1]["cap_w"][0], 500.0);
  json thin = ring.to_json(3600, 7);  // 50 samples in at most 7: every 8th, newest kept
  EXPECT_LE(thin["count"].get<int>(), 7);
  EXPECT_EQ(thin["t_unix_s"].back(), 1049.0);
  EXPECT_EQ(thin["stride"], 8);
}

// Jobs over time (#31): each registered job's progress and the knobs in force, as columns
// aligned with t_unix_s; null where the job was not registered or a knob was not set.
TEST(HistoryRing, JobsProgressAndKnobsAsColumns) {
  HistoryRing ring(100, 1.0);
  for (int i = 0; i < 6; ++i) {
    AgentState s = at(2000 + i, 500);
    s.jobs.clear();
    if (i >= 2) {  // registered from the third sample on
      RegisteredJob j;
      j.id = "grpo-7b";
      j.name = "policy";
      j.tokens_total = 1000.0 * i;
      j.steps_total = i;
      j.knobs[find_actuator("gen_concurrency")] = 8.0 * i;
      s.jobs.push_back(j);
    }
    ring.add(s);
  }
  json j = ring.to_json(3600, 100);
  ASSERT_EQ(j["count"], 6);
  ASSERT_EQ(j["jobs"].size(), 1u);
  const json& g = j["jobs"][0];
  EXPECT_EQ(g["id"], "grpo-7b");
  EXPECT_EQ(g["name"], "policy");
  ASSERT_EQ(g["tokens_total"].size(), 6u);
  EXPECT_TRUE(g["tokens_total"][0].is_null());
  EXPECT_EQ(g["tokens_total"][5], 5000.0);
  EXPECT_EQ(g["steps_total"][3], 3.0);
  ASSERT_TRUE(g["knobs"].contains("gen_concurrency"));
  EXPECT_EQ(g["knobs"]["gen_concurrency"].size(), 6u);
  EXPECT_TRUE(g["knobs"]["gen_concurrency"][1].is_null());
  EXPECT_EQ(g["knobs"]["gen_concurrency"][4], 32.0);
  EXPECT_FALSE(g["knobs"].contains("group_size"));  // never set: no column
}

TEST(HistoryRing, EmptyAndUnmeasured) {
  HistoryRing ring;
  json j = ring.to_json(60, 10);
  EXPECT_EQ(j["count"], 0);
  EXPECT_TRUE(j["t_unix_s"].empty());
  AgentState s = at(5, kUnset);
  ring.add(s);
  EXPECT_TRUE(ring.to_json(60, 10)["node_power_w"][0].is_null());
}

class History : public testing::ServerFixture {};

TEST_F(History, ServesTheHubsRingWithReadScope) {
  for (int i = 0; i < 5; ++i) hub_.publish(at(2000 + i, 600 + i));
  start();
  auto r = tcp(testing::kRead).Get("/v1/history?span_s=60&max_points=100");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["count"], 5);
  EXPECT_EQ(j["node_power_w"].back(), 604.0);
  auto anon = tcp().Get("/v1/history");
  ASSERT_TRUE(anon);
  EXPECT_EQ(anon->status, 401);
  for (const char* bad : {"/v1/history?span_s=0", "/v1/history?span_s=7200",
                          "/v1/history?max_points=1.5", "/v1/history?max_points=100000"}) {
    auto b = tcp(testing::kRead).Get(bad);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->status, 422) << bad << ": " << b->body;
  }
}

}  // namespace
}  // namespace fw::agent
