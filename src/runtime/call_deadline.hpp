#pragma once
// CallDeadline: runs blocking device calls (NVML) on one worker thread and waits for each at
// most a deadline, so a call that hangs on a wedged GPU cannot block the control loop, the
// watchdog or the restore path that called it.
//
// Contract:
// - run(job) hands `job` to the worker and waits up to deadline_s for it. Ok when it returned
//   in time. Unavailable when it did not: the job keeps running on the worker, and every later
//   run() is refused at once (Unavailable, naming how long the hung call has run) until it
//   returns; the caller goes on (its safe setting, a restore file kept for `--restore`).
// - A job MUST NOT refer to the caller's stack or to anything the caller may destroy: it may
//   outlive the run() that started it. Capture shared state by std::shared_ptr and read what
//   the job wrote only after an Ok run().
// - The destructor joins an idle worker and detaches a hung one (the process exits without
//   waiting for a call that may never return).
// Thread-safe: run() may be called from any thread; calls are serialised.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.hpp"

namespace fw {

class CallDeadline {
 public:
  // `what` names the calls in messages (e.g. "NVML").
  CallDeadline(double deadline_s, std::string what);
  ~CallDeadline();
  CallDeadline(const CallDeadline&) = delete;
  CallDeadline& operator=(const CallDeadline&) = delete;

  Status run(std::function<void()> job);
  // True while a call that missed its deadline has not returned.
  bool hung() const;

 private:
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::function<void()> job;  // pending
    uint64_t started = 0, done = 0;
    bool stop = false;
    std::chrono::steady_clock::time_point started_at;
  };
  static void work(std::shared_ptr<Shared> s);

  const double deadline_s_;
  const std::string what_;
  std::mutex run_mu_;  // one run() at a time
  std::shared_ptr<Shared> s_;
  std::thread worker_;
};

}  // namespace fw
