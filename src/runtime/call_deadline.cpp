#include "runtime/call_deadline.hpp"

#include <utility>

#include "core/format.hpp"

namespace fw {

CallDeadline::CallDeadline(double deadline_s, std::string what)
    : deadline_s_(deadline_s), what_(std::move(what)), s_(std::make_shared<Shared>()) {
  worker_ = std::thread(&CallDeadline::work, s_);
}

CallDeadline::~CallDeadline() {
  bool hung_now = false;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->stop = true;
    hung_now = s_->done != s_->started;
  }
  s_->cv.notify_all();
  if (hung_now) {
    worker_.detach();  // it holds s_ (shared) and whatever its job captured
  } else {
    worker_.join();
  }
}

void CallDeadline::work(std::shared_ptr<Shared> s) {
  std::unique_lock<std::mutex> lock(s->mu);
  for (;;) {
    s->cv.wait(lock, [&] { return s->stop || s->job; });
    if (!s->job) return;  // stopped
    std::function<void()> job = std::move(s->job);
    s->job = nullptr;
    lock.unlock();
    job();
    lock.lock();
    ++s->done;
    s->cv.notify_all();
  }
}

bool CallDeadline::hung() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->done != s_->started;
}

Status CallDeadline::run(std::function<void()> job) {
  std::lock_guard<std::mutex> one(run_mu_);
  std::unique_lock<std::mutex> lock(s_->mu);
  if (s_->done != s_->started) {
    const double age_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - s_->started_at).count();
    return Status::Unavailable(
        strprintf("an earlier %s call has not returned after %.1f s "
                  "(a wedged GPU?): no %s call is made until it does",
                  what_.c_str(), age_s, what_.c_str()));
  }
  s_->job = std::move(job);
  const uint64_t mine = ++s_->started;
  s_->started_at = std::chrono::steady_clock::now();
  s_->cv.notify_all();
  const bool in_time = s_->cv.wait_for(lock, std::chrono::duration<double>(deadline_s_),
                                       [&] { return s_->done >= mine; });
  if (in_time) return Status::Ok();
  return Status::Unavailable(strprintf("%s call did not return within %.1f s (a wedged GPU?)",
                                       what_.c_str(), deadline_s_));
}

}  // namespace fw
