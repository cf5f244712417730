// TickLoop on an injected clock: no test sleeps.

#include "runtime/tick_loop.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/fatal_restore.hpp"
#include "runtime/stop_signals.hpp"

namespace fw {
namespace {

// Time moves only when the loop sleeps or the test says work took time.
class FakeClock : public Clock {
 public:
  explicit FakeClock(double start_s = 100.0) : now_(start_s) {}
  double now_s() override { return now_; }
  void sleep_until_s(double t_s) override {
    sleeps.push_back(t_s);
    if (t_s > now_) now_ = t_s;
  }
  void advance(double s) { now_ += s; }
  std::vector<double> sleeps;

 private:
  double now_;
};

TEST(TickLoop, OnTimeTicksLandOnTheirDeadlines) {
  FakeClock clock(100.0);
  TickLoop loop(clock, 0.1, 10);
  std::vector<double> at;
  while (loop.wait_next()) {
    at.push_back(loop.tick_now_s());
    clock.advance(0.01);  // the work of one tick
    loop.complete();
  }
  ASSERT_EQ(at.size(), 10u);
  for (size_t k = 0; k < at.size(); ++k) EXPECT_NEAR(at[k], 0.1 * static_cast<double>(k), 1e-12);
  EXPECT_EQ(loop.taken(), 10);
  EXPECT_EQ(loop.missed(), 0);
  EXPECT_EQ(loop.planned(), 10);
  EXPECT_NEAR(loop.max_lateness_s(), 0, 1e-12);
  EXPECT_FALSE(loop.stopped());
}

TEST(TickLoop, DeadlinesDoNotDriftWithWork) {
  FakeClock clock(0.0);
  TickLoop loop(clock, 1.0, 5);
  std::vector<double> at;
  while (loop.wait_next()) {
    at.push_back(loop.tick_now_s());
    clock.advance(0.7);
    loop.complete();
  }
  EXPECT_EQ(at, (std::vector<double>{0, 1, 2, 3, 4}));
}

TEST(TickLoop, SlowTickSkipsAndCountsMissedDeadlines) {
  FakeClock clock(0.0);
  TickLoop loop(clock, 0.1, 10);
  int n = 0;
  while (loop.wait_next()) {
    if (n++ == 2) clock.advance(0.35);  // tick 2 at 0.2 ends at 0.55: 0.3, 0.4, 0.5 missed
    loop.complete();
  }
  EXPECT_EQ(loop.missed(), 3);
  EXPECT_EQ(loop.taken(), 7);
  EXPECT_EQ(loop.taken() + loop.missed(), loop.planned());
}

TEST(TickLoop, LatenessIsTheWorstWakeUpDelay) {
  // A clock that wakes 30 ms late on one sleep.
  class LateClock : public FakeClock {
   public:
    void sleep_until_s(double t_s) override {
      FakeClock::sleep_until_s(t_s);
      if (++calls == 2) advance(0.03);
    }
    int calls = 0;
  } clock;
  TickLoop loop(clock, 0.1, 4);
  while (loop.wait_next()) loop.complete();
  EXPECT_NEAR(loop.max_lateness_s(), 0.03, 1e-9);
  EXPECT_EQ(loop.missed(), 0);
}

TEST(TickLoop, LongIntervalSleepsInSlices) {
  FakeClock clock(0.0);
  TickLoop loop(clock, 1.0, 2, {}, 0.25);
  while (loop.wait_next()) loop.complete();
  EXPECT_EQ(clock.sleeps, (std::vector<double>{0.25, 0.5, 0.75, 1.0}));
}

TEST(TickLoop, StopRequestEndsTheWaitAtTheNextSlice) {
  FakeClock clock(0.0);
  // A stop arrives at t = 7 s, while the loop waits for tick 1 (due at 10 s).
  TickLoop loop(
      clock, 10.0, 100, [&] { return clock.now_s() >= 7.0; }, 0.5);
  ASSERT_TRUE(loop.wait_next());
  loop.complete();
  EXPECT_FALSE(loop.wait_next());
  EXPECT_TRUE(loop.stopped());
  EXPECT_EQ(loop.taken(), 1);
  EXPECT_EQ(clock.now_s(), 7.0);  // seen at the first slice boundary after it
}

TEST(TickLoop, StopSignalsFlag) {
  StopSignals s;
  EXPECT_FALSE(StopSignals::requested());
  FakeClock clock(0.0);
  TickLoop loop(clock, 0.1, 10, &StopSignals::requested);
  ASSERT_TRUE(loop.wait_next());
  loop.complete();
  std::raise(SIGTERM);  // handled: sets the flag, does not end the process
  EXPECT_TRUE(StopSignals::requested());
  EXPECT_FALSE(loop.wait_next());
  EXPECT_TRUE(loop.stopped());
}

// Issue 44 N2: while a StopSignals lives, no signal that can be caught is left with a default
// action that ends the process. Every one takes the stop path (its handler set), except the
// fault signals, which are FatalRestore's (a restore process takes over), and SIGPIPE, which
// is ignored (a closed pipe or socket is EPIPE for the writer, not a reason to stop). Signals
// whose default is to do nothing (SIGCHLD, SIGCONT, SIGURG, SIGWINCH) or to stop the process
// (SIGTSTP, SIGTTIN, SIGTTOU) are left alone. Before, SIGQUIT, SIGTRAP, SIGALRM, SIGXCPU, ...
// and the real-time signals kept their default action: death with the caps left low.
TEST(StopSignals, EveryTerminatingSignalIsHandled) {
  const std::vector<int> fault = FatalRestore::signals();
  const std::vector<int> harmless = {SIGCHLD, SIGCONT, SIGURG,  SIGWINCH, SIGTSTP,
                                     SIGTTIN, SIGTTOU, SIGKILL, SIGSTOP};
  auto in = [](const std::vector<int>& v, int s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  StopSignals s;
  std::string unhandled, wrong;
  for (int sig = 1; sig <= SIGRTMAX; ++sig) {
    if (sig > SIGSYS && sig < SIGRTMIN) continue;  // glibc's own (NPTL), not the program's
    if (in(fault, sig) || in(harmless, sig)) continue;
    struct sigaction now {};
    ASSERT_EQ(::sigaction(sig, nullptr, &now), 0) << sig;
    const std::string name = sig >= SIGRTMIN ? "RT" + std::to_string(sig) : sigabbrev_np(sig);
    if (sig == SIGPIPE) {
      if (now.sa_handler != SIG_IGN) wrong += " PIPE";
    } else if (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN) {
      unhandled += " " + name;
    }
  }
  EXPECT_EQ(unhandled, "") << "signals that still end the process without the stop path";
  EXPECT_EQ(wrong, "") << "SIGPIPE is not ignored";
}

// The dispositions found are put back when the object goes.
TEST(StopSignals, PutsThePreviousDispositionsBack) {
  struct sigaction before {};
  ::sigaction(SIGQUIT, nullptr, &before);
  ::signal(SIGALRM, SIG_IGN);
  { StopSignals s; }
  struct sigaction after {};
  ::sigaction(SIGQUIT, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  ::sigaction(SIGALRM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, SIG_IGN);
  ::signal(SIGALRM, SIG_DFL);
}

TEST(TickLoop, ZeroTicksNeverWaits) {
  FakeClock clock(0.0);
  TickLoop loop(clock, 0.1, 0);
  EXPECT_FALSE(loop.wait_next());
  EXPECT_FALSE(loop.stopped());
  EXPECT_TRUE(clock.sleeps.empty());
}

}  // namespace
}  // namespace fw
