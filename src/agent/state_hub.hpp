#pragma once
// StateHub: the hand-over point between the agent's loop (one publisher) and the HTTP
// threads (many readers). The loop calls publish() once per tick; readers take the latest
// immutable snapshot, or wait for a newer one (SSE stream). Each published state also goes
// into a HistoryRing (GET /v1/history: the last hour, thinned to 2 samples/s).
//
// Thread-safety: every member is safe to call from any thread. A snapshot returned by
// latest()/wait_newer() stays valid for as long as the caller holds the pointer.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "agent/agent_state.hpp"
#include "agent/history_ring.hpp"

namespace fw::agent {

// One published tick: the state and its JSON text (serialised once, served many times).
struct Published {
  AgentState state;
  std::string json;  // to_json(state).dump(): the body of GET /v1/status and of each event
};

class StateHub {
 public:
  using Clock = std::chrono::steady_clock;

  StateHub();
  // Publishes `s` as the new latest state; sets s.version to the previous version + 1 and
  // returns it. Wakes every waiter.
  uint64_t publish(AgentState s);
  // The latest state; version 0 (an empty state) before the first publish(). Never null.
  std::shared_ptr<const Published> latest() const;
  // Waits until a state with version > `version` exists, `deadline` passes, or `cancel`
  // (may be empty) returns true after a wake_all(). Returns the latest state either way.
  std::shared_ptr<const Published> wait_newer(uint64_t version, Clock::time_point deadline,
                                              const std::function<bool()>& cancel = {}) const;
  // The recent past (every published state offered to it; see HistoryRing).
  const HistoryRing& history() const { return history_; }
  // Wakes every waiter so that it re-checks its cancel predicate (server shutdown).
  void wake_all() const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::shared_ptr<const Published> latest_;
  HistoryRing history_;
};

}  // namespace fw::agent
