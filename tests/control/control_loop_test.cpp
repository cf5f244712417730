#include "control/control_loop.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "controllers/pid_controller.hpp"
#include "controllers/uncontrolled_controller.hpp"
#include "test_plant.hpp"

namespace fw {
namespace {

using testing::FirstOrderPlant;
using testing::one_budget;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string temp_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("fw_control_test_" + name);
  std::filesystem::remove_all(d);
  return d.string();
}

// Runs pid on a seeded plant, recording the trace; returns the result.
EpisodeResult run_recorded(uint64_t seed, const std::string& dir) {
  FirstOrderPlant plant(seed);
  const BudgetSchedule budget = one_budget(300);
  PidConfig pc;
  pc.actuator.kind = Actuator::Kind::kKnob;
  PidController pid(pc);
  LoopConfig lc;
  lc.duration_s = 120;
  ControlLoop loop(plant, budget, lc);
  loop.add_controller(&pid);
  auto rec = Recorder::create(dir);
  EXPECT_TRUE(rec.ok());
  loop.set_recorder(rec->get());
  EXPECT_TRUE(loop.run().ok());
  EXPECT_TRUE((*rec)->close({{"seed", seed}}).ok());
  return loop.result();
}

TEST(ControlLoop, BitForBitDeterministicForASeed) {
  const std::string a = temp_dir("a"), b = temp_dir("b"), c = temp_dir("c");
  const EpisodeResult ra = run_recorded(7, a);
  const EpisodeResult rb = run_recorded(7, b);
  const EpisodeResult rc = run_recorded(8, c);
  EXPECT_EQ(slurp(a + "/gpus.csv"), slurp(b + "/gpus.csv"));
  EXPECT_EQ(slurp(a + "/jobs.csv"), slurp(b + "/jobs.csv"));
  EXPECT_FALSE(slurp(a + "/gpus.csv").empty());
  EXPECT_EQ(ra.tokens, rb.tokens);  // exact, not near
  EXPECT_EQ(ra.energy_j, rb.energy_j);
  // Bit for bit, NaN (a window longer than the run: no verdict) included.
  ASSERT_EQ(ra.violation_rate.size(), rb.violation_rate.size());
  EXPECT_EQ(std::memcmp(ra.violation_rate.data(), rb.violation_rate.data(),
                        ra.violation_rate.size() * sizeof(double)),
            0);
  EXPECT_NE(slurp(a + "/gpus.csv"), slurp(c + "/gpus.csv"));  // the seed matters
  (void)rc;
}

class CountingController : public Controller {
 public:
  explicit CountingController(double period_s) : period_s_(period_s) {}
  std::string name() const override { return "count"; }
  double period_s() const override { return period_s_; }
  ActuatorSet claims() const override { return {}; }
  Command update(const Observation& obs) override {
    times.push_back(obs.time_s);
    return {};
  }
  std::vector<double> times;

