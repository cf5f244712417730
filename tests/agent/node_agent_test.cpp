// NodeAgent on the sim backend with a fake clock (no sleeping): fail-safe fallbacks within
// the tick that sees the cause, commands applied by the loop, restore on shutdown and at the
// next start; and, in child processes on the wall clock, the stop signals' clean exit.
#include "agent/node_agent.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <thread>

#include "runtime/restore_file.hpp"
#include "runtime/stop_signals.hpp"
#include "step_clock.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::agent {
namespace {

using testing::StepClock;

// Holds every cap at 300 W; throws from decision `throw_at` on (0: never).
class TestController : public Controller {
 public:
  explicit TestController(int throw_at) : throw_at_(throw_at) {}
  std::string name() const override { return "test"; }
  double period_s() const override { return 0.1; }
  Command update(const Observation&) override {
    if (throw_at_ > 0 && ++calls_ >= throw_at_) throw std::runtime_error("boom");
    Command c;
    c.power_cap_w = {300};
    return c;
  }
  ActuatorSet claims() const override { return all_actuators(); }

 private:
  int throw_at_;
  int calls_ = 0;
};

class NodeAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fw_node_agent_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    cfg_.plant.backend = std::string("sim:") + FLEXWATT_SOURCE_DIR + "/scenarios/grpo-7b-a100.yaml";
    cfg_.period_s = 0.1;
    cfg_.budget_w = 260;
    cfg_.restore_file = dir_ + "/saved.json";
    cfg_.lock_file = dir_ + "/agent.lock";
    cfg_.server.unix_socket_path = dir_ + "/agent.sock";
    cfg_.server.tcp_port = -1;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::shared_ptr<const Published> state(NodeAgent& a) { return a.hub().latest(); }

  std::string dir_;
  AgentConfig cfg_;
};

TEST_F(NodeAgentTest, ControllerErrorFallsBackInTheSameTickAndRestoresOnShutdown) {
  cfg_.duration_s = 1.0;
  NodeAgent a(cfg_);
  a.set_controller_maker([](const std::string&) -> Result<std::unique_ptr<Controller>> {
    return std::unique_ptr<Controller>(new TestController(4));
  });
  ASSERT_TRUE(a.start().ok());
  EXPECT_TRUE(std::filesystem::exists(cfg_.restore_file));  // saved before the first write
  StepClock clock;
  std::vector<std::pair<int64_t, std::string>> seen;  // (ticks, fallback reason) per tick
  clock.on_sleep = [&] {
    auto p = state(a);
    seen.emplace_back(p->state.loop.ticks_total, p->state.fallback_reason);
  };
  AgentRunSummary sum = a.run(clock, {});
  EXPECT_EQ(sum.ticks, 10);
  EXPECT_EQ(sum.fallbacks, 1);
  // Decisions at ticks 1, 2, 3 succeed; the 4th (tick 4) throws: that tick's state says so.
  int64_t first = -1;
  for (const auto& [t, r] : seen) {
    if (!r.empty() && first < 0) first = t;
  }
  EXPECT_EQ(first, 4);
  auto p = state(a);
  EXPECT_EQ(p->state.fallback_reason, "controller_error");
  EXPECT_EQ(p->state.fallbacks_total.at("controller_error"), 1);
  EXPECT_DOUBLE_EQ(p->state.gpus[0].cap_w, 260);  // the safe share: the budget over 1 GPU
  ASSERT_TRUE(a.shutdown().ok());
  EXPECT_FALSE(std::filesystem::exists(cfg_.restore_file));
}

TEST_F(NodeAgentTest, SilentJobChannelFallsBack) {
  cfg_.duration_s = 0.5;
  cfg_.job_silent_after_s = 0.05;
  NodeAgent a(cfg_);
  a.set_controller_maker([](const std::string&) -> Result<std::unique_ptr<Controller>> {
    return std::unique_ptr<Controller>(new TestController(0));
  });
  ASSERT_TRUE(a.start().ok());
  JobInfo info;
  info.name = "grpo";
  ASSERT_EQ(a.jobs().add("j1", info), JobRegistry::Outcome::kOk);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // the job says nothing
  StepClock clock;
  a.run(clock, {});
  auto p = state(a);
  EXPECT_EQ(p->state.fallback_reason, "job_channel_silent");
  EXPECT_EQ(p->state.fallbacks_total.at("job_channel_silent"), 1);
}

