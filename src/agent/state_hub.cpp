#include "agent/state_hub.hpp"

#include <utility>

namespace fw::agent {

StateHub::StateHub() {
  auto p = std::make_shared<Published>();
  p->json = to_json(p->state).dump();
  latest_ = std::move(p);
}

uint64_t StateHub::publish(AgentState s) {
  auto p = std::make_shared<Published>();
  uint64_t v;
  {
    std::lock_guard<std::mutex> lock(mu_);
    v = latest_->state.version + 1;
  }
  // One publisher by contract, so the version cannot be taken by another thread meanwhile;
  // serialising outside the lock keeps readers unblocked.
  s.version = v;
  p->state = std::move(s);
  p->json = to_json(p->state).dump();
  history_.add(p->state);
  {
    std::lock_guard<std::mutex> lock(mu_);
    latest_ = std::move(p);
  }
  cv_.notify_all();
  return v;
}

std::shared_ptr<const Published> StateHub::latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

std::shared_ptr<const Published> StateHub::wait_newer(uint64_t version, Clock::time_point deadline,
                                                      const std::function<bool()>& cancel) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, deadline,
                 [&] { return latest_->state.version > version || (cancel && cancel()); });
  return latest_;
}

void StateHub::wake_all() const {
  { std::lock_guard<std::mutex> lock(mu_); }
  cv_.notify_all();
}

}  // namespace fw::agent