 private:
  double period_s_;
};

TEST(ControlLoop, EachControllerAtItsOwnPeriod) {
  FirstOrderPlant plant(1);
  const BudgetSchedule budget = one_budget(300);
  CountingController fast(0.5), slow(10), odd(0.7);
  LoopConfig lc;
  lc.duration_s = 30;
  ControlLoop loop(plant, budget, lc);
  loop.add_controller(&fast);
  loop.add_controller(&slow);
  loop.add_controller(&odd);
  ASSERT_TRUE(loop.run().ok());
  EXPECT_EQ(fast.times.size(), 60u);
  EXPECT_EQ(slow.times, (std::vector<double>{0, 10, 20}));
  ASSERT_GE(odd.times.size(), 2u);
  EXPECT_DOUBLE_EQ(odd.times[1], 1.0);  // 0.7 s rounded up to whole ticks
}

// Costs a known amount at two decisions: busy CPU at t = 5 s, a sleep (wall, no CPU) at 10 s.
class CostlyController : public Controller {
 public:
  std::string name() const override { return "costly"; }
  double period_s() const override { return 0.5; }
  ActuatorSet claims() const override { return {}; }
  Command update(const Observation& obs) override {
    if (std::abs(obs.time_s - 5.0) < 1e-9) {
      // 4 ms of this thread's CPU (however long a loaded machine takes to give it).
      const double t0 = thread_cpu_s();
      volatile double x = 0;
      while (thread_cpu_s() - t0 < 0.004) x = x + 1;
    } else if (std::abs(obs.time_s - 10.0) < 1e-9) {
      std::this_thread::sleep_for(std::chrono::milliseconds(8));
    }
    return {};
  }
};

// The decision cost keeps the worst call and the tail, not only the mean: one 8 ms wait and
// one 4 ms busy call among 120 cheap ones move the mean by ~0.1 ms but the max to >= 8 ms
// (wall) and >= 4 ms (thread CPU: the sleep costs no CPU); p99 of 120 calls is the second
// worst call (>= 4 ms wall); the median stays far below 1 ms.
TEST(ControlLoop, DecisionCostKeepsMaxAndTail) {
  FirstOrderPlant plant(1);
  const BudgetSchedule budget = one_budget(300);
  CostlyController c;
  LoopConfig lc;
  lc.duration_s = 60;
  ControlLoop loop(plant, budget, lc);
  loop.add_controller(&c);
  ASSERT_TRUE(loop.run().ok());
  const DecisionCost& d = loop.decision_cost();
  EXPECT_EQ(d.calls, 120);
  EXPECT_GE(d.wall_max_s, 0.008);
  EXPECT_GE(d.cpu_max_s, 0.004);
  EXPECT_LT(d.cpu_max_s, 0.008);  // the sleep is not CPU
  EXPECT_GE(d.wall_quantile_s(0.99), 0.004);
  EXPECT_LE(d.wall_quantile_s(0.99), d.wall_max_s);
  EXPECT_LT(d.wall_quantile_s(0.5), 0.001);
  EXPECT_NEAR(d.wall_mean_s(), loop.decision_wall_s() / 120.0, 1e-12);
  // The episode's result carries it.
  EXPECT_EQ(loop.result().decision_cost.calls, 0);  // set by the episode's runner, not finish()
}

TEST(DecisionCost, QuantilesWithinOneBinAndMerge) {
  DecisionCost a, b;
  for (int i = 1; i <= 100; ++i) a.add(i * 1e-6, i * 0.5e-6);  // 1..100 us
  b.add(0.02, 0.001);
  EXPECT_DOUBLE_EQ(a.wall_max_s, 100e-6);
  const double p90 = a.wall_quantile_s(0.9);  // the 90th call: 90 us
  EXPECT_GE(p90, 90e-6);
  EXPECT_LE(p90, 90e-6 * DecisionCost::kBinRatio);
  EXPECT_DOUBLE_EQ(a.wall_quantile_s(1.0), 100e-6);
  a.merge(b);
  EXPECT_EQ(a.calls, 101);
  EXPECT_DOUBLE_EQ(a.wall_max_s, 0.02);
  EXPECT_DOUBLE_EQ(a.cpu_max_s, 0.001);
  EXPECT_DOUBLE_EQ(a.wall_quantile_s(1.0), 0.02);
  EXPECT_LE(a.wall_quantile_s(0.99), 100e-6 * DecisionCost::kBinRatio);
  EXPECT_EQ(DecisionCost().wall_quantile_s(0.99), 0.0);
}

class ThrowingController : public Controller {
 public:
  std::string name() const override { return "throws"; }
  double period_s() const override { return 1; }
  ActuatorSet claims() const override { return {}; }
  Command update(const Observation&) override { throw std::runtime_error("boom"); }
};

TEST(ControlLoop, NeverThrows) {
  FirstOrderPlant plant(1);
  const BudgetSchedule budget = one_budget(300);
  ThrowingController t;
  ControlLoop loop(plant, budget);
  loop.add_controller(&t);
  Status s = Status::Ok();
  EXPECT_NO_THROW(s = loop.run());
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("boom"), std::string::npos);
}