// The sim backend is the hardware's: a simulated job's knobs are out of reach until a job
// registers, so a knob controller falls back to the safe caps (no_actuator) and says so, then
// takes over; the state names the backend and the plant's jobs with the knobs in reach.
TEST_F(NodeAgentTest, SimKnobControllerWithoutAJobFallsBackUntilOneRegisters) {
  cfg_.duration_s = 1.0;  // 10 ticks
  cfg_.controller = "pid:knob=gen_concurrency";
  NodeAgent a(cfg_);
  Status started = a.start();
  ASSERT_TRUE(started.ok()) << started.message();
  StepClock clock;
  std::vector<std::string> reason;  // per tick
  std::vector<size_t> knobs;        // knobs in reach of the plant's first job, per tick
  clock.on_sleep = [&] {
    auto p = state(a);
    reason.push_back(p->state.fallback_reason);
    knobs.push_back(p->state.plant_jobs.empty() ? 99 : p->state.plant_jobs[0].knobs.size());
    if (reason.size() == 4) {
      JobInfo info;
      info.name = "grpo";
      EXPECT_EQ(a.jobs().add("j1", info), JobRegistry::Outcome::kOk);
    }
  };
  a.run(clock, {});
  ASSERT_GE(reason.size(), 8u);
  EXPECT_EQ(reason[1], "no_actuator");
  EXPECT_EQ(knobs[1], 0u);
  EXPECT_EQ(reason.back(), "");
  EXPECT_GE(knobs.back(), 1u);
  auto p = state(a);
  EXPECT_EQ(p->state.fallbacks_total.at("no_actuator"), 1);
  EXPECT_EQ(p->state.backend, cfg_.plant.backend);
  ASSERT_EQ(p->state.plant_jobs.size(), 1u);
  EXPECT_GE(p->state.plant_jobs[0].tokens_total, 0);  // the simulator's reading, not NaN
  ASSERT_TRUE(a.shutdown().ok());
}

TEST_F(NodeAgentTest, BudgetCommandIsAppliedByTheLoop) {
  cfg_.duration_s = 0.3;
  NodeAgent a(cfg_);
  a.set_controller_maker([](const std::string&) -> Result<std::unique_ptr<Controller>> {
    return std::unique_ptr<Controller>(new TestController(0));
  });
  ASSERT_TRUE(a.start().ok());
  AgentCommand cmd;
  cmd.who = "ops";
  BudgetChange b;
  b.budget.schedule = {{0, 222, 10}};
  cmd.what = b;
  auto sub = a.commands().submit(cmd, std::nullopt);
  ASSERT_EQ(sub.outcome, CommandQueue::Outcome::kAccepted);
  StepClock clock;
  a.run(clock, {});
  auto p = state(a);
  EXPECT_EQ(p->state.applied_command_seq, sub.seq);
  EXPECT_DOUBLE_EQ(p->state.budget.watts, 222);
  EXPECT_DOUBLE_EQ(p->state.budget.window_s, 10);
  EXPECT_EQ(p->state.fallback_reason, "");
  EXPECT_DOUBLE_EQ(p->state.gpus[0].cap_w, 300);  // the controller's setting
  // The simulated A100 reads instantaneous power (GA100), as NVML does on that GPU.
  EXPECT_EQ(p->state.gpus[0].power_source, "sim:instant");
}

TEST_F(NodeAgentTest, LeftoverRestoreFileIsRestoredAtStartAndASecondAgentIsRefused) {
  // A previous run died with the restore file in place: it saved 275 W.
  RestoreRecord r{999999, cfg_.plant.backend, 0, {{0, 275}}};
  ASSERT_TRUE(write_restore_file(cfg_.restore_file, r).ok());
  NodeAgent a(cfg_);
  ASSERT_TRUE(a.start().ok());
  auto saved = read_restore_file(cfg_.restore_file);
  ASSERT_TRUE(saved.ok());
  ASSERT_TRUE(saved.value().has_value());
  EXPECT_DOUBLE_EQ(saved.value()->caps.at(0).cap_w, 275);  // restored, then saved anew
  EXPECT_EQ(saved.value()->pid, ::getpid());
  NodeAgent b(cfg_);
  Status s = b.start();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.message();
}

