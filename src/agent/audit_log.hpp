#pragma once
// AuditLog: one JSON line per write request (PUT/POST/DELETE) the API received, accepted
// or refused: when (UTC, RFC 3339 with milliseconds), who (token subject, "anonymous"
// without auth, "unauthenticated" for a missing or unknown token), from where, what
// (method, path, body up to 1 KiB) and the HTTP status answered.
//
// The file is opened for append with mode 0600 and flushed after every line.
// Thread-safety: write() is safe from any thread.

#include <fstream>
#include <mutex>
#include <string>

#include "core/status.hpp"

namespace fw::agent {

struct AuditRecord {
  double time_unix_s = 0;
  std::string who;
  std::string remote;  // "127.0.0.1:53122", or "unix" for the Unix socket
  std::string method;
  std::string path;
  std::string body;  // truncated to kMaxBody bytes
  int status = 0;
};

class AuditLog {
 public:
  static constexpr size_t kMaxBody = 1024;
  // Empty path: records are dropped (tests, or a deployment that opts out).
  Status open(const std::string& path);
  void write(const AuditRecord& r);
  // The JSON line for one record (no trailing newline).
  static std::string format(const AuditRecord& r);

 private:
  std::mutex mu_;
  std::ofstream out_;
};

}  // namespace fw::agent
