#include "core/confined_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace fw {
namespace {

namespace fs = std::filesystem;

// True when `p` has every component of `dir` and at least one more (both absolute, normal).
bool strictly_inside(const fs::path& p, const fs::path& dir) {
  auto pi = p.begin();
  for (auto di = dir.begin(); di != dir.end(); ++di) {
    if (di->empty()) continue;  // the trailing "/" of "/a/b/"
    while (pi != p.end() && pi->empty()) ++pi;
    if (pi == p.end() || *pi != *di) return false;
    ++pi;
  }
  for (; pi != p.end(); ++pi) {
    if (!pi->empty()) return true;
  }
  return false;
}

struct AllowedDirs {
  std::vector<fs::path> lexical;   // as given, made absolute and normal
  std::vector<fs::path> resolved;  // symlinks followed (the lexical one when that fails)
  std::string list;                // for messages
  bool contains_lexically(const fs::path& p) const {
    for (const auto* v : {&lexical, &resolved}) {
      for (const fs::path& d : *v) {
        if (strictly_inside(p, d)) return true;
      }
    }
    return false;
  }
  bool contains_resolved(const fs::path& p) const {
    for (const fs::path& d : resolved) {
      if (strictly_inside(p, d)) return true;
    }
    return false;
  }
};

AllowedDirs allowed_dirs(const std::vector<std::string>& dirs) {
  AllowedDirs a;
  for (const std::string& d : dirs) {
    a.list += (a.list.empty() ? "" : ", ") + d;
    std::error_code ec;
    const fs::path abs = fs::absolute(d, ec).lexically_normal();
    if (ec || d.empty()) continue;  // an empty or unusable entry allows nothing
    a.lexical.push_back(abs);
    const fs::path real = fs::weakly_canonical(abs, ec);
    a.resolved.push_back(ec ? abs : real.lexically_normal());
  }
  return a;
}

std::string errno_text(int err) { return std::strerror(err); }

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

Result<std::string> read_confined_file(const std::string& path,
                                       const std::vector<std::string>& dirs,
                                       const std::string& rule, size_t max_bytes) {
  if (path.empty()) return Status::InvalidArgument("an empty file name (" + rule + ")");
  const AllowedDirs allowed = allowed_dirs(dirs);
  const std::string outside = path + ": outside " + rule + " (" +
                              (allowed.list.empty() ? "none set" : allowed.list) +
                              "); only files inside them are read";
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec).lexically_normal();
  if (ec || !allowed.contains_lexically(abs)) return Status::InvalidArgument(outside);
  // Inside lexically: resolve the symlinks of its existing part (a link out is refused).
  const fs::path real = fs::weakly_canonical(abs, ec).lexically_normal();
  if (ec) {
    return Status::IoError("cannot resolve " + path + " (" + rule + "): " + ec.message());
  }
  if (!allowed.contains_resolved(real)) return Status::InvalidArgument(outside);
  struct stat st {};
  if (::stat(real.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return Status::NotFound(path + ": no such file");
    return Status::IoError("cannot read " + path + ": " + errno_text(err));
  }
  const std::string not_regular =
      path + ": not a regular file (a FIFO, device, socket or directory is never opened from " +
      rule + ")";
  const std::string too_big =
      path + ": more than " + std::to_string(max_bytes) + " bytes: not an input flexwatt reads";
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(not_regular);
  if (static_cast<uint64_t>(st.st_size) > max_bytes) return Status::InvalidArgument(too_big);
  // Checked again on the descriptor: the file may have been swapped since the stat().
  const Fd fd(::open(real.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound(path + ": no such file");
    if (err == ELOOP) return Status::InvalidArgument(outside);  // became a symlink
    return Status::IoError("cannot read " + path + ": " + errno_text(err));
  }
  if (::fstat(fd.get(), &st) != 0) {
    return Status::IoError("cannot read " + path + ": " + errno_text(errno));
  }
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(not_regular);
  if (static_cast<uint64_t>(st.st_size) > max_bytes) return Status::InvalidArgument(too_big);
  const fs::path opened = fs::read_symlink("/proc/self/fd/" + std::to_string(fd.get()), ec);
  if (!ec && !allowed.contains_resolved(opened.lexically_normal())) {
    return Status::InvalidArgument(outside);  // a directory on the way was swapped for a link
  }
  std::string text;
  text.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IoError("cannot read " + path + ": " + errno_text(errno));
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > max_bytes) {
      return Status::InvalidArgument(too_big);  // it grew while being read
    }
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace fw
