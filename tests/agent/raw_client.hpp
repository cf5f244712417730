#pragma once
// A raw client socket for the HTTP limit tests (tests/agent/server_limits_test.cpp,
// http_gate_test.cpp, tests/fleet/grid_server_test.cpp): what a misbehaving or hostile client
// sends, which httplib's client would not. Every read is bounded by the deadline it is given.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace fw::http_testing {

using HttpClock = std::chrono::steady_clock;

inline double since_s(HttpClock::time_point t0) {
  return std::chrono::duration<double>(HttpClock::now() - t0).count();
}

// One raw client connection. Reads are bounded by the deadline given to each call.
class Raw {
 public:
  // TCP to 127.0.0.1:port from the source address `src` (any 127.x.y.z works on Linux).
  static Raw tcp(int port, const char* src = "127.0.0.1") {
    Raw r;
    r.fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    ::inet_pton(AF_INET, src, &from.sin_addr);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    if (::bind(r.fd_, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
        ::connect(r.fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
      r.reset();
    }
    return r;
  }
  static Raw unix_socket(const std::string& path) {
    Raw r;
    r.fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    if (::connect(r.fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) r.reset();
    return r;
  }
  Raw() = default;
  Raw(Raw&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Raw& operator=(Raw&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~Raw() { reset(); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool ok() const { return fd_ >= 0; }
  bool send(std::string_view s) {
    while (!s.empty()) {
      ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Everything that arrives until the peer closes (EOF or reset) or `within_s` passes;
  // closed() tells which.
  std::string read_until_close(double within_s) {
    std::string out;
    closed_ = false;
    auto end = HttpClock::now() + std::chrono::duration_cast<HttpClock::duration>(
                                      std::chrono::duration<double>(within_s));
    while (HttpClock::now() < end) {
      if (!wait_readable(end)) break;
      char buf[16384];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  // One response (head and Content-Length body) if it arrives within `within_s`, else "".
  std::string read_response(double within_s) {
    auto end = HttpClock::now() + std::chrono::duration_cast<HttpClock::duration>(
                                      std::chrono::duration<double>(within_s));
    while (HttpClock::now() < end) {
      size_t head_end = pending_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        size_t len = 0;
        std::string head = pending_.substr(0, head_end);
        for (auto& ch : head) ch = static_cast<char>(std::tolower(ch));
        if (auto at = head.find("content-length:"); at != std::string::npos) {
          len = std::strtoul(head.c_str() + at + 15, nullptr, 10);
        }
        if (pending_.size() >= head_end + 4 + len) {
          std::string r = pending_.substr(0, head_end + 4 + len);
          pending_.erase(0, r.size());
          return r;
        }
      }
      if (!wait_readable(end)) break;
      char buf[16384];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      pending_.append(buf, static_cast<size_t>(n));
    }
    return "";
  }
  bool closed() const { return closed_; }
  int fd() const { return fd_; }

 private:
  bool wait_readable(HttpClock::time_point end) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(end - HttpClock::now()).count();
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 0))) > 0;
  }
  int fd_ = -1;
  bool closed_ = false;
  std::string pending_;
};

// The status code of a response ("HTTP/1.1 413 ..."), or 0.
inline int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.c_str() + 9);
}

inline size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

inline std::string bearer(const char* token) {
  return token ? std::string("Authorization: Bearer ") + token + "\r\n" : std::string();
}

}  // namespace fw::http_testing
