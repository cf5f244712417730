#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "agent/commands.hpp"
#include "agent/job_registry.hpp"
#include "agent/state_hub.hpp"
#include "test_state.hpp"

namespace fw::agent {
namespace {

using Clock = std::chrono::steady_clock;

TEST(StateHub, PublishNumbersVersionsAndSerialisesOnce) {
  StateHub hub;
  EXPECT_EQ(hub.latest()->state.version, 0u);
  EXPECT_EQ(hub.publish(testing::sample_state()), 1u);
  EXPECT_EQ(hub.publish(testing::sample_state()), 2u);
  auto p = hub.latest();
  EXPECT_EQ(p->state.version, 2u);
  auto j = nlohmann::json::parse(p->json);
  EXPECT_EQ(j["version"], 2);
  EXPECT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["jobs"][0]["knobs"]["gen_concurrency"], 32);
  EXPECT_FALSE(j["jobs"][0]["knobs"].contains("group_size"));  // NaN knob left out
  EXPECT_EQ(j["windows"][0]["violations_total"], 2);
}

TEST(StateHub, NanIsNull) {
  AgentState s;
  s.gpus.resize(1);
  auto j = to_json(s);
  EXPECT_TRUE(j["gpus"][0]["power_w"].is_null());
  EXPECT_TRUE(j["node_power_w"].is_null());
}

TEST(StateHub, WaitNewerReturnsAtDeadlineOrOnPublish) {
  StateHub hub;
  hub.publish(testing::sample_state());
  // Already newer: no wait.
  EXPECT_EQ(hub.wait_newer(0, Clock::now() + std::chrono::hours(1))->state.version, 1u);
  // Nothing newer and a past deadline: returns the same state.
  EXPECT_EQ(hub.wait_newer(1, Clock::now())->state.version, 1u);
  std::thread t([&] { hub.publish(testing::sample_state()); });
  auto p = hub.wait_newer(1, Clock::now() + std::chrono::seconds(10));
  t.join();
  EXPECT_EQ(p->state.version, 2u);
}

TEST(StateHub, CancelEndsAWait) {
  StateHub hub;
  std::atomic<bool> stop{false};
  std::thread t([&] {
    stop = true;
    hub.wake_all();
  });
  auto p = hub.wait_newer(0, Clock::now() + std::chrono::seconds(10), [&] { return stop.load(); });
  t.join();
  EXPECT_EQ(p->state.version, 0u);
  EXPECT_TRUE(stop);
}

TEST(CommandQueue, VersionsConflictsAndDrain) {
  CommandQueue q(2);
  AgentCommand c;
  c.what = ControllerChange{"static"};
  auto a = q.submit(c, std::nullopt);
  EXPECT_EQ(a.outcome, CommandQueue::Outcome::kAccepted);
  EXPECT_EQ(a.seq, 1u);
  auto stale = q.submit(c, 0);
  EXPECT_EQ(stale.outcome, CommandQueue::Outcome::kConflict);
  EXPECT_EQ(stale.seq, 1u);
  EXPECT_EQ(q.submit(c, 1).outcome, CommandQueue::Outcome::kAccepted);
  EXPECT_EQ(q.submit(c, std::nullopt).outcome, CommandQueue::Outcome::kFull);
  auto cmds = q.drain();
  ASSERT_EQ(cmds.size(), 2u);
  EXPECT_EQ(cmds[0].seq, 1u);
  EXPECT_EQ(cmds[1].seq, 2u);
  EXPECT_EQ(q.pending(), 0u);
  EXPECT_EQ(q.version(), 2u);
}

JobInfo grpo_info() {
  JobInfo info;
  info.kind = "grpo";
  info.knob_ranges[0] = {true, 8, 64, 8};
  info.default_knobs = {32, kUnset};
  return info;
}

TEST(JobRegistry, RegistersReportsAndRefusesRegress) {
  double now = 100;
  JobRegistry jobs(2, [&] { return now; });
  EXPECT_EQ(jobs.add("a", grpo_info()), JobRegistry::Outcome::kOk);
  EXPECT_EQ(jobs.add("a", grpo_info()), JobRegistry::Outcome::kExists);
  EXPECT_EQ(jobs.add("b", grpo_info()), JobRegistry::Outcome::kOk);
  EXPECT_EQ(jobs.add("c", grpo_info()), JobRegistry::Outcome::kFull);
  EXPECT_EQ(jobs.generation(), 2u);
  now = 103;
  EXPECT_EQ(jobs.report("a", {1000, 2, Phase::kScore, {}}), JobRegistry::Outcome::kOk);
  EXPECT_EQ(jobs.report("a", {999, 3, std::nullopt, {}}), JobRegistry::Outcome::kRegressed);
  EXPECT_EQ(jobs.report("zz", {1, 1, std::nullopt, {}}), JobRegistry::Outcome::kNotFound);
  now = 104.5;
  auto snap = jobs.snapshot();
  ASSERT_EQ(snap.size(), 2u);
  EXPECT_EQ(snap[0].tokens_total, 1000);
  EXPECT_EQ(snap[0].phase, "score");
  EXPECT_DOUBLE_EQ(snap[0].last_report_age_s, 1.5);
  EXPECT_DOUBLE_EQ(snap[1].last_report_age_s, 4.5);  // since registration
  EXPECT_EQ(jobs.remove("b"), JobRegistry::Outcome::kOk);
  EXPECT_EQ(jobs.remove("b"), JobRegistry::Outcome::kNotFound);
}

// A job declared step 8 from 8: what it is handed lies on its ladder, rounded down (never more
// power than asked). On sim the controller's ladder is the scenario's: 10 was handed out.
TEST(JobRegistry, SetKnobsRoundsDownToTheDeclaredStep) {
  JobRegistry jobs;
  JobInfo info;
  info.knob_ranges[0] = {true, 8, 256, 8};
  info.default_knobs[0] = 64;
  jobs.add("a", info);
  jobs.set_knobs("a", {10, kUnset});
  EXPECT_EQ(jobs.get("a")->knobs[0], 8);
  jobs.set_knobs("a", {255, kUnset});
  EXPECT_EQ(jobs.get("a")->knobs[0], 248);
  jobs.set_knobs("a", {3, kUnset});
  EXPECT_EQ(jobs.get("a")->knobs[0], 8);  // the range's bottom
}

TEST(JobRegistry, SetKnobsClampsVersionsAndWakes) {
  JobRegistry jobs;
  jobs.add("a", grpo_info());
  EXPECT_EQ(jobs.get("a")->knobs[0], 32);
  EXPECT_FALSE(jobs.set_knobs("nope", {1, 1}));
  EXPECT_TRUE(jobs.set_knobs("a", {32, 4}));  // unchanged value, undeclared knob
  EXPECT_EQ(jobs.get("a")->knob_version, 0u);
  EXPECT_TRUE(std::isnan(jobs.get("a")->knobs[1]));
  jobs.set_knobs("a", {1000, kUnset});
  EXPECT_EQ(jobs.get("a")->knobs[0], 64);  // clamped to the declared range
  EXPECT_EQ(jobs.get("a")->knob_version, 1u);
  // A waiter with a past deadline returns at once, unchanged.
  EXPECT_EQ(jobs.wait_knobs("a", 1, Clock::now())->knob_version, 1u);
  std::thread t([&] { jobs.set_knobs("a", {16, kUnset}); });
  auto j = jobs.wait_knobs("a", 1, Clock::now() + std::chrono::seconds(10));
  t.join();
  ASSERT_TRUE(j);
  EXPECT_EQ(j->knob_version, 2u);
  EXPECT_EQ(j->knobs[0], 16);
  EXPECT_FALSE(jobs.wait_knobs("gone", 0, Clock::now()));
}

TEST(JobRegistry, PfiIsRecordedAndServedPerJob) {
  JobRegistry jobs;
  jobs.add("a", grpo_info());
  jobs.add("b", grpo_info());
  jobs.add("c", grpo_info());
  EXPECT_EQ(jobs.set_pfi("zz", 1, "sweep"), JobRegistry::Outcome::kNotFound);
  AgentState s;
  s.jobs = jobs.snapshot();
  EXPECT_TRUE(to_json(s)["jobs"][0]["pfi"].is_null());
  EXPECT_EQ(jobs.set_pfi("a", 1.2, "registration"), JobRegistry::Outcome::kOk);
  EXPECT_EQ(jobs.set_pfi("b", 2.0, "sweep"), JobRegistry::Outcome::kOk);
  s.jobs = jobs.snapshot();
  EXPECT_TRUE(to_json(s)["jobs"][2]["pfi"].is_null());  // c has none
  const auto j = to_json(s);
  EXPECT_DOUBLE_EQ(j["jobs"][1]["pfi"].get<double>(), 2.0);
  EXPECT_EQ(j["jobs"][1]["pfi_source"], "sweep");
}

}  // namespace
}  // namespace fw::agent
