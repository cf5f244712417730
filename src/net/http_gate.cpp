#include "net/http_gate.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "core/format.hpp"

// An upgrade of cpp-httplib stops here until process_request() and svr_sock_ (the two
// protected members the gate uses, see http_gate.hpp) and the request processing behind them
// have been checked again; then add the version to httplib_verified().
static_assert(fw::net::httplib_verified(CPPHTTPLIB_VERSION),
              "cpp-httplib version not checked for net::GatedServer (net/http_gate.hpp)");

namespace fw::net {
namespace {

using SteadyClock = std::chrono::steady_clock;

thread_local ServedConnection* tl_current = nullptr;

SteadyClock::duration span(double s) {
  return std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s));
}

int ms_until(SteadyClock::time_point t) {
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - SteadyClock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, INT_MAX));
}

// Waits until `fd` has `events`, the deadline passes or `stop_fd` is readable:
// 1 ready (or hung up: the next call says how), 0 deadline, -1 stopping or error.
int wait_fd(int fd, short events, int stop_fd, SteadyClock::time_point deadline) {
  for (;;) {
    pollfd p[2] = {{fd, events, 0}, {stop_fd, POLLIN, 0}};
    int n = ::poll(p, 2, ms_until(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || p[1].revents != 0) return -1;
    if (n > 0) return 1;
    if (SteadyClock::now() >= deadline) return 0;
  }
}

// An answer the poller sends without a worker, on a connection it then closes. Best effort:
// one non-blocking send of a few hundred bytes into a socket with nothing else queued.
void send_canned(int fd, int status, const char* reason, const std::string& message) {
  std::string body = "{\"error\":\"" + message + "\",\"status\":" + std::to_string(status) + "}";
  std::string r =
      "HTTP/1.1 " + std::to_string(status) + " " + reason +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n\r\n" + body;
  (void)::send(fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

// "IP" and port of a socket address; false for other families.
bool ip_and_port(const sockaddr_storage& a, std::string& ip, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
    port = ntohs(v6->sin6_port);
  } else {
    return false;
  }
  ip = buf;
  return true;
}

}  // namespace

ServedConnection* current_connection() { return tl_current; }

void ServedConnection::allow_body(size_t max_bytes) {
  body_allowed_ = true;
  body_budget_ = max_bytes;
  body_deadline_ = SteadyClock::now() + span(body_timeout_s_);
}

void ServedConnection::begin_request() {
  body_allowed_ = false;
  body_budget_ = 0;
  body_complete_ = false;
  close_after_ = false;
  over_budget_ = false;
  timed_out_ = false;
  gated_ = false;
}

bool ServedConnection::reusable() const {
  return !close_after_ && gated_ && (!body_allowed_ || body_complete_);
}

void ServedConnection::finish_headers(httplib::Response& res) {
  if (reusable()) return;
  close_after_ = true;
  res.headers.erase("Connection");
  res.headers.erase("Keep-Alive");
  res.set_header("Connection", "close");
}

// The Stream httplib's process_request reads the request from and writes the answer to: the
// buffered head first, then the socket within the body budget and deadline.
class ConnStream final : public httplib::Stream {
 public:
  ConnStream(ServedConnection& c, int stop_fd, double write_timeout_s)
      : c_(c), stop_fd_(stop_fd), write_timeout_(span(write_timeout_s)) {}

  bool is_readable() const override {
    if (c_.off_ < c_.buf_.size()) return true;
    pollfd p{c_.fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }
  bool is_writable() const override {
    return wait_fd(c_.fd_, POLLOUT, stop_fd_, SteadyClock::now() + write_timeout_) == 1;
  }
  ssize_t read(char* ptr, size_t size) override {
    if (size == 0) return 0;
    if (c_.body_allowed_) {
      if (c_.body_budget_ == 0) {
        c_.over_budget_ = true;
        return -1;
      }
      size = std::min(size, c_.body_budget_);
    }
    if (c_.off_ < c_.buf_.size()) {
      size_t n = std::min(size, c_.buf_.size() - c_.off_);
      std::memcpy(ptr, c_.buf_.data() + c_.off_, n);
      c_.off_ += n;
      if (c_.body_allowed_) c_.body_budget_ -= n;
      return static_cast<ssize_t>(n);
    }
    // Past the buffered head: only a body the handlers allowed is read from the socket.
    if (!c_.body_allowed_) return -1;
    for (;;) {
      int w = wait_fd(c_.fd_, POLLIN, stop_fd_, c_.body_deadline_);
      if (w == 0) c_.timed_out_ = true;
      if (w != 1) return -1;
      ssize_t n = ::recv(c_.fd_, ptr, size, 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (n > 0) c_.body_budget_ -= static_cast<size_t>(n);
      return n;
    }
  }
  ssize_t write(const char* ptr, size_t size) override {
    auto deadline = SteadyClock::now() + write_timeout_;
    for (;;) {
      ssize_t n = ::send(c_.fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (wait_fd(c_.fd_, POLLOUT, stop_fd_, deadline) != 1) return -1;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = c_.ip_;
    port = c_.port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = c_.local_ip_;
    port = c_.local_port_;
  }
  socket_t socket() const override { return c_.fd_; }

 private:
  ServedConnection& c_;
  int stop_fd_;
  SteadyClock::duration write_timeout_;
};

// The worker threads: serve one queued connection's request at a time.
class GatedServer::Workers {
 public:
  Workers(GatedServer& s, int n, int nice) : s_(s) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this, nice] { run(nice); });
  }
  void push(std::unique_ptr<ServedConnection> c) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(c));
    }
    cv_.notify_one();
  }
  // Serves (as "closing") what is queued, then joins.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void run(int nice) {
    // A higher nice value for this thread only (Linux; no privilege needed): under request
    // load the control loop's thread (nice 0) keeps its deadlines.
    if (nice > 0) (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), nice);
    for (;;) {
      std::unique_ptr<ServedConnection> c;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        c = std::move(queue_.front());
        queue_.pop_front();
      }
      s_.serve(std::move(c));
    }
  }

  GatedServer& s_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<ServedConnection>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// The poller thread: owns every connection that no worker serves.
