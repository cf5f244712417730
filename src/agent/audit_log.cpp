#include "agent/audit_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

namespace fw::agent {
namespace {

std::string rfc3339_utc(double t) {
  auto secs = static_cast<std::time_t>(std::floor(t));
  int ms = static_cast<int>((t - std::floor(t)) * 1000.0);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, ms);
  return out;
}

}  // namespace

Status AuditLog::open(const std::string& path) {
  if (path.empty()) return Status::Ok();
  // Create with 0600 before the stream opens it, so the log is never world-readable.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError(path + ": cannot open audit log");
  ::close(fd);
  std::lock_guard<std::mutex> lock(mu_);
  out_.open(path, std::ios::app);
  if (!out_) return Status::IoError(path + ": cannot open audit log");
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

void AuditLog::write(const AuditRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!out_.is_open()) return;
  out_ << format(r) << '\n';
  out_.flush();
}

}  // namespace fw::agent
