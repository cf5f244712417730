#include "agent/commands.hpp"

#include <utility>

namespace fw::agent {

CommandQueue::Submitted CommandQueue::submit(AgentCommand cmd,
                                             std::optional<uint64_t> expected_version) {
  std::lock_guard<std::mutex> lock(mu_);
  if (expected_version && *expected_version != version_) {
    return {Outcome::kConflict, version_};
  }
  if (q_.size() >= max_pending_) return {Outcome::kFull, version_};
  cmd.seq = ++version_;
  q_.push_back(std::move(cmd));
  return {Outcome::kAccepted, version_};
}

std::vector<AgentCommand> CommandQueue::drain() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<AgentCommand> out(std::make_move_iterator(q_.begin()),
                                std::make_move_iterator(q_.end()));
  q_.clear();
  return out;
}

uint64_t CommandQueue::version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

size_t CommandQueue::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return q_.size();
}

}  // namespace fw::agent