class GatedServer::Poller {
 public:
  explicit Poller(GatedServer& s) : s_(s), lim_(s.limits_) {
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;
    ::epoll_ctl(ep_, EPOLL_CTL_ADD, wake_, &ev);
    ok_ = ep_ >= 0 && wake_ >= 0 && watch_listener();
    listening_ = ok_;
  }
  // Starts the poller thread: after the server holds both the poller and the workers, which
  // the thread reaches at once (the listening socket may hold connections already).
  void start() {
    thread_ = std::thread([this] { run(); });
  }
  ~Poller() {
    stop();
    ::close(wake_);
    ::close(ep_);
  }
  bool ok() const { return ok_; }
  // From a worker: a connection between requests (close: drain and close it).
  void give_back(std::unique_ptr<ServedConnection> c, bool close) { push({std::move(c), close}); }
  // Closes every connection it holds or is handed, and joins (after the workers stopped).
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      exit_ = true;
    }
    signal();
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Incoming {
    std::unique_ptr<ServedConnection> conn;
    bool close;
  };
  // An open connection as the caps count it.
  struct Open {
    int fd;
    std::string client;
    bool counted;  // still counts against the caps (false: its client hung up)
  };
  static constexpr auto kDrainFor = std::chrono::seconds(2);
  static constexpr auto kSweepEvery = std::chrono::milliseconds(200);
  // Out of descriptors (EMFILE, ENFILE) or memory: accepting pauses this long (the pending
  // connections wait in the backlog) rather than spinning on a listener that stays readable.
  static constexpr auto kAcceptPause = std::chrono::milliseconds(100);
  static constexpr int kAcceptBatch = 64;  // accepts per wake-up, between other events
  // A connection over a cap waits this long for a slot before its 503, looked at again every
  // kAdmitRecheck; at most kPendingPerClient per client and kPendingMax in all wait.
  static constexpr auto kAdmitGrace = std::chrono::milliseconds(100);
  static constexpr auto kAdmitRecheck = std::chrono::milliseconds(1);
  static constexpr int kPendingPerClient = 2;
  static constexpr int kPendingMax = 32;

  bool watch_listener() {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &listener_tag_;
    return ::epoll_ctl(ep_, EPOLL_CTL_ADD, s_.listen_fd_, &ev) == 0;
  }

  // Accepts what the backlog holds (up to kAcceptBatch), non-blocking and close-on-exec.
  void accept_pending(bool exit) {
    for (int i = 0; i < kAcceptBatch; ++i) {
      int fd = ::accept4(s_.listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        accepted(fd, exit);
        continue;
      }
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        ::epoll_ctl(ep_, EPOLL_CTL_DEL, s_.listen_fd_, nullptr);
        listening_ = false;
        resume_accept_ = SteadyClock::now() + kAcceptPause;
      }
      return;  // EAGAIN: the backlog is empty
    }
  }

  void push(Incoming in) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      incoming_.push_back(std::move(in));
    }
    signal();
  }
  void signal() {
    uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
  }

  void run() {
    std::vector<epoll_event> events(256);
    auto next_sweep = SteadyClock::now() + kSweepEvery;
    auto next_tick = SteadyClock::now() + std::chrono::seconds(1);
    for (;;) {
      auto wake_at = std::min(next_sweep, next_tick);
      if (!listening_) wake_at = std::min(wake_at, resume_accept_);
      if (!pending_.empty()) wake_at = std::min(wake_at, SteadyClock::now() + kAdmitRecheck);
      int n = ::epoll_wait(ep_, events.data(), static_cast<int>(events.size()), ms_until(wake_at));
      std::vector<Incoming> in;
      bool exit = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        in.swap(incoming_);
        exit = exit_;
      }
      uint64_t count = 0;
      (void)!::read(wake_, &count, sizeof count);
      bool accept_now = false;
      for (int i = 0; i < n; ++i) {
        void* tag = events[i].data.ptr;
        if (tag == &listener_tag_) {
          accept_now = true;
          continue;
        }
        auto* c = static_cast<ServedConnection*>(tag);
        if (c != nullptr && conns_.count(c)) readable(c);
      }
      for (auto& i : in) returned(std::move(i.conn), i.close || exit);
      if (accept_now) accept_pending(exit);
      if (exit) break;
      auto now = SteadyClock::now();
      if (!pending_.empty()) recheck_pending(now);
      if (!listening_ && now >= resume_accept_) listening_ = watch_listener();
      if (now >= next_sweep) {
        sweep(now);
        next_sweep = now + kSweepEvery;
      }
      if (now >= next_tick) {
        if (s_.tick_) s_.tick_();
        next_tick = now + std::chrono::seconds(1);
      }
    }
    while (!conns_.empty()) close_conn(conns_.begin()->first);
  }

  void accepted(int fd, bool exit) {
    auto c = std::make_unique<ServedConnection>();
    c->fd_ = fd;
    c->body_timeout_s_ = lim_.body_timeout_s;
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len);
    if (peer.ss_family == AF_UNIX) {
      c->unix_ = true;
      c->remote_ = "unix";
      ucred cred{};
      socklen_t clen = sizeof cred;
      bool known = ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0;
      c->client_ = known ? "uid:" + std::to_string(cred.uid) : "unix";
    } else {
      ip_and_port(peer, c->ip_, c->port_);
      c->remote_ = peer.ss_family == AF_INET6 ? "[" + c->ip_ + "]:" + std::to_string(c->port_)
                                              : c->ip_ + ":" + std::to_string(c->port_);
      c->client_ = c->ip_;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    sockaddr_storage local{};
    len = sizeof local;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      ip_and_port(local, c->local_ip_, c->local_port_);
    }
    ++s_.open_;
    ++total_;
    ++per_client_[c->client_];
    ServedConnection* p = c.get();
    open_conns_.emplace(p, Open{fd, c->client_, true});
    conns_.emplace(p, std::move(c));  // owned from here on; close_conn() undoes the counts
    if (exit || s_.stopping_) return close_conn(p);
    const std::string& client = p->client_;
    if (over_caps(client)) count_off_hung_up(p, client);
    if (!over_caps(client)) return admit(p);
    // Over a cap: a client that closed one connection and opened the next may be seen here
    // before its close is (the FIN and the next SYN take different paths through the kernel),
    // so the connection waits up to kAdmitGrace for a slot, unread, before it is refused. At
    // most kPendingPerClient per client and kPendingMax in all wait; beyond, refused at once.
    const auto mine =
        std::count_if(pending_.begin(), pending_.end(),
                      [&](const ServedConnection* w) { return w->client_ == client; });
    if (mine >= kPendingPerClient || static_cast<int>(pending_.size()) >= kPendingMax) {
      return refuse(p);
    }
    p->deadline_ = SteadyClock::now() + kAdmitGrace;
    pending_.push_back(p);
  }

  void admit(ServedConnection* p) {
    p->deadline_ = SteadyClock::now() + span(lim_.idle_timeout_s);
    watch(p);
  }

  void refuse(ServedConnection* p) {
    send_canned(p->fd_, 503, "Service Unavailable",
                total_ > lim_.max_connections ? "too many open connections"
                                              : "too many open connections from this client");
    close_conn(p);
  }

  // The connections waiting for a slot: admitted once their client's hung-up connections
  // have counted off, refused when their grace ends. Only this closes a waiting connection
  // (run() calls it before sweep() with the same time, so sweep finds none past its deadline).
  void recheck_pending(SteadyClock::time_point now) {
    std::vector<ServedConnection*> waiting;
    waiting.swap(pending_);
    for (ServedConnection* p : waiting) {
      const std::string& client = p->client_;
      if (over_caps(client)) count_off_hung_up(p, client);
      const bool fits = !over_caps(client);
      if (!fits && now < p->deadline_) {
        pending_.push_back(p);
        continue;
      }
      if (fits) {
        admit(p);
      } else {
        refuse(p);
      }
    }
  }

  void returned(std::unique_ptr<ServedConnection> c, bool close) {
    ServedConnection* p = c.get();
    conns_.emplace(p, std::move(c));
    if (close || s_.stopping_) return drain(p, false);
    p->phase_ = ServedConnection::Phase::kReading;
    if (p->off_ > 0) {  // drop what the last request consumed
      p->buf_.erase(0, p->off_);
      p->scanned_ = p->scanned_ > p->off_ ? p->scanned_ - p->off_ : 0;
      p->off_ = 0;
    }
    bool started = !p->buf_.empty();  // a pipelined request has begun
    p->deadline_ = SteadyClock::now() + span(started ? lim_.head_timeout_s : lim_.idle_timeout_s);
    if (GatedServer::has_head(*p)) return dispatch(p);
    watch(p);
  }

  void watch(ServedConnection* p) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = p;
    if (::epoll_ctl(ep_, EPOLL_CTL_ADD, p->fd_, &ev) != 0) close_conn(p);
  }

  void readable(ServedConnection* p) {
    ServedConnection& c = *p;
    if (c.phase_ == ServedConnection::Phase::kDraining) {
      char scratch[16384];
      for (;;) {
        ssize_t n = ::recv(c.fd_, scratch, sizeof scratch, 0);
        if (n > 0) {
          c.drained_ += static_cast<size_t>(n);
          if (c.drained_ > lim_.drain_max_bytes) return close_conn(p);
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        return close_conn(p);  // EOF or error: the client has what it will read
      }
    }
    bool eof = false;
    for (;;) {
      size_t have = c.buf_.size() - c.off_;
      if (have >= ServedConnection::kMaxHeadBytes) break;
      char tmp[16384];
      size_t want = std::min(sizeof tmp, ServedConnection::kMaxHeadBytes - have);
      ssize_t n = ::recv(c.fd_, tmp, want, 0);
      if (n > 0) {
        if (have == 0) c.deadline_ = SteadyClock::now() + span(lim_.head_timeout_s);
        c.buf_.append(tmp, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      eof = true;
      break;
    }
    if (GatedServer::has_head(c)) {
      ::epoll_ctl(ep_, EPOLL_CTL_DEL, c.fd_, nullptr);
      return dispatch(p);
    }
    if (eof) return close_conn(p);
    if (c.buf_.size() - c.off_ >= ServedConnection::kMaxHeadBytes) {
      send_canned(
          c.fd_, 431, "Request Header Fields Too Large",
          "request head larger than " + std::to_string(ServedConnection::kMaxHeadBytes) + " bytes");
      drain(p, true);
    }
  }

  // Hands a connection with a complete head to a worker.
  void dispatch(ServedConnection* p) {
    auto it = conns_.find(p);
    std::unique_ptr<ServedConnection> c = std::move(it->second);
    conns_.erase(it);
    s_.workers_->push(std::move(c));
  }

  // Stops sending (the answer is out), then reads and drops what the client still sends for
  // a bounded time and amount, so that it reads the answer rather than a reset.
  void drain(ServedConnection* p, bool watched) {
    ServedConnection& c = *p;
    ::shutdown(c.fd_, SHUT_WR);
    c.phase_ = ServedConnection::Phase::kDraining;
    c.drained_ = c.buf_.size() - c.off_;
    c.buf_.clear();
    c.off_ = c.scanned_ = 0;
    c.deadline_ = SteadyClock::now() + kDrainFor;
    if (s_.stopping_) return close_conn(p);
    if (!watched) watch(p);
  }

  void sweep(SteadyClock::time_point now) {
    std::vector<ServedConnection*> due;
    for (auto& [p, c] : conns_) {
      if (now >= p->deadline_) due.push_back(p);
    }
    for (ServedConnection* p : due) {
      if (p->phase_ == ServedConnection::Phase::kReading && p->buf_.size() > p->off_) {
        send_canned(p->fd_, 408, "Request Timeout",
                    "request head not received within " + fmt_s(lim_.head_timeout_s));
        drain(p, true);
      } else {
        close_conn(p);  // idle past idle_timeout_s, or drained long enough
      }
    }
  }

  static std::string fmt_s(double s) { return format_g(s) + " s"; }

  bool over_caps(const std::string& client) const {
    auto pc = per_client_.find(client);
    const int mine = pc == per_client_.end() ? 0 : pc->second;
    return total_ > lim_.max_connections || mine > lim_.max_connections_per_client;
  }

  // Takes a connection off the caps' counts (once): it closed, or its client hung up.
  void count_off(Open& o) {
    if (!o.counted) return;
    o.counted = false;
    auto pc = per_client_.find(o.client);
    if (pc != per_client_.end() && --pc->second <= 0) per_client_.erase(pc);
    --total_;
  }

  // Before refusing a connection over a cap: the connections whose client has hung up (closed
  // the connection, or shut down its sending side: it can send no further request) stop
  // counting now, not when this thread next gets to their end-of-file, nor when the worker
  // that holds one hands it back. Over the per-client cap only that client's connections are
  // looked at, over the total cap all. Probing a worker's connection from here is safe: only
  // this thread closes sockets, so an entry's fd is the connection's while the entry exists.
  void count_off_hung_up(ServedConnection* except, const std::string& client) {
    const bool all = total_ > lim_.max_connections;
    for (auto& [p, o] : open_conns_) {
      if (p == except || !o.counted || (!all && o.client != client)) continue;
      pollfd probe{o.fd, POLLRDHUP, 0};
      if (::poll(&probe, 1, 0) == 1 && (probe.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
        count_off(o);
      }
    }
  }

  void close_conn(ServedConnection* p) {
    auto it = conns_.find(p);
    if (it == conns_.end()) return;
    ::close(p->fd_);  // also leaves the epoll set
    if (auto o = open_conns_.find(p); o != open_conns_.end()) {
      count_off(o->second);
      open_conns_.erase(o);
    }
    --s_.open_;
    conns_.erase(it);
  }

  GatedServer& s_;
  const ConnectionLimits lim_;
  int ep_ = -1;
  int wake_ = -1;
  char listener_tag_ = 0;   // its address marks the listening socket's epoll events
  bool ok_ = false;         // set before the thread starts
  bool listening_ = false;  // the listening socket is in the epoll set (the poller's)
  SteadyClock::time_point resume_accept_{};
  std::thread thread_;
  std::mutex mu_;  // guards incoming_ and exit_
  std::vector<Incoming> incoming_;
  bool exit_ = false;
  // The poller thread's alone:
  std::unordered_map<ServedConnection*, std::unique_ptr<ServedConnection>> conns_;
  // Every open connection, the poller's and the workers': accepted and closed (the socket
  // too) only on this thread.
  std::unordered_map<ServedConnection*, Open> open_conns_;
  std::unordered_map<std::string, int> per_client_;  // counted open connections per client
  std::vector<ServedConnection*> pending_;  // over a cap, waiting for a slot (in conns_, unwatched)
  int total_ = 0;                           // counted open connections
};

GatedServer::GatedServer(ConnectionLimits limits, HttpPolicy policy)
    : limits_(limits), policy_(std::move(policy)) {
  // The two protected members of httplib::Server the gate relies on (http_gate.hpp): serving
  // one request from a Stream, and the listening socket that content providers read as "the
  // server runs". A change of either fails here, not at run time.
  static_assert(
      std::is_same_v<decltype(&GatedServer::process_request),
                     bool (httplib::Server::*)(httplib::Stream&, bool, bool&,
                                               const std::function<void(httplib::Request&)>&)>,
      "httplib::Server::process_request changed: re-check net::GatedServer");
  static_assert(std::is_same_v<decltype(svr_sock_), std::atomic<socket_t>>,
                "httplib::Server::svr_sock_ changed: re-check net::GatedServer");
  if (limits_.drain_max_bytes == 0) {
    limits_.drain_max_bytes = std::max<size_t>(2 * limits_.max_body_bytes, 64 * 1024);
  }
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  install_hooks();
}

GatedServer::~GatedServer() {
  shutdown();
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

bool GatedServer::listen_on(int fd) {
  // Debian's httplib listens with a backlog of 5: 50 clients connecting at once overflowed it
  // and waited out 1-3 s SYN retransmits (the load bench's read errors).
  constexpr int kBacklog = 1024;
  // Non-blocking: the poller accepts until EAGAIN, never waits in accept().
  if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) != 0 || ::listen(fd, kBacklog) != 0) {
    ::close(fd);
    return false;
  }
  listen_fd_ = fd;
  // Content providers (streams) go on while this is a socket (httplib's "running").
  svr_sock_ = fd;
  return true;
}

bool GatedServer::bind_tcp(const std::string& host, int port) {
  if (listen_fd_ >= 0 || port < 0 || port > 65535) return false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found) != 0) {
    return false;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR (a restart binds through TIME_WAIT), not httplib's SO_REUSEPORT: a port
    // another socket listens on is refused, never shared.
    int one = 1, zero = 0;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (a->ai_family == AF_INET6) {  // "::" takes IPv4 too, as httplib's sockets did
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    }
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return false;
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  std::string ip;
  int bound = 0;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0 ||
      !ip_and_port(local, ip, bound)) {
    ::close(fd);
    return false;
  }
  if (!listen_on(fd)) return false;  // closed there
  bound_port_ = bound;
  return true;
}

