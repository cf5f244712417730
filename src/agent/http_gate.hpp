#pragma once
// GatedServer: an httplib::Server (Debian's cpp-httplib 0.11.4) whose connections cost no
// worker thread while they are idle or while their request head arrives.
//
// httplib serves each accepted socket on one pool thread for as long as it stays open, idle
// keep-alive time included, so a few dozen idle or slow clients take every worker. Here the
// listener hands each accepted socket (through the private virtual process_and_close_socket,
// which listen_internal calls through the vtable) to one poller thread (epoll) that owns every
// connection between requests: it reads the request head without a worker (up to
// kMaxHeadBytes, else 431; within head_timeout_s of its first byte, else 408; an idle
// connection is closed after idle_timeout_s), applies the connection caps (503 and close
// beyond), and queues a connection with a complete head to a worker. The worker runs httplib's
// process_request on a Stream that serves the buffered head first and then reads the body from
// the socket only as far as the request's handlers allowed (allow_body), before the body
// deadline. After the answer the connection goes back to the poller, or is closed: a
// connection to close is shut down for writing, then drained (bounded) so that the client
// reads the answer rather than a reset.
//
// Ownership: a connection belongs to the poller or to one worker, never both; it moves
// between them through mutex-guarded queues. Sockets are accepted (handed over by the
// listener) and closed on the poller thread only, and the connection caps' counts are the
// poller's alone. A connection counts against the caps from its accept until it is closed or,
// whichever comes first, until its client is seen to have hung up: before refusing a
// connection over a cap, the poller probes the counted connections (its own and the workers',
// whose sockets it alone closes, so their descriptors stay valid) and counts off those whose
// client closed or shut down its sending side; so a client that closes one connection and
// opens the next is not refused for the one it closed, whichever thread holds it.
// Handlers reach the connection they serve through current_connection() (thread-local,
// valid while the request's handlers run on the worker thread).

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace fw::agent {

struct ConnectionLimits {
  double idle_timeout_s = 5;            // no request under way: closed after this, silently
  double head_timeout_s = 5;            // first byte of a head to its end: 408 and close after
  double body_timeout_s = 10;           // end of the head to the end of the body: reads fail after
  double write_timeout_s = 5;           // one write waiting for the client to read
  int max_connections = 256;            // open connections on this server; 503 and close beyond
  int max_connections_per_client = 64;  // per peer IP (TCP) or peer uid (Unix socket)
  int threads = 32;                     // worker threads
  int worker_nice = 10;                 // nice value of the workers (0: unchanged)
  size_t keep_alive_max = 1000;         // requests per connection
  size_t drain_max_bytes = 128 * 1024;  // read and dropped before closing after a refusal
};

// The connection a worker serves: what the handlers of one request may ask and decide.
class ServedConnection {
 public:
  static constexpr size_t kMaxHeadBytes = 16 * 1024;

  // "IP:PORT" of the peer (TCP), or "unix".
  const std::string& remote() const { return remote_; }
  bool is_unix() const { return unix_; }
  // Lets the body take up to max_bytes from the socket (framing included) before the body
  // deadline; a read beyond fails and body_over_budget() says so. Without this call the
  // request reads nothing past its head.
  void allow_body(size_t max_bytes);
  // The request's body was read whole (or it had none): the connection may serve another.
  void body_complete() { body_complete_ = true; }
  // Close the connection after this answer ("Connection: close" is added to it).
  void close_after() { close_after_ = true; }
  bool closing() const { return close_after_; }
  bool body_over_budget() const { return over_budget_; }
  bool body_timed_out() const { return timed_out_; }
  // The handlers' admission checks (framing, method, token, size) ran on this request; they
  // run once per request. A request they did not check (httplib refused its head) closes.
  void mark_gated() { gated_ = true; }
  bool gated() const { return gated_; }
  // Whether the connection can serve another request after this answer, as decided so far.
  bool reusable() const;
  // Decides reuse for this answer and says so in its headers ("Connection: close" when
  // not): call where the headers are final (the post-routing handler).
  void finish_headers(httplib::Response& res);

 private:
  friend class GatedServer;
  friend class ConnStream;
  using Clock = std::chrono::steady_clock;
  void begin_request();

  int fd_ = -1;
  bool unix_ = false;
  std::string remote_;  // for the audit log
  std::string ip_;      // for httplib (empty on the Unix socket)
  int port_ = 0;
  std::string local_ip_;
  int local_port_ = 0;
  std::string client_;  // the key of the per-client cap
  // Bytes received and not yet consumed: buf_[off_, size).
  std::string buf_;
  size_t off_ = 0;
  size_t scanned_ = 0;  // buf_ searched for the head's end up to here
  size_t served_ = 0;   // requests answered
  // Poller state.
  enum class Phase { kReading, kDraining } phase_ = Phase::kReading;
  Clock::time_point deadline_{};
  size_t drained_ = 0;
  // Per request (the worker's while it serves it).
  bool body_allowed_ = false;
  size_t body_budget_ = 0;
  Clock::time_point body_deadline_{};
  bool body_complete_ = false;
  bool close_after_ = false;
  bool over_budget_ = false;
  bool timed_out_ = false;
  bool gated_ = false;
  double body_timeout_s_ = 10;
};

// The connection the calling thread serves; nullptr outside a GatedServer's request.
ServedConnection* current_connection();

class GatedServer : public httplib::Server {
 public:
  explicit GatedServer(ConnectionLimits limits);
  ~GatedServer() override;
  GatedServer(const GatedServer&) = delete;
  GatedServer& operator=(const GatedServer&) = delete;

  // httplib's binds, hiding its own: they note that a listening socket exists, so that
  // shutdown() closes it even when start_serving() never ran (httplib closes it only from its
  // accept loop; a start that fails between two binds would leave it open otherwise).
  bool bind_to_port(const std::string& host, int port, int socket_flags = 0);
  int bind_to_any_port(const std::string& host, int socket_flags = 0);
  // After bind_to_port/bind_to_any_port: starts the poller and the workers, then listens on a
  // thread of its own; returns once the listener runs (false if it did not within 10 s).
  bool start_serving();
  // Stops listening, fails the workers' pending reads and writes, closes every connection and
  // joins every thread. Idempotent; the destructor calls it.
  void shutdown();
  // Called on the poller thread about once a second (set before start_serving()).
  void set_tick(std::function<void()> fn) { tick_ = std::move(fn); }
  // Open connections (idle, reading, served or draining), for tests and diagnostics.
  int open_connections() const { return open_.load(); }

 private:
  class Poller;
  class Workers;
  using Clock = std::chrono::steady_clock;
  // A keep-alive connection stays on its worker while requests follow within kLinger, for at
  // most kMaxInARow requests; then it goes back to the poller.
  static constexpr auto kLinger = std::chrono::milliseconds(1);
  static constexpr int kMaxInARow = 64;

  bool process_and_close_socket(socket_t sock) override;
  // Serves the connection's buffered request (and the ones that follow at once).
  void serve(std::unique_ptr<ServedConnection> c);
  // Whether the buffer holds a complete request head (up to its first blank line).
  static bool has_head(ServedConnection& c);
  // Drops the consumed bytes, then waits up to `linger` for the rest of a next head.
  bool next_head_within(ServedConnection& c, Clock::duration linger);

  ConnectionLimits limits_;
  std::function<void()> tick_;
  int stop_fd_ = -1;  // eventfd, readable once shutdown() began: pending polls return
  std::atomic<bool> stopping_{false};
  std::atomic<int> open_{0};
  std::unique_ptr<Poller> poller_;
  std::unique_ptr<Workers> workers_;
  std::thread listener_;
  bool bound_ = false;  // a listening socket exists (a bind succeeded)
  std::atomic<bool> shut_down_{false};
};

}  // namespace fw::agent
