#pragma once
// Status and Result<T>: expected failures as values (no exceptions on the hot path).
//
// Contract: a Status is either ok() or carries a code and a human message. Messages
// about bad input name where it came from ("trace/gpus.csv:12: power_w: not a number").
// Command-line verbs map codes to exit codes with exit_code(): bad usage or bad input
// is 2, any other failure 1.

#include <string>
#include <utility>
#include <variant>

namespace fw {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // bad usage or bad input data (exit code 2)
  kNotFound,          // a named file, GPU or key does not exist (exit code 2)
  kUnavailable,       // a resource is absent at run time: no NVML, GPU lost
  kNotSupported,      // the device or library lacks the feature
  kPermissionDenied,  // the OS or driver refused
  kIoError,           // reading or writing failed
  kInternal,          // a bug
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status NotSupported(std::string m) { return {StatusCode::kNotSupported, std::move(m)}; }
  static Status PermissionDenied(std::string m) {
    return {StatusCode::kPermissionDenied, std::move(m)};
  }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Exit code of a command that fails with this status: 0, 2 (bad input) or 1.
  int exit_code() const {
    if (ok()) return 0;
    return (code_ == StatusCode::kInvalidArgument || code_ == StatusCode::kNotFound) ? 2 : 1;
  }

  // Same code, message prefixed with context: "context: message".
  Status with_context(const std::string& context) const {
    return ok() ? *this : Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT; REQUIRES: !status.ok()

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace fw

// Early return on failure inside functions returning Status or Result<T>.
#define FW_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::fw::Status fw_status_ = (expr);        \
    if (!fw_status_.ok()) return fw_status_; \
  } while (0)

#define FW_CONCAT_INNER_(a, b) a##b
#define FW_CONCAT_(a, b) FW_CONCAT_INNER_(a, b)
// FW_ASSIGN_OR_RETURN(auto x, MakeX()); returns the status if MakeX() failed.
#define FW_ASSIGN_OR_RETURN(lhs, expr) \
  FW_ASSIGN_OR_RETURN_IMPL_(FW_CONCAT_(fw_r_, __LINE__), lhs, expr)
#define FW_ASSIGN_OR_RETURN_IMPL_(r, lhs, expr) \
  auto r = (expr);                              \
  if (!r.ok()) return r.status();               \
  lhs = std::move(r).value()
