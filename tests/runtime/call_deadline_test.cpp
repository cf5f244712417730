// CallDeadline: a call that hangs makes run() give up at its deadline and refuses later calls
// until it returns; the caller is never blocked past the deadline.

#include "runtime/call_deadline.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>

namespace fw {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

TEST(CallDeadline, ACallInTimeRunsAndReturnsOk) {
  CallDeadline d(1.0, "NVML");
  auto n = std::make_shared<std::atomic<int>>(0);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(d.run([n] { ++*n; }).ok());
  EXPECT_EQ(n->load(), 100);
  EXPECT_FALSE(d.hung());
}

TEST(CallDeadline, AHungCallGivesUpAtTheDeadlineAndRefusesLaterCallsUntilItReturns) {
  CallDeadline d(0.2, "NVML");
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> gate = release->get_future().share();
  auto t0 = Clock::now();
  Status st = d.run([gate] { gate.wait(); });
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("did not return within 0.2 s"), std::string::npos) << st.message();
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_TRUE(d.hung());
  auto ran = std::make_shared<std::atomic<bool>>(false);
  t0 = Clock::now();
  st = d.run([ran] { *ran = true; });
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("has not returned"), std::string::npos) << st.message();
  EXPECT_LT(seconds_since(t0), 0.1);  // refused at once, not after another deadline
  EXPECT_FALSE(ran->load());
  release->set_value();
  for (int i = 0; i < 200 && d.hung(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(d.hung());
  EXPECT_TRUE(d.run([ran] { *ran = true; }).ok());
  EXPECT_TRUE(ran->load());
}

TEST(CallDeadline, DestroyedWhileACallHangsDoesNotWait) {
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> gate = release->get_future().share();
  auto finished = std::make_shared<std::atomic<bool>>(false);
  const auto t0 = Clock::now();
  {
    CallDeadline d(0.05, "NVML");
    EXPECT_FALSE(d.run([gate, finished] {
                    gate.wait();
                    *finished = true;
                  }).ok());
  }
  EXPECT_LT(seconds_since(t0), 1.0);
  release->set_value();  // the detached worker finishes on state it owns
  for (int i = 0; i < 200 && !finished->load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(finished->load());
}

}  // namespace
}  // namespace fw
