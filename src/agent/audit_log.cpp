#include "agent/audit_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/format.hpp"

namespace fw::agent {
namespace {

// Opened for append, created 0600 (never world-readable, whatever the umask adds).
int open_log(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

}  // namespace

AuditLog::~AuditLog() {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ >= 0) ::close(fd_);
}

Status AuditLog::open(const std::string& path, AuditLimits limits) {
  if (path.empty()) return Status::Ok();
  std::lock_guard<std::mutex> lock(mu_);
  int fd = open_log(path);
  if (fd < 0) return Status::IoError(path + ": cannot open audit log");
  struct stat st {};
  size_ = ::fstat(fd, &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  path_ = path;
  lim_ = limits;
  return Status::Ok();
}

std::string AuditLog::format(const AuditRecord& r) {
  nlohmann::json j = {{"time", rfc3339_utc(r.time_unix_s)},
                      {"who", r.who},
                      {"remote", r.remote},
                      {"method", r.method},
                      {"path", r.path},
                      {"status", r.status},
                      {"body", r.body.substr(0, kMaxBody)}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void AuditLog::append_locked(const std::string& line) {
  if (size_ > 0 && size_ + line.size() > lim_.max_bytes) {
    ::close(fd_);
    if (lim_.keep > 0) {
      for (int i = lim_.keep - 1; i >= 1; --i) {
        (void)std::rename((path_ + "." + std::to_string(i)).c_str(),
                          (path_ + "." + std::to_string(i + 1)).c_str());
      }
      (void)std::rename(path_.c_str(), (path_ + ".1").c_str());
    } else {
      (void)::truncate(path_.c_str(), 0);
    }
    fd_ = open_log(path_);
    size_ = 0;
    if (fd_ < 0) return;
  }
  ssize_t n = ::write(fd_, line.data(), line.size());
  if (n > 0) size_ += static_cast<size_t>(n);
}

void AuditLog::summary_locked(double now_unix_s) {
  if (suppressed_ == 0) return;
  nlohmann::json j = {{"time", rfc3339_utc(now_unix_s)},
                      {"event", "suppressed"},
                      {"records", suppressed_},
                      {"since", rfc3339_utc(suppressed_since_s_)}};
  append_locked(j.dump() + "\n");
  suppressed_ = 0;
  summary_unix_s_ = now_unix_s;
}

void AuditLog::write(const AuditRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0) return;
  if (r.status >= 400) {
    const double now = r.time_unix_s;
    if (refilled_unix_s_ < 0) {
      tokens_ = lim_.burst;
    } else {
      tokens_ =
          std::min(lim_.burst, tokens_ + std::max(0.0, now - refilled_unix_s_) * lim_.rate_per_s);
    }
    refilled_unix_s_ = std::max(refilled_unix_s_, now);  // records race in slightly out of order
    if (tokens_ < 1) {
      if (suppressed_++ == 0) suppressed_since_s_ = now;
      return;
    }
    tokens_ -= 1;
    if (now - summary_unix_s_ >= 1) summary_locked(now);  // at most one count line a second
  }
  append_locked(format(r) + "\n");
}

void AuditLog::flush_suppressed(double now_unix_s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ >= 0) summary_locked(now_unix_s);
}

}  // namespace fw::agent
