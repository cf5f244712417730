#pragma once
// NodeLock: one writer per node. An exclusive, non-blocking flock(2) on a lock file held for the
// agent's lifetime; the kernel drops it when the process dies (kill -9 included), so a stale
// file never blocks the next start. The holder's pid is written into the file for messages.

#include <memory>
#include <string>

#include "core/status.hpp"

namespace fw {

class NodeLock {
 public:
  // Unavailable ("another agent (pid N) holds PATH") when the lock is taken; IoError when the
  // file cannot be opened.
  // wait_s > 0: retries every 50 ms for that long before giving up (the restore helper of a
  // dying agent waits for its parent to release the lock).
  static Result<std::unique_ptr<NodeLock>> acquire(const std::string& path, double wait_s = 0);
  ~NodeLock();
  NodeLock(const NodeLock&) = delete;
  NodeLock& operator=(const NodeLock&) = delete;

 private:
  explicit NodeLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace fw
