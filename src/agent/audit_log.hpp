#pragma once
// AuditLog: one JSON line per write request (PUT/POST/DELETE) the API received, accepted
// or refused: when (UTC, RFC 3339 with milliseconds), who (token subject, "anonymous"
// without auth, "unauthenticated" for a missing or unknown token), from where, what
// (method, path, body up to 1 KiB; the server logs no body for unauthenticated requests)
// and the HTTP status answered.
//
// Bounded under abuse: refusals (status >= 400) pass a token bucket (AuditLimits::rate_per_s,
// bursts of burst; timed by the records' own time_unix_s); the ones dropped are counted and
// the count written as one line {"time","event":"suppressed","records":N,"since"}: before the
// next refusal that passes (at most once a second), or by flush_suppressed() (the server calls
// it about once a second, and at stop).
// Accepted requests are always logged. The file rotates when a line would take it past
// max_bytes: PATH -> PATH.1 -> ... -> PATH.keep (the oldest is dropped).
//
// Files are created with mode 0600; each line is written with one write(2) (no buffering).
// Thread-safety: every member is safe from any thread.

#include <cstdint>
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

struct AuditLimits {
  size_t max_bytes = 16 * 1024 * 1024;  // per file; rotate beyond
  int keep = 3;                         // rotated files kept (0: the log is truncated instead)
  double rate_per_s = 20;               // refusals logged per second, on average
  double burst = 100;                   // refusals logged at once after a quiet spell
};

class AuditLog {
 public:
  static constexpr size_t kMaxBody = 1024;
  AuditLog() = default;
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Empty path: records are dropped (tests, or a deployment that opts out).
  Status open(const std::string& path, AuditLimits limits = {});
  void write(const AuditRecord& r);
  // Writes the count of refusals dropped so far, if any.
  void flush_suppressed(double now_unix_s);
  // The JSON line for one record (no trailing newline).
  static std::string format(const AuditRecord& r);

 private:
  void append_locked(const std::string& line);
  void summary_locked(double now_unix_s);

  std::mutex mu_;
  int fd_ = -1;
  std::string path_;
  AuditLimits lim_;
  size_t size_ = 0;  // of the current file
  double tokens_ = 0;
  double refilled_unix_s_ = -1;  // -1: the bucket starts full at the first refusal
  uint64_t suppressed_ = 0;
  double suppressed_since_s_ = 0;
  double summary_unix_s_ = -1e300;  // when the last count line was written
};

}  // namespace fw::agent
