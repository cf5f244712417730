#pragma once
// Commands the HTTP API asks of the agent's loop: a new budget (schedule) or a new
// controller. The API validates and submits; the loop drains the queue at its next tick,
// applies what it can, and reports the last applied sequence number in
// AgentState::applied_command_seq.
//
// Versioning: every accepted command gets seq = previous + 1 (the "config version"). A
// writer may pass the version it last saw; if another write was accepted since, the
// submission is refused (HTTP 409), so two operators cannot silently overwrite each other.
//
// Thread-safety: every member is safe to call from any thread.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "agent/agent_state.hpp"

namespace fw::agent {

struct BudgetChange {
  BudgetState budget;  // scope, schedule (validated: sorted, first after_s == 0), source "api"
};

struct ControllerChange {
  std::string spec;  // controller spec as written, syntax checked ("pid:kp=0.5")
};

struct AgentCommand {
  uint64_t seq = 0;
  std::string who;  // token subject, or "anonymous" without auth
  double time_unix_s = 0;
  std::variant<BudgetChange, ControllerChange> what;
};

class CommandQueue {
 public:
  enum class Outcome { kAccepted, kConflict, kFull };
  struct Submitted {
    Outcome outcome = Outcome::kAccepted;
    uint64_t seq = 0;  // the command's seq when accepted; the current version otherwise
  };

  explicit CommandQueue(size_t max_pending = 64) : max_pending_(max_pending) {}

  // Accepts the command unless `expected_version` is set and differs from version()
  // (kConflict), or max_pending commands wait undrained (kFull). Sets cmd.seq.
  Submitted submit(AgentCommand cmd, std::optional<uint64_t> expected_version);
  // The loop: takes every pending command, oldest first.
  std::vector<AgentCommand> drain();
  // Sequence number of the last accepted command (0: none yet).
  uint64_t version() const;
  size_t pending() const;

 private:
  mutable std::mutex mu_;
  std::deque<AgentCommand> q_;
  uint64_t version_ = 0;
  size_t max_pending_;
};

}  // namespace fw::agent