bool GatedServer::bind_unix(const std::string& path) {
  sockaddr_un addr{};
  if (listen_fd_ >= 0 || path.empty() || path.size() >= sizeof addr.sun_path) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return false;
  }
  return listen_on(fd);
}

bool GatedServer::start_serving() {
  if (listen_fd_ < 0 || stop_fd_ < 0 || poller_ || stopping_) return false;
  workers_ = std::make_unique<Workers>(*this, std::max(1, limits_.threads), limits_.worker_nice);
  poller_ = std::make_unique<Poller>(*this);
  if (!poller_->ok()) return false;
  poller_->start();
  return true;
}

void GatedServer::shutdown() {
  if (shut_down_.exchange(true)) return;
  stopping_ = true;
  svr_sock_ = INVALID_SOCKET;  // content providers (streams) end at their next check
  uint64_t one = 1;
  if (stop_fd_ >= 0) (void)!::write(stop_fd_, &one, sizeof one);
  if (workers_) workers_->stop();  // their reads and writes fail at once now
  if (poller_) poller_->stop();    // closes every connection, accepts no more
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

bool GatedServer::has_head(ServedConnection& c) {
  size_t from = std::max(c.off_, c.scanned_ >= 3 ? c.scanned_ - 3 : size_t{0});
  if (c.buf_.find("\r\n\r\n", from) != std::string::npos) return true;
  c.scanned_ = c.buf_.size();
  return false;
}

bool GatedServer::next_head_within(ServedConnection& c, SteadyClock::duration linger) {
  if (c.off_ > 0) {  // drop what the last request consumed
    c.buf_.erase(0, c.off_);
    c.scanned_ = c.scanned_ > c.off_ ? c.scanned_ - c.off_ : 0;
    c.off_ = 0;
  }
  if (has_head(c)) return true;
  if (c.buf_.size() >= ServedConnection::kMaxHeadBytes) return false;  // the poller says 431
  if (wait_fd(c.fd_, POLLIN, stop_fd_, SteadyClock::now() + linger) != 1) return false;
  char tmp[ServedConnection::kMaxHeadBytes];
  ssize_t n = ::recv(c.fd_, tmp, ServedConnection::kMaxHeadBytes - c.buf_.size(), MSG_DONTWAIT);
  if (n <= 0) return false;  // EOF and errors stay for the poller to see
  c.buf_.append(tmp, static_cast<size_t>(n));
  return has_head(c);
}

void GatedServer::serve(std::unique_ptr<ServedConnection> c) {
  for (int in_a_row = 1;; ++in_a_row) {
    if (stopping_) return poller_->give_back(std::move(c), true);
    c->begin_request();
    const bool last = c->served_ + 1 >= limits_.keep_alive_max;
    bool client_closes = false;
    bool ok = false;
    {
      ConnStream strm(*c, stop_fd_, limits_.write_timeout_s);
      tl_current = c.get();
      ok = process_request(strm, last, client_closes, nullptr);
      tl_current = nullptr;
    }
    ++c->served_;
    const bool reuse = ok && !client_closes && !last && !stopping_ && c->reusable();
    if (!reuse) return poller_->give_back(std::move(c), true);
    // A keep-alive client usually sends its next request at once: serve it here rather than
    // through the poller (two thread hand-offs), for a bounded run of requests.
    if (in_a_row >= kMaxInARow || !next_head_within(*c, kLinger)) {
      return poller_->give_back(std::move(c), false);
    }
  }
}

}  // namespace fw::net