// Issue 44 N1: a start that fails after writing the share's caps (the restore file names a GPU
// this config no longer manages) must keep the restore file: under Restart=on-failure it is the
// only record of the caps found before the first write. It was removed before the new one was
// written.
TEST_F(NodeAgentTest, AFailedStartKeepsTheRestoreFile) {
  RestoreRecord r{999999, cfg_.plant.backend, 0, {{0, 380}, {3, 390}}};  // above the share
  ASSERT_TRUE(write_restore_file(cfg_.restore_file, r).ok());
  NodeAgent a(cfg_);
  EXPECT_FALSE(a.start().ok());
  auto kept = read_restore_file(cfg_.restore_file);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  ASSERT_TRUE(kept.value().has_value()) << "the restore file was removed by a failed start";
  EXPECT_EQ(kept.value()->pid, 999999);
  ASSERT_EQ(kept.value()->caps.size(), 2u);
  EXPECT_DOUBLE_EQ(kept.value()->caps[0].cap_w, 380);
}

// Issue 44 N2: SIGQUIT, SIGTRAP, SIGALRM, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGSYS,
// SIGSTKFLT, SIGPWR (and SIGIO, the real-time signals) killed the agent with the caps it wrote
// in force and the restore file left: only SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 took
// the clean path. Each signal goes to an agent on the sim backend run as `flexwatt agent` runs
// it (StopSignals around start, run and shutdown), in a child process: the child must exit 0
// with the caps restored and the restore file gone. (The fault signals, SIGSEGV and co., are
// FatalRestore's: a restore process takes over; tests/cli/agent_safety.sh.)
class AgentStopSignal : public NodeAgentTest, public ::testing::WithParamInterface<int> {};