// The phases a wall-clock driver runs (the node agent) are step(): the same trace, bit for bit.
TEST(ControlLoop, PhasesAreStep) {
  auto run = [](bool phased, const std::string& dir) -> std::string {
    FirstOrderPlant plant(7);
    const BudgetSchedule budget = one_budget(300);
    PidConfig pc;
    pc.actuator.kind = Actuator::Kind::kKnob;
    PidController pid(pc);
    LoopConfig lc;
    lc.duration_s = 60;
    lc.open_ended = phased;
    ControlLoop loop(plant, budget, lc);
    loop.add_controller(&pid);
    auto rec = Recorder::create(dir);
    EXPECT_TRUE(rec.ok());
    loop.set_recorder(rec->get());
    EXPECT_TRUE(loop.start().ok());
    for (int k = 0; k < 120; ++k) {
      if (!phased) {
        EXPECT_TRUE(loop.step().ok());
        continue;
      }
      EXPECT_FALSE(loop.done());  // open-ended: no episode length
      EXPECT_TRUE(loop.sense().ok());
      Result<bool> d = loop.decide();
      EXPECT_TRUE(d.ok());
      if (d.ok() && d.value()) {
        EXPECT_TRUE(loop.act(loop.merged()).ok());
      }
      loop.advance();
    }
    EXPECT_TRUE((*rec)->close({}).ok());
    return slurp(dir + "/gpus.csv") + slurp(dir + "/jobs.csv");
  };
  const std::string a = run(false, temp_dir("step")), b = run(true, temp_dir("phased"));
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

// decide(): a controller that throws is an Internal status (not an exception) and is due
// again at the next tick; restart() makes every controller due at once, at the current tick.
TEST(ControlLoop, DecideReportsAThrowAndRestartMakesControllersDue) {
  FirstOrderPlant plant(1);
  const BudgetSchedule budget = one_budget(300);
  ThrowingController t;
  CountingController slow(10);
  LoopConfig lc;
  lc.open_ended = true;
  ControlLoop throwing(plant, budget, lc);
  throwing.add_controller(&t);
  ASSERT_TRUE(throwing.start().ok());
  for (int k = 0; k < 2; ++k) {
    ASSERT_TRUE(throwing.sense().ok());
    Result<bool> d = throwing.decide();
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), StatusCode::kInternal);
    EXPECT_NE(d.status().message().find("boom"), std::string::npos);
    throwing.advance();
  }
  FirstOrderPlant p2(1);
  ControlLoop loop(p2, budget, lc);
  loop.add_controller(&slow);
  ASSERT_TRUE(loop.start().ok());
  for (int k = 0; k < 6; ++k) {  // t = 0 .. 2.5 s: decides at 0 only (every 10 s)
    ASSERT_TRUE(loop.sense().ok());
    ASSERT_TRUE(loop.decide().ok());
    loop.advance();
  }
  ASSERT_TRUE(loop.restart().ok());  // at t = 3 s
  ASSERT_TRUE(loop.sense().ok());
  Result<bool> d = loop.decide();
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d.value());
  EXPECT_EQ(slow.times, (std::vector<double>{0, 3}));
}

TEST(ControlLoop, MetricsCountTokensEnergyAndViolations) {
  FirstOrderPlant plant(1, 1, /*noise_w=*/0);
  const BudgetSchedule budget = one_budget(300);
  UncontrolledController u;  // demand 460 W → capped at 400 W: over budget all the time
  LoopConfig lc;
  lc.duration_s = 600;
  ControlLoop loop(plant, budget, lc);
  loop.add_controller(&u);
  ASSERT_TRUE(loop.run().ok());
  const EpisodeResult r = loop.result();
  EXPECT_NEAR(r.duration_s, 600, 1e-9);
  ASSERT_EQ(r.violation_rate.size(), 3u);
  EXPECT_GT(r.violation_rate[0], 0.98);
  EXPECT_DOUBLE_EQ(r.violation_rate[1], 1.0);
  EXPECT_DOUBLE_EQ(r.violation_rate[2], 1.0);
  // ~400 W for 600 s (minus the 1 s ramp from 60 W): energy from the counter.
  EXPECT_NEAR(r.energy_j, 400 * 599.5, 400 * 3);
  // 10·16^0.8·sqrt(400/460) tokens/s.
  EXPECT_NEAR(r.tokens / 599.5, 10 * std::pow(16, 0.8) * std::sqrt(400.0 / 460), 1.0);
  EXPECT_NEAR(r.tokens_per_mwh, r.tokens / (r.energy_j / 3.6e9), 1e-6 * r.tokens_per_mwh);
}

}  // namespace
}  // namespace fw