// The child's whole life: exits 0 when the signal stopped the loop and the caps went back.
[[noreturn]] void run_until_signal(const AgentConfig& cfg, const std::string& dir, int sig) {
  rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // the old code dumped core on SIGQUIT, SIGTRAP, ...
  // As a shell starts a program: the harness running this may have ignored some (SIGPROF).
  std::signal(sig, SIG_DFL);
  int rc = 1;
  {
    StopSignals signals;
    NodeAgent a(cfg);
    a.set_controller_maker([](const std::string&) -> Result<std::unique_ptr<Controller>> {
      return std::unique_ptr<Controller>(new TestController(0));
    });
    Status st = a.start();
    if (!st.ok()) {
      std::fprintf(stderr, "start failed: %s\n", st.message().c_str());
      std::_Exit(2);
    }
    std::thread sender([sig] {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      ::kill(::getpid(), sig);  // to the process, as kill(1) sends it
    });
    SteadyClock clock;
    AgentRunSummary sum = a.run(clock, &StopSignals::requested);
    sender.join();
    Status restored = a.shutdown();
    const bool file_gone = !std::filesystem::exists(cfg.restore_file);
    std::fprintf(stderr, "ticks %lld, stopped by signal %d, restored %d, restore file gone %d\n",
                 static_cast<long long>(sum.ticks), StopSignals::signal_number(), restored.ok(),
                 file_gone);
    if (StopSignals::signal_number() == sig && restored.ok() && file_gone && sum.ticks >= 1) {
      std::fprintf(stderr, "clean stop on signal %d\n", sig);
      rc = 0;
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::_Exit(rc);
}

TEST_P(AgentStopSignal, RestoresTheCapsAndRemovesTheRestoreFile) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the child starts from a fresh exec
  const int sig = GetParam();
  cfg_.duration_s = 3;  // long past the signal; bounds the run where the signal is lost
  EXPECT_EXIT(run_until_signal(cfg_, dir_, sig), ::testing::ExitedWithCode(0),
              "clean stop on signal")
      << "signal " << sig << " (" << strsignal(sig) << ")";
}

INSTANTIATE_TEST_SUITE_P(Signals, AgentStopSignal,
                         ::testing::Values(SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT,
                                           SIGTRAP, SIGALRM, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF,
                                           SIGSYS, SIGSTKFLT, SIGPWR, SIGIO, SIGRTMIN, SIGRTMIN + 5,
                                           SIGRTMAX),
                         [](const ::testing::TestParamInfo<int>& p) {
                           std::string name = sigabbrev_np(p.param) ? sigabbrev_np(p.param) : "";
                           if (name.empty() || p.param >= SIGRTMIN)
                             name = "RT" + std::to_string(p.param);
                           return "SIG" + name;
                         });

// SIGPIPE (a write to a closed pipe or socket) neither ends the agent nor stops it: the write
// fails with EPIPE and the loop goes on; a later SIGTERM still takes the clean path.
TEST_F(NodeAgentTest, SigpipeIsIgnoredWhileTheAgentRuns) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  cfg_.duration_s = 3;  // long past the SIGTERM; bounds the run where it is lost
  auto child = [](const AgentConfig& cfg, const std::string& dir) {
    std::signal(SIGPIPE, SIG_DFL);
    int rc = 1;
    {
      StopSignals signals;
      NodeAgent a(cfg);
      a.set_controller_maker([](const std::string&) -> Result<std::unique_ptr<Controller>> {
        return std::unique_ptr<Controller>(new TestController(0));
      });
      if (!a.start().ok()) std::_Exit(2);
      std::thread sender([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        ::kill(::getpid(), SIGPIPE);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ::kill(::getpid(), SIGTERM);
      });
      SteadyClock clock;
      auto t0 = std::chrono::steady_clock::now();
      a.run(clock, &StopSignals::requested);
      const double ran_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      sender.join();
      const bool restored = a.shutdown().ok();
      if (restored && StopSignals::signal_number() == SIGTERM && ran_s >= 0.35 &&
          !std::filesystem::exists(cfg.restore_file)) {
        std::fprintf(stderr, "ran through SIGPIPE, stopped by SIGTERM\n");
        rc = 0;
      }
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::_Exit(rc);
  };
  EXPECT_EXIT(child(cfg_, dir_), ::testing::ExitedWithCode(0), "ran through SIGPIPE");
}

// Sets nothing: the caps read are the ones the agent put in force at start.
class HandsOffController : public Controller {
 public:
  std::string name() const override { return "hands-off"; }
  double period_s() const override { return 0.1; }
  Command update(const Observation&) override { return Command{}; }
  ActuatorSet claims() const override { return all_actuators(); }
};

// A restart after a crash puts the saved caps back only when the node's share allows them: a
// share of 260 W on one GPU and a saved 380 W start at the share's cap (260 W), and the saved
// 380 W is still what a clean exit restores. Before, the restart wrote 380 W and the node drew
// above its share until the controller's first decision.
TEST_F(NodeAgentTest, RestartRestoresTheSavedCapsOnlyWhenTheShareAllowsThem) {
  cfg_.duration_s = 0.1;  // one tick: its reading shows the cap in force after start()
  // A crashed run saved `saved_w`; returns the cap in force after the restart's start().
  auto restart = [&](double saved_w) {
    RestoreRecord r{999999, cfg_.plant.backend, 0, {{0, saved_w}}};
    EXPECT_TRUE(write_restore_file(cfg_.restore_file, r).ok());
    NodeAgent a(cfg_);
    a.set_controller_maker([](const std::string&) -> Result<std::unique_ptr<Controller>> {
      return std::unique_ptr<Controller>(new HandsOffController());
    });
    EXPECT_TRUE(a.start().ok());
    auto saved = read_restore_file(cfg_.restore_file);
    EXPECT_TRUE(saved.ok() && saved.value().has_value());
    if (saved.ok() && saved.value()) {
      EXPECT_DOUBLE_EQ(saved.value()->caps.at(0).cap_w, saved_w);  // what a clean exit restores
    }
    StepClock clock;
    a.run(clock, {});
    const double cap_w = state(a)->state.gpus[0].cap_w;
    EXPECT_TRUE(a.shutdown().ok());
    return cap_w;
  };
  EXPECT_DOUBLE_EQ(restart(380), 260);  // above the 260 W share: the share's cap
  EXPECT_DOUBLE_EQ(restart(250), 250);  // within it: the saved cap, as before
}

// Sleeps to the deadline; at the 5th sleep time jumps `jump_s` further (a stalled machine).
class JumpClock : public Clock {
 public:
  explicit JumpClock(double jump_s) : jump_s_(jump_s) {}
  double now_s() override { return now_; }
  void sleep_until_s(double t_s) override {
    if (t_s > now_) now_ = t_s;
    if (++sleeps_ == 5) now_ += jump_s_;
  }

 private:
  double now_ = 0, jump_s_;
  int sleeps_ = 0;
};

TEST_F(NodeAgentTest, SimCatchesUpMissedDeadlinesSoTheEpisodeIsTheSame) {
  cfg_.duration_s = 1.0;  // 10 ticks
  cfg_.controller = "pid:knob=gen_concurrency";
  cfg_.plant.sim_knobs_without_job = true;  // eval's world: the knob controller acts from tick 0
  auto run = [&](double jump_s, AgentRunSummary& sum) {
    NodeAgent a(cfg_);
    EXPECT_TRUE(a.start().ok());
    JumpClock clock(jump_s);
    sum = a.run(clock, {});
    auto s = state(a);
    EXPECT_TRUE(a.shutdown().ok());
    return s;
  };
  AgentRunSummary steady, stalled;
  auto a = run(0, steady);
  auto b = run(0.35, stalled);  // one tick taken 0.35 s late: the next deadlines pass
  EXPECT_EQ(steady.missed_ticks, 0);
  EXPECT_GE(stalled.missed_ticks, 2);
  EXPECT_EQ(stalled.caught_up_ticks, stalled.missed_ticks);
  EXPECT_EQ(stalled.ticks, steady.ticks);  // every tick taken, late or not
  EXPECT_GE(stalled.late_ticks, 1);
  EXPECT_DOUBLE_EQ(b->state.loop.plant_time_s, a->state.loop.plant_time_s);
  EXPECT_DOUBLE_EQ(b->state.node_power_w, a->state.node_power_w);  // the same simulated episode
  EXPECT_DOUBLE_EQ(b->state.gpus[0].energy_j, a->state.gpus[0].energy_j);
}

TEST_F(NodeAgentTest, TraceRotatesAndKeepsTheLastSegments) {
  cfg_.duration_s = 3.5;  // 35 ticks
  cfg_.trace_dir = dir_ + "/trace";
  cfg_.trace_rotate_ticks = 10;
  cfg_.trace_keep = 2;
  NodeAgent a(cfg_);
  ASSERT_TRUE(a.start().ok());
  StepClock clock;
  a.run(clock, {});
  ASSERT_TRUE(a.shutdown().ok());
  namespace fs = std::filesystem;
  EXPECT_FALSE(fs::exists(cfg_.trace_dir + "/seg-000001"));
  EXPECT_FALSE(fs::exists(cfg_.trace_dir + "/seg-000002"));
  EXPECT_TRUE(fs::exists(cfg_.trace_dir + "/seg-000003/gpus.csv"));
  EXPECT_TRUE(fs::exists(cfg_.trace_dir + "/seg-000003/meta.json"));
  EXPECT_TRUE(fs::exists(cfg_.trace_dir + "/seg-000004/meta.json"));  // closed at shutdown
  int rows = -1;  // header excluded: one row per GPU per tick of the segment
  std::ifstream in(cfg_.trace_dir + "/seg-000003/gpus.csv");
  for (std::string l; std::getline(in, l);) ++rows;
  EXPECT_EQ(rows, 10);
}

// A restart writes new segments after the last one it finds: the previous run's trace stays.
// Before, numbering started at seg-000001 again and overwrote it.
TEST_F(NodeAgentTest, RestartContinuesTheTraceSegmentsInsteadOfOverwritingThem) {
  cfg_.trace_dir = dir_ + "/trace";
  cfg_.trace_rotate_ticks = 1000;
  auto rows = [&](const std::string& seg) {
    int n = -1;  // header excluded
    std::ifstream in(cfg_.trace_dir + "/" + seg + "/gpus.csv");
    for (std::string l; std::getline(in, l);) ++n;
    return n;
  };
  for (double duration_s : {1.2, 0.4}) {
    cfg_.duration_s = duration_s;
    NodeAgent a(cfg_);
    ASSERT_TRUE(a.start().ok());
    StepClock clock;
    a.run(clock, {});
    ASSERT_TRUE(a.shutdown().ok());
  }
  EXPECT_EQ(rows("seg-000001"), 12);  // the first run's 12 ticks, kept
  EXPECT_EQ(rows("seg-000002"), 4);   // the second run's
}

}  // namespace
}  // namespace fw::agent
